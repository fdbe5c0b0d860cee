//! clover-export's binary on real records, and the records of every stage read back by the
//! real Hugging Face `datasets` (from `target/clover-hf-venv`, made by `cargo xtask setup`),
//! offline: `HF_DATASETS_OFFLINE=1`, `HF_HOME` in a temporary folder.

use std::path::{Path, PathBuf};
use std::process::Command;

use clover_protocol::{
    CalibratedProblem, ExecSpec, Generation, Instance, LimitHit, Outcome, RecordKind, Response,
    RunResult, Task, TestCase, TestOutcome, TokenUsage, SCHEMA_VERSION,
};
use clover_testkit::{require, workspace_root};
use serde_json::json;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clover-export"))
}

/// The Python that has `datasets`: `CLOVER_HF_PYTHON`, else the environment setup makes.
fn hf_python() -> Option<PathBuf> {
    let python = std::env::var_os("CLOVER_HF_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/clover-hf-venv/bin/python"));
    let works = Command::new(&python)
        .args(["-c", "import datasets"])
        .output()
        .is_ok_and(|o| o.status.success());
    require(
        "Hugging Face `datasets` (target/clover-hf-venv, or CLOVER_HF_PYTHON)",
        works.then_some(python),
    )
}

/// Runs `script` with `args` under the datasets Python, offline, and returns its stdout.
fn python(hf: &Path, script: &str, args: &[&Path]) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(hf)
        .arg("-c")
        .arg(script)
        .args(args)
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", home.path())
        .env("HF_DATASETS_CACHE", home.path().join("cache"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "python failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn write_jsonl<T: serde::Serialize>(path: &Path, records: &[T]) {
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(path, text).unwrap();
}

fn response(id: &str, model: &str, generation: Generation, error: Option<&str>) -> Response {
    Response {
        kind: RecordKind::Response,
        schema_version: SCHEMA_VERSION,
        id: format!("{id}@{model}"),
        instance_id: id.into(),
        model: model.into(),
        task: Task::AssertionCloze,
        setting: "po".into(),
        repo: "pyfix".into(),
        text: if error.is_some() { "" } else { "x == 1" }.into(),
        error: error.map(str::to_string),
        generation,
        exec: ExecSpec {
            repo: "pyfix".into(),
            language: Some(clover_protocol::Language::Python),
            candidate_path: "tests/tmp_cand.py".into(),
            ..ExecSpec::default()
        },
        scoring: [
            ("reference".to_string(), json!("1")),
            ("other_operand".to_string(), json!(null)),
        ]
        .into(),
    }
}

/// A run result with nothing absent set; `tail` bytes of stdout make the file as large as a
/// test needs.
fn result(id: &str, model: &str, tail: usize) -> RunResult {
    RunResult {
        kind: RecordKind::RunResult,
        schema_version: SCHEMA_VERSION,
        id: format!("{id}@{model}"),
        instance_id: id.into(),
        model: model.into(),
        task: Some(Task::AssertionCloze),
        setting: "po".into(),
        repo: "pyfix".into(),
        outcome: Outcome::Passed,
        tests: vec![TestCase {
            name: "test_x".into(),
            classname: "tests.test_x".into(),
            outcome: TestOutcome::Passed,
            message: None,
            duration_secs: 0.01,
        }],
        coverage: vec![],
        limit_hit: None,
        exit_code: Some(0),
        signal: None,
        candidate: Some("def test_x():\n    assert x == 1\n".into()),
        answer: Some("x == 1".into()),
        message: None,
        stdout_tail: ".".repeat(tail),
        stderr_tail: String::new(),
        scoring: [("reference".to_string(), json!("1"))].into(),
        duration_secs: 0.1,
        mutation: Default::default(),
    }
}

/// A run that a signal ended: every field a passing run leaves absent is set.
fn killed(mut r: RunResult) -> RunResult {
    r.outcome = Outcome::Oom;
    r.tests[0].outcome = TestOutcome::Error;
    r.tests[0].message = Some("MemoryError".into());
    r.limit_hit = Some(LimitHit::Memory);
    r.exit_code = None;
    r.signal = Some(9);
    r.message = Some("the run passed its memory limit of 512 MiB".into());
    r
}

const LOAD_TOGETHER: &str = r#"
import json, sys
import datasets
datasets.disable_progress_bars()

def weak(f, in_list=False):
    # A value typed null, or datasets' opaque Json, is what broke loading files together. The
    # items of a list empty in every record are typed null too: JSON cannot say their type.
    if type(f).__name__ == "Json":
        return True
    if isinstance(f, datasets.Value):
        return f.dtype == "null" and not in_list
    if isinstance(f, datasets.List):
        return weak(f.feature, True)
    return isinstance(f, dict) and any(weak(v, in_list) for v in f.values())

out = {}
for group in sys.argv[1:]:
    files = group.split(",")
    ds = datasets.load_dataset("json", data_files=files, split="train")
    weak_columns = sorted(k for k, v in ds.features.items() if weak(v))
    out[group] = {"rows": len(ds), "weak": weak_columns}
    if group == sys.argv[1]:
        path = files[0] + ".parquet"
        ds.to_parquet(path)
        back = datasets.load_dataset("parquet", data_files=path, split="train")
        assert back.features == ds.features, (back.features, ds.features)
        assert back.to_list() == ds.to_list()
        out["parquet_rows"] = len(back)
print(json.dumps(out))
"#;

/// Several models' responses, several models' results, a joined results file whose first
/// set `signal`, `limit_hit` and `message` come after the loader's first 10 MiB, Python and
/// C++ problems, calibrated problems and instances (calibrate's real output on the fixtures),
/// and Task I results (no coverage) with Task II ones: each group loads as one dataset, in
/// either order, with no column typed null and `scoring` a string. Before schema version 2 the
/// response and result groups failed (`Couldn't cast array of type string to null`); before
/// version 3 the problem, calibrated and instance groups and the Task I results did (a
/// Python problem's absent C++ part, a C++ instance's empty `selectors`).
#[test]
fn plain_records_of_several_files_load_together() {
    let Some(hf) = hf_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);

    let oracle = Generation {
        adapter: "oracle".into(),
        ..Generation::default()
    };
    let openai = Generation {
        adapter: "openai".into(),
        model_name: Some("org/coder".into()),
        base_url: Some("http://127.0.0.1:8000/v1".into()),
        temperature: Some(0.2),
        top_p: Some(1.0),
        max_tokens: Some(200),
        seed: Some(0),
        frequency_penalty: Some(0.3),
        finish_reason: Some("stop".into()),
        usage: Some(TokenUsage {
            prompt_tokens: 120,
            completion_tokens: 7,
        }),
        attempts: 1,
        http_status: Some(200),
        ..Generation::default()
    };
    let failed = Generation {
        http_status: Some(500),
        attempts: 3,
        finish_reason: None,
        usage: None,
        ..openai.clone()
    };
    write_jsonl(
        &p("responses.oracle.jsonl"),
        &[
            response("a", "oracle", oracle.clone(), None),
            response("b", "oracle", oracle, None),
        ],
    );
    write_jsonl(
        &p("responses.coder.jsonl"),
        &[
            response("a", "org/coder", openai, None),
            response("b", "org/coder", failed, Some("HTTP 500: internal error")),
        ],
    );
    write_jsonl(
        &p("results.oracle.jsonl"),
        &[result("a", "oracle", 10), result("b", "oracle", 10)],
    );
    write_jsonl(
        &p("results.coder.jsonl"),
        &[killed(result("a", "org/coder", 10))],
    );
    // 176 records of 64 KiB: 11 MiB, the last the only one with a signal.
    let mut joined: Vec<RunResult> = (0..175)
        .map(|i| result(&format!("i{i}"), "oracle", 64 << 10))
        .collect();
    joined.push(killed(result("last", "org/coder", 64 << 10)));
    write_jsonl(&p("results.joined.jsonl"), &joined);
    assert!(std::fs::metadata(p("results.joined.jsonl")).unwrap().len() > 10 << 20);

    // Task I is run without coverage; a Task II run measures its target's file.
    let mut targeted = result("t", "oracle", 10);
    targeted.task = Some(Task::TargetedTest);
    targeted.coverage = vec![clover_protocol::FileCoverage {
        path: "ledger/money.py".into(),
        lines: clover_protocol::LineRanges::from_lines([3, 4, 7]),
    }];
    let mut nothing_ran = result("n", "oracle", 10);
    nothing_ran.outcome = Outcome::NoCode;
    nothing_ran.tests.clear();
    write_jsonl(&p("results.task1.jsonl"), &[nothing_ran]);
    write_jsonl(&p("results.task2.jsonl"), &[targeted]);

    let calibrated = |name: &str| -> Vec<CalibratedProblem> {
        let text = std::fs::read_to_string(pack_data(name)).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    for lang in ["python", "cpp"] {
        let c = calibrated(&format!("calibrated_{lang}.jsonl"));
        let problems: Vec<_> = c.iter().map(|c| c.problem.clone()).collect();
        write_jsonl(&p(&format!("problems.{lang}.jsonl")), &problems);
        write_jsonl(&p(&format!("calibrated.{lang}.jsonl")), &c);
    }
    let instance = |id: &str, selectors: &[&str], context: &[&str]| Instance {
        kind: RecordKind::Instance,
        schema_version: SCHEMA_VERSION,
        id: id.into(),
        problem_id: id.into(),
        repo: "r".into(),
        task: Task::TargetedTest,
        setting: "8k".into(),
        answer_format: "part".into(),
        prompt: "write a test".into(),
        messages: vec![clover_protocol::Message {
            role: "user".into(),
            content: "write a test".into(),
        }],
        prompt_tokens: 3,
        context_files: context.iter().map(|s| s.to_string()).collect(),
        reference: String::new(),
        exec: ExecSpec {
            selectors: selectors.iter().map(|s| s.to_string()).collect(),
            ..ExecSpec::default()
        },
        scoring: Default::default(),
    };
    write_jsonl(
        &p("instances.python.jsonl"),
        &[instance("a", &["tests/test_a.py::test_a"], &["a.py"])],
    );
    write_jsonl(&p("instances.cpp.jsonl"), &[instance("b", &[], &[])]);

    let groups: Vec<String> = [
        "results.joined.jsonl",
        "responses.oracle.jsonl,responses.coder.jsonl",
        "responses.coder.jsonl,responses.oracle.jsonl",
        "results.oracle.jsonl,results.coder.jsonl",
        "results.coder.jsonl,results.oracle.jsonl",
        "problems.python.jsonl,problems.cpp.jsonl",
        "problems.cpp.jsonl,problems.python.jsonl",
        "calibrated.python.jsonl,calibrated.cpp.jsonl",
        "calibrated.cpp.jsonl,calibrated.python.jsonl",
        "instances.cpp.jsonl,instances.python.jsonl",
        "results.task1.jsonl,results.task2.jsonl",
    ]
    .iter()
    .map(|g| {
        g.split(',')
            .map(|f| p(f).display().to_string())
            .collect::<Vec<_>>()
            .join(",")
    })
    .collect();
    let args: Vec<&Path> = groups.iter().map(Path::new).collect();
    let out: serde_json::Value = serde_json::from_str(&python(&hf, LOAD_TOGETHER, &args)).unwrap();
    let n = |name: &str| calibrated(name).len();
    let both = n("calibrated_python.jsonl") + n("calibrated_cpp.jsonl");
    let rows = [176, 4, 4, 3, 3, both, both, both, both, 2, 2];
    for (group, n) in groups.iter().zip(rows) {
        assert_eq!(out[group]["rows"], n, "{group}: {out}");
        assert_eq!(out[group]["weak"], json!([]), "{group}: {out}");
    }
    assert_eq!(out["parquet_rows"], 176);
}

const LOAD_PLAIN: &str = r#"
import sys
import datasets
datasets.disable_progress_bars()
try:
    datasets.load_dataset("json", data_files=sys.argv[1:], split="train")
    print("loaded")
except Exception as e:
    print(repr(e.__cause__ or e))
"#;

/// A list that is empty in every record of the first file (here `stop`, set only by the
/// second model's run) is a string column, the JSON text of the list: plain files load
/// together (before schema version 3 the second file's list did not cast to the first's
/// `null` items), and so does the export, whose card declares it.
#[test]
fn a_list_empty_in_the_whole_first_file_loads_plain_and_exported() {
    let Some(hf) = hf_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("responses.oracle.jsonl");
    let second = dir.path().join("responses.coder.jsonl");
    let oracle = Generation {
        adapter: "oracle".into(),
        ..Generation::default()
    };
    let stops = Generation {
        adapter: "openai".into(),
        stop: Some(vec!["\n\n".into()]),
        ..Generation::default()
    };
    write_jsonl(&first, &[response("a", "oracle", oracle, None)]);
    write_jsonl(&second, &[response("a", "org/coder", stops, None)]);
    let plain = python(&hf, LOAD_PLAIN, &[&first, &second]);
    assert_eq!(plain.trim(), "loaded");

    let out = dir.path().join("responses");
    let o = run_export(&[
        first.as_os_str(),
        second.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        card.contains("- name: \"stop\"\n        dtype: string\n"),
        "{card}"
    );
    let loaded: serde_json::Value =
        serde_json::from_str(&python(&hf, LOAD_FOLDER, &[&out])).unwrap();
    assert_eq!(
        loaded,
        json!({"default": {"test": 2}, "assertion_cloze/test": 2})
    );
}

fn run_export(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(bin()).args(args).output().unwrap()
}

fn pack_data(name: &str) -> PathBuf {
    workspace_root()
        .join("crates/clover-pack-context/tests/data")
        .join(name)
}

/// A copy of the Python fixture with the license and metadata an sdist carries.
fn released_fixture(dir: &Path) -> PathBuf {
    let repo = clover_testkit::copy_fixture("python", &dir.join("ledger-0.3.1"));
    std::fs::write(
        repo.join("PKG-INFO"),
        "Metadata-Version: 2.1\nName: ledger\nVersion: 0.3.1\n\
         Project-URL: Source, https://example.org/ledger\n\
         Classifier: License :: OSI Approved :: MIT License\n\n",
    )
    .unwrap();
    repo
}

const LOAD_FOLDER: &str = r#"
import json, sys
import datasets, yaml
datasets.disable_progress_bars()
folder = sys.argv[1]
card = open(folder + "/README.md").read().split("---\n")[1]
declared = {c["config_name"]: datasets.Features._from_yaml_list(c["features"])
            for c in yaml.safe_load(card)["dataset_info"]}
out = {"default": {s: len(d) for s, d in datasets.load_dataset(folder).items()}}
for name in datasets.get_dataset_config_names(folder):
    loaded = datasets.load_dataset(folder, name)
    for split, ds in loaded.items():
        assert ds.features == declared[name], (name, ds.features, declared[name])
        path = f"{folder}.{name}.{split}.parquet"
        ds.to_parquet(path)
        back = datasets.load_dataset("parquet", data_files=path, split="train")
        assert back.features == ds.features and back.to_list() == ds.to_list(), name
        out[f"{name}/{split}"] = len(ds)
print(json.dumps(out))
"#;

/// Python and C++ calibrated problems (calibrate's real output on the fixtures, whose
/// language parts exist in one language only) export to one folder per language config that
/// `load_dataset(folder)` reads with exactly the card's features, and that round-trips to
/// Parquet; the card names each repository's license and origin.
#[test]
fn the_export_folder_loads_with_its_declared_features() {
    let Some(hf) = hf_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let repo = released_fixture(dir.path());
    let out = dir.path().join("pyfix-cppfix");
    let py = pack_data("calibrated_python.jsonl");
    let cpp = pack_data("calibrated_cpp.jsonl");
    let o = run_export(&[
        cpp.as_os_str(),
        py.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--repo".as_ref(),
        repo.as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("44 calibrated_problem record(s) from 2 repositories"),
        "{stderr}"
    );
    let n = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count();
    assert_eq!(n(&out.join("python/test.jsonl")), n(&py));
    assert_eq!(n(&out.join("cpp/test.jsonl")), n(&cpp));

    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(card.contains("license:\n- mit\n- unknown\n"), "{card}");
    assert!(
        card.contains("| pyfix | 40 | MIT (`PKG-INFO`) | ledger 0.3.1 (Python sdist; https://example.org/ledger) |"),
        "{card}"
    );
    assert!(
        card.contains(
            "| cppfix | 4 | unknown (the export was not given the repository) | unknown |"
        ),
        "{card}"
    );

    let loaded: serde_json::Value =
        serde_json::from_str(&python(&hf, LOAD_FOLDER, &[&out])).unwrap();
    assert_eq!(
        loaded,
        json!({"default": {"test": 4}, "cpp/test": 4, "python/test": 40})
    );
}

/// Fine-tuning examples keep their own splits, one file each.
#[test]
fn sft_examples_export_one_file_per_split() {
    let Some(hf) = hf_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("sft.jsonl");
    let examples: Vec<_> = ["train", "train", "eval", "test"]
        .iter()
        .enumerate()
        .map(|(i, split)| clover_protocol::SftExample {
            kind: RecordKind::SftExample,
            schema_version: SCHEMA_VERSION,
            id: format!("e{i}"),
            repo: format!("repo{i}"),
            split: split.to_string(),
            task: Task::TargetedTest,
            setting: "po".into(),
            messages: vec![clover_protocol::Message {
                role: "user".into(),
                content: "write a test".into(),
            }],
        })
        .collect();
    write_jsonl(&input, &examples);
    let out = dir.path().join("sft");
    let o = run_export(&[input.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for split in ["train", "eval", "test"] {
        assert!(out.join(format!("targeted_test/{split}.jsonl")).is_file());
    }
    let loaded: serde_json::Value =
        serde_json::from_str(&python(&hf, LOAD_FOLDER, &[&out])).unwrap();
    assert_eq!(
        loaded,
        json!({"default": {"train": 2, "eval": 1, "test": 1},
               "targeted_test/train": 2, "targeted_test/eval": 1, "targeted_test/test": 1})
    );
}

/// An older record comes out in the current schema; a second kind, a folder that holds files
/// and an input of no record are refused, naming the file and line.
#[test]
fn records_are_rewritten_in_the_current_schema_and_bad_inputs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut v1 = serde_json::to_value(result("a", "m", 1)).unwrap();
    v1["schema_version"] = json!(1);
    v1["signal"] = json!(null);
    v1["scoring"] = json!({"reference": "1"});
    let old = dir.path().join("old.jsonl");
    std::fs::write(&old, format!("{v1}\n")).unwrap();
    let out = dir.path().join("out");
    let o = run_export(&[old.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let written: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(out.join("assertion_cloze/test.jsonl"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert_eq!(written["schema_version"], SCHEMA_VERSION);
    assert_eq!(written["signal"], -1);
    assert_eq!(written["scoring"], r#"{"reference":"1"}"#);

    // The folder now holds the export: a second one into it is refused.
    let o = run_export(&[old.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exists and is not empty"));

    let calibrated: CalibratedProblem = serde_json::from_str(
        std::fs::read_to_string(pack_data("calibrated_cpp.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let mixed = dir.path().join("mixed.jsonl");
    std::fs::write(
        &mixed,
        format!(
            "{}\n\n{}\n",
            serde_json::to_string(&calibrated).unwrap(),
            serde_json::to_string(&result("a", "m", 1)).unwrap()
        ),
    )
    .unwrap();
    let o = run_export(&[
        mixed.as_os_str(),
        "-o".as_ref(),
        dir.path().join("mixed").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:3: record `a@m` is a `run_result`, but the export holds `calibrated_problem` records",
            mixed.display()
        )),
        "{stderr}"
    );
    assert!(!dir.path().join("mixed/README.md").exists());

    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "\n").unwrap();
    let o = run_export(&[
        empty.as_os_str(),
        "-o".as_ref(),
        dir.path().join("e").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}
