//! The scaling examples of `docs/examples/`, run here as a cluster would run them: the Slurm
//! array scripts with `SLURM_ARRAY_TASK_ID` set by hand and submitted to a real one-machine
//! Slurm (`docs/examples/slurm/local-cluster.sh`), the Kubernetes Indexed Jobs' scripts with
//! `JOB_COMPLETION_INDEX` set by hand, GNU parallel, and the dataset Makefile with `make -j`.
//! Each sharded run, joined, must be one whole run's output sorted by id, byte for byte.

use std::net::TcpListener;
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

/// The records of `whole` sorted as `join.sbatch` sorts shards (`LC_ALL=C sort`: by bytes),
/// written beside `joined`.
fn sorted_like_a_join(whole: &Path, joined: &Path) -> PathBuf {
    let text = std::fs::read_to_string(whole).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    let path = joined.with_extension("whole-sorted.jsonl");
    std::fs::write(
        &path,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    path
}

/// Asserts the joined shards of calibrate are the whole run sorted, byte for byte, and that
/// pack-context makes the same bytes from the join as from the whole run in its own order.
fn assert_join_equals_whole(joined: &Path, whole: &Path, tokenizer: &Path) {
    let sorted = sorted_like_a_join(whole, joined);
    assert_same_records(joined, &sorted);
    assert!(
        std::fs::read(joined).unwrap() == std::fs::read(&sorted).unwrap(),
        "{} is not byte-identical to {} sorted",
        joined.display(),
        whole.display()
    );
    // Both outputs go beside the join: the whole run is shared by tests running side by side.
    let pack = |input: &Path, name: &str| {
        let out = joined.with_extension(name);
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
        pack(joined, "instances.jsonl") == pack(whole, "whole-instances.jsonl"),
        "pack-context builds other instances from the join"
    );
}

/// Asserts the joined shards of sandbox-run are the whole run sorted, byte for byte once the
/// fields holding timings are dropped by name (`duration_secs`, and pytest's console output,
/// which ends with its own "passed in 0.05s").
fn assert_results_join_equals_whole(joined: &Path, whole: &Path) {
    assert_same_records(joined, &sorted_like_a_join(whole, joined));
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

/// A one-machine Slurm made by `local-cluster.sh start` in a temporary folder, stopped (its
/// jobs cancelled, its daemons ended) when dropped, also when the test fails.
struct LocalSlurm {
    dir: tempfile::TempDir,
}

impl LocalSlurm {
    fn script() -> PathBuf {
        examples().join("slurm/local-cluster.sh")
    }

    /// The running cluster; a skip where Slurm is not installed or cannot start, or a
    /// failure when tools are required (`cargo xtask setup` installs it).
    fn start() -> Option<LocalSlurm> {
        let check = run(Command::new("bash").arg(Self::script()).arg("check"));
        if check.code != 0 {
            eprintln!("{}", check.stderr.trim());
            return clover_testkit::require("Slurm (slurmctld, slurmd, sbatch) or munged", None);
        }
        let dir = tempfile::tempdir().unwrap();
        // Free ports, so that a Slurm already on this machine (on 6817 and 6818) is left alone.
        let listeners: Vec<TcpListener> = (0..2)
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let port = |i: usize| listeners[i].local_addr().unwrap().port().to_string();
        let (ctld, slurmd) = (port(0), port(1));
        drop(listeners);
        let cluster = LocalSlurm { dir };
        let started = run(Command::new("bash")
            .arg(Self::script())
            .arg("start")
            .arg(cluster.dir.path())
            .env("SLURMCTLD_PORT", ctld)
            .env("SLURMD_PORT", slurmd));
        if started.code != 0 {
            let why = format!(
                "a local Slurm does not start here: {}",
                started.stderr.trim()
            );
            assert!(!clover_testkit::tools_required(), "{why}");
            eprintln!("skipped: {why}");
            return None;
        }
        Some(cluster)
    }

    /// `sbatch` on this cluster, bounded: a job that never runs fails the test instead of
    /// hanging it.
    fn sbatch(&self, work: &Path, input: &Path, python: &Path) -> Command {
        let mut cmd = script("timeout", work, input, python);
        cmd.args(["600", "sbatch"])
            .env("SLURM_CONF", self.dir.path().join("slurm.conf"));
        cmd
    }
}

impl Drop for LocalSlurm {
    fn drop(&mut self) {
        let stopped = run(Command::new("bash")
            .arg(Self::script())
            .arg("stop")
            .arg(self.dir.path()));
        if stopped.code != 0 {
            eprintln!("local-cluster.sh stop: {}", stopped.stderr);
        }
    }
}

/// How the array tasks and the joins of the Slurm scripts run.
enum Launch {
    /// With `bash`, `SLURM_ARRAY_TASK_ID` and `SLURM_ARRAY_TASK_COUNT` set as Slurm sets them.
    ByHand,
    /// Submitted to a Slurm: the array with `sbatch --array`, the join with
    /// `--dependency=afterok` on it, as `docs/SCALING.md` shows.
    Slurm(LocalSlurm),
}

impl Launch {
    /// Runs the Slurm script `stage_script` as an array of N tasks over `input` (with `env`
    /// added), then `join.sbatch OUT`; returns the joined file.
    fn array_and_join(
        &self,
        work: &Path,
        input: &Path,
        python: &Path,
        stage_script: &str,
        out: &str,
        env: &[(&str, &str)],
    ) -> PathBuf {
        let slurm = examples().join("slurm");
        match self {
            Launch::ByHand => {
                for k in 0..N {
                    run_ok(
                        script("bash", work, input, python)
                            .arg(slurm.join(stage_script))
                            .env("SLURM_ARRAY_TASK_ID", k.to_string())
                            .env("SLURM_ARRAY_TASK_COUNT", N.to_string())
                            .envs(env.iter().copied()),
                        0,
                    );
                }
                run_ok(&mut self.join(work, input, python, out), 0);
            }
            Launch::Slurm(cluster) => {
                // The examples ask for 4 CPUs and 16 GB a task; flags on the command line
                // take precedence over the #SBATCH lines, so the tasks fit a small machine.
                let array = run_ok(
                    cluster
                        .sbatch(work, input, python)
                        .args(["--parsable", &format!("--array=0-{}", N - 1)])
                        .args(["--cpus-per-task=1", "--mem=1G", "--time=10"])
                        .arg(slurm.join(stage_script))
                        .envs(env.iter().copied()),
                    0,
                );
                let stdout = String::from_utf8_lossy(&array.stdout);
                let job = stdout.trim().split(';').next().unwrap().to_string();
                let joined = run(self
                    .join(work, input, python, out)
                    .args(["--wait", &format!("--dependency=afterok:{job}")])
                    .arg(slurm.join("join.sbatch"))
                    .arg(out));
                let joined_file = work.join(format!("{out}.jsonl"));
                assert!(
                    joined.code == 0 && joined_file.is_file(),
                    "array job {job} and its join did not give {} (sbatch --wait exit {}):\n{}\n{}",
                    joined_file.display(),
                    joined.code,
                    joined.stderr,
                    job_logs(work)
                );
            }
        }
        work.join(format!("{out}.jsonl"))
    }

    /// The join of `out`'s shards, by hand the whole command, on Slurm an `sbatch` to which the
    /// script and its argument are still to be added.
    fn join(&self, work: &Path, input: &Path, python: &Path, out: &str) -> Command {
        let mut cmd = match self {
            Launch::ByHand => {
                let mut cmd = script("bash", work, input, python);
                cmd.arg(examples().join("slurm/join.sbatch")).arg(out);
                cmd
            }
            Launch::Slurm(cluster) => cluster.sbatch(work, input, python),
        };
        cmd.env("SHARDS", N.to_string());
        cmd
    }
}

/// The Slurm jobs' logs in `work` (each script's `--output`), for a failure message.
fn job_logs(work: &Path) -> String {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(work)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs.iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            format!("--- {}\n{text}", p.display())
        })
        .collect()
}

/// calibrate.sbatch and sandbox-run.sbatch as arrays of N tasks, each joined by join.sbatch:
/// each join is one whole run of the stage, sorted.
fn slurm_scripts_shard_and_join(launch: &Launch, work: &Path, python: &Path, tokenizer: &Path) {
    let calibrated = launch.array_and_join(
        work,
        python_problems(),
        python,
        "calibrate.sbatch",
        "calibrated",
        &[("CALIBRATE_ARGS", "--runs 1")],
    );
    assert_join_equals_whole(&calibrated, python_calibrated(python), tokenizer);

    let (responses, results) = oracle_responses(python, tokenizer);
    let joined = launch.array_and_join(
        work,
        responses,
        python,
        "sandbox-run.sbatch",
        "results",
        &[],
    );
    assert_results_join_equals_whole(&joined, results);
}

#[test]
fn slurm_array_scripts_shard_and_join() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    slurm_scripts_shard_and_join(&Launch::ByHand, work.path(), &python, &tokenizer);

    // A shard that did not finish stops the join.
    let last = work
        .path()
        .join(format!("shards/results.{}-of-{N}.jsonl", N - 1));
    std::fs::rename(&last, clover_protocol::partial_path(&last)).unwrap();
    let ran = run_ok(
        &mut Launch::ByHand.join(work.path(), python_problems(), &python, "results"),
        1,
    );
    assert!(
        ran.stderr.contains("missing or unfinished"),
        "{}",
        ran.stderr
    );
}

/// The same scripts submitted to a real Slurm (slurmctld, slurmd and munged on this machine,
/// started by `local-cluster.sh` and stopped after): the array's join is byte-identical to one
/// run.
#[test]
fn slurm_array_jobs_on_a_local_cluster_shard_and_join() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let Some(cluster) = LocalSlurm::start() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    slurm_scripts_shard_and_join(&Launch::Slurm(cluster), work.path(), &python, &tokenizer);
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
            assert_results_join_equals_whole(&joined, whole);
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
