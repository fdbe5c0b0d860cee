//! The scaling examples of `docs/examples/`, run here as a cluster would run them: the Slurm
//! array scripts with `SLURM_ARRAY_TASK_ID` set by hand, the Kubernetes Indexed Jobs' scripts
//! with `JOB_COMPLETION_INDEX` set by hand, GNU parallel, and the dataset Makefile with
//! `make -j`. Each sharded run, joined, must equal one whole run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::*;

const N: usize = 3;

fn examples() -> PathBuf {
    clover_testkit::workspace_root().join("docs/examples")
}

/// A command with the settings every example script reads.
fn script(program: &str, work: &Path, input: &Path, python: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(work)
        .env("CLOVER", bin_dir().join("clover"))
        .env(
            "MANIFEST",
            clover_testkit::fixture("python").join("clover.toml"),
        )
        .env("INPUT", input)
        .env("OUT_DIR", work.join("shards"))
        .env("CLOVER_PYTHON", python);
    cmd
}

/// Asserts the joined file equals the whole run as a set of records, and that pack-context
/// makes the same bytes from either (the join's order is not the single run's).
fn assert_join_equals_whole(joined: &Path, whole: &Path, tokenizer: &Path) {
    let mut a = records(joined);
    let mut b = records(whole);
    assert_unique_ids(&a, "the join");
    a.sort();
    b.sort();
    assert!(
        a == b,
        "{} differs from {}",
        joined.display(),
        whole.display()
    );
    let pack = |input: &Path| {
        let out = input.with_extension("instances.jsonl");
        run_ok(
            tool("pack-context")
                .arg("--repo")
                .arg(clover_testkit::fixture("python"))
                .arg("--tokenizer")
                .arg(tokenizer)
                .args(["--settings", "po"])
                .arg(input)
                .arg("-o")
                .arg(&out),
            0,
        );
        std::fs::read(out).unwrap()
    };
    assert!(
        pack(joined) == pack(whole),
        "pack-context builds other instances from the join"
    );
}

/// Oracle responses of a few Task I instances of the fixture, and one sandbox-run of them.
fn oracle_responses(python: &Path, tokenizer: &Path) -> &'static (PathBuf, PathBuf) {
    static PATHS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    PATHS.get_or_init(|| {
        let dir = shared_dir();
        let instances = dir.join("sandbox-instances.jsonl");
        run_ok(
            tool("pack-context")
                .arg("--repo")
                .arg(clover_testkit::fixture("python"))
                .arg("--tokenizer")
                .arg(tokenizer)
                .args(["--tasks", "assertion_cloze", "--settings", "po"])
                .args(["--cloze-per-repo", "8"])
                .arg(python_calibrated(python))
                .arg("-o")
                .arg(&instances),
            0,
        );
        let responses = dir.join("responses.jsonl");
        run_ok(
            tool("generate")
                .args(["--model", "oracle"])
                .arg(&instances)
                .arg("-o")
                .arg(&responses),
            0,
        );
        let results = dir.join("results.jsonl");
        run_ok(
            tool("sandbox-run")
                .arg("--repo")
                .arg(clover_testkit::fixture("python"))
                .arg("--python")
                .arg(python)
                .arg(&responses)
                .arg("-o")
                .arg(&results),
            0,
        );
        (responses, results)
    })
}

/// Ids and outcomes of run results: what must not depend on how the run was split (output
/// tails hold pytest's own timings).
fn outcomes(path: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = records(path)
        .iter()
        .map(|r| {
            let v: serde_json::Value = serde_json::from_str(r).unwrap();
            (id_of(r), v["outcome"].to_string())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn slurm_array_scripts_shard_and_join() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let slurm = examples().join("slurm");
    let input = python_problems();
    for k in 0..N {
        run_ok(
            script("bash", work.path(), input, &python)
                .arg(slurm.join("calibrate.sbatch"))
                .env("SLURM_ARRAY_TASK_ID", k.to_string())
                .env("SLURM_ARRAY_TASK_COUNT", N.to_string())
                .env("CALIBRATE_ARGS", "--runs 1"),
            0,
        );
    }
    let join = |stage: &str| {
        let mut cmd = script("bash", work.path(), input, &python);
        cmd.arg(slurm.join("join.sbatch"))
            .arg(stage)
            .env("SHARDS", N.to_string());
        cmd
    };
    run_ok(&mut join("calibrated"), 0);
    assert_join_equals_whole(
        &work.path().join("calibrated.jsonl"),
        python_calibrated(&python),
        &tokenizer,
    );

    let (responses, results) = oracle_responses(&python, &tokenizer);
    for k in 0..N {
        run_ok(
            script("bash", work.path(), responses, &python)
                .arg(slurm.join("sandbox-run.sbatch"))
                .env("SLURM_ARRAY_TASK_ID", k.to_string())
                .env("SLURM_ARRAY_TASK_COUNT", N.to_string()),
            0,
        );
    }
    run_ok(&mut join("results"), 0);
    assert_eq!(
        outcomes(&work.path().join("results.jsonl")),
        outcomes(results)
    );

    // A shard that did not finish stops the join.
    let last = work
        .path()
        .join(format!("shards/results.{}-of-{N}.jsonl", N - 1));
    std::fs::rename(&last, clover_protocol::partial_path(&last)).unwrap();
    let ran = run_ok(&mut join("results"), 1);
    assert!(
        ran.stderr.contains("missing or unfinished"),
        "{}",
        ran.stderr
    );
}

/// The `sh -c` script of a Job manifest (the literal block under `args: - |`) and its `env`
/// values; enough YAML reading for the files this project writes.
fn job(path: &Path) -> (String, Vec<(String, String)>) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == "- |")
        .expect("a literal block script");
    let indent = |l: &str| l.len() - l.trim_start().len();
    let body_indent = indent(lines[start + 1]);
    let script: String = lines[start + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || indent(l) >= body_indent)
        .map(|l| format!("{}\n", l.get(body_indent..).unwrap_or("")))
        .collect();
    let mut env = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(name) = l.trim().strip_prefix("- name: ") {
            if let Some(value) = lines
                .get(i + 1)
                .and_then(|v| v.trim().strip_prefix("value: "))
            {
                env.push((name.to_string(), value.trim_matches('"').to_string()));
            }
        }
    }
    (script, env)
}

#[test]
fn kubernetes_indexed_jobs_shard_and_join() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let k8s = examples().join("kubernetes");
    let work = tempfile::tempdir().unwrap();
    let (responses, results) = oracle_responses(&python, &tokenizer);
    for (file, input, out, whole) in [
        (
            "calibrate-job.yaml",
            python_problems(),
            "calibrated",
            python_calibrated(&python),
        ),
        (
            "sandbox-run-job.yaml",
            responses.as_path(),
            "results",
            results.as_path(),
        ),
    ] {
        let path = k8s.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("completionMode: Indexed"), "{file}");
        let (body, env) = job(&path);
        let completions = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("completions: "))
            .expect("completions");
        let shards = env.iter().find(|(k, _)| k == "SHARDS").expect("SHARDS");
        assert_eq!(shards.1, completions, "{file}: SHARDS equals completions");
        for k in 0..N {
            let mut cmd = script("sh", work.path(), input, &python);
            cmd.arg("-c")
                .arg(&body)
                .env("JOB_COMPLETION_INDEX", k.to_string());
            for (name, value) in &env {
                if !["CLOVER", "MANIFEST", "INPUT", "OUT_DIR"].contains(&name.as_str()) {
                    cmd.env(name, value);
                }
            }
            cmd.env("SHARDS", N.to_string());
            if out == "calibrated" {
                cmd.env("CALIBRATE_ARGS", "--runs 1");
            }
            run_ok(&mut cmd, 0);
        }
        let (join_body, _) = job(&k8s.join("join-job.yaml"));
        let joined = work.path().join(format!("{out}.jsonl"));
        run_ok(
            script("sh", work.path(), input, &python)
                .arg("-c")
                .arg(&join_body)
                .env("STAGE", out)
                .env("SHARDS", N.to_string())
                .env("JOINED", &joined),
            0,
        );
        if out == "calibrated" {
            assert_join_equals_whole(&joined, whole, &tokenizer);
        } else {
            assert_eq!(outcomes(&joined), outcomes(whole));
        }
    }
}

#[test]
fn gnu_parallel_script_shards_and_joins() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let parallel = Path::new("/usr/bin/parallel");
    if clover_testkit::require("GNU parallel", parallel.is_file().then_some(())).is_none() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    run_ok(
        script("bash", work.path(), python_problems(), &python)
            .arg(examples().join("parallel.sh"))
            .arg("calibrate")
            .env("SHARDS", N.to_string())
            .env("STAGE_ARGS", "--runs 1"),
        0,
    );
    assert_join_equals_whole(
        &work.path().join("calibrated.jsonl"),
        python_calibrated(&python),
        &tokenizer,
    );
}

#[test]
fn makefile_builds_each_stage_and_repository_when_its_inputs_change() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    for name in ["python", "cpp"] {
        copy_dir(
            &clover_testkit::fixture(name),
            &work.path().join("repos").join(name),
        );
    }
    let make = |extra: &[&str]| {
        let mut cmd = Command::new("make");
        cmd.current_dir(work.path())
            .arg("-f")
            .arg(examples().join("Makefile"))
            .arg(format!("CLOVER={}", bin_dir().join("clover").display()))
            .arg(format!(
                "CALIBRATE_FLAGS=--runs 1 --python {}",
                python.display()
            ))
            .arg(format!(
                "PACK_FLAGS=--tokenizer {} --settings po",
                tokenizer.display()
            ))
            .args(extra);
        cmd
    };
    run_ok(&mut make(&["-j2"]), 0);
    let out = work.path().join("build");
    for repo in ["python", "cpp"] {
        for stage in ["problems", "calibrated", "instances"] {
            assert!(out.join(repo).join(format!("{stage}.jsonl")).is_file());
        }
    }
    assert!(!records(&out.join("python/instances.jsonl")).is_empty());
    assert_eq!(
        records(&out.join("instances.jsonl")).len(),
        records(&out.join("python/instances.jsonl")).len()
            + records(&out.join("cpp/instances.jsonl")).len()
    );
    // Up to date: nothing to do.
    run_ok(&mut make(&["-q"]), 0);
    // A changed source file rebuilds its repository's targets, and only those.
    let money = work.path().join("repos/python/src/ledger/money.py");
    let text = std::fs::read_to_string(&money).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(&money, text).unwrap();
    let plan = run_ok(&mut make(&["-n"]), 0);
    let plan = String::from_utf8_lossy(&plan.stdout);
    for stage in ["extract", "calibrate", "pack-context"] {
        assert!(
            plan.contains(&format!("{stage} --repo repos/python")),
            "{stage} of python is redone:\n{plan}"
        );
    }
    assert!(!plan.contains("repos/cpp"), "cpp is not redone:\n{plan}");
    run_ok(&mut make(&["-j2"]), 0);
    run_ok(&mut make(&["-q"]), 0);
}
