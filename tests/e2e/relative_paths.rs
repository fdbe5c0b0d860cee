//! Every path a stage is given on the command line means what it means in the shell: the
//! pipeline of the README's tour, run from a folder of its own with every path relative to it
//! (`../`), the interpreter's among them, which sandbox-run and calibrate hand into the
//! sandbox, whose view has no current folder of the caller's.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{records, run_ok, sandbox_python, tool};

/// `to` spelt from `from`: up to the root, then down (both absolute).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let up = "../".repeat(from.components().count() - 1);
    PathBuf::from(format!(
        "{up}{}",
        to.display().to_string().trim_start_matches('/')
    ))
}

#[test]
fn every_stage_takes_paths_relative_to_the_current_folder() {
    let Some(python) = sandbox_python() else {
        return;
    };
    let Some(tokenizer) = clover_testkit::tokenizer_model() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path().join("work/here");
    std::fs::create_dir_all(&here).unwrap();
    let here = here.canonicalize().unwrap();
    let fixture = relative(&here, &clover_testkit::fixture("python"));
    let python = relative(&here, &python);
    let tokenizer = relative(&here, &tokenizer);
    // Outputs beside `here`, through `..`.
    let out = |name: &str| PathBuf::from("../out").join(name);
    std::fs::create_dir_all(here.join("../out")).unwrap();
    let at = |mut cmd: Command| {
        cmd.current_dir(&here);
        cmd
    };
    let stage = |name: &str, args: &[&Path]| {
        let mut cmd = at(tool(name));
        cmd.args(args);
        run_ok(&mut cmd, 0)
    };
    let exists = |name: &str| {
        let path = here.join(out(name));
        assert!(
            !records(&path).is_empty(),
            "{} has no records",
            path.display()
        );
    };
    let flag = |s: &'static str| -> &'static Path { Path::new(s) };
    stage(
        "extract",
        &[flag("--repo"), &fixture, flag("-o"), &out("problems.jsonl")],
    );
    exists("problems.jsonl");
    // One shard of the problems: enough to show calibrate's interpreter is found.
    stage(
        "calibrate",
        &[
            &out("problems.jsonl"),
            flag("--repo"),
            &fixture,
            flag("--python"),
            &python,
            flag("--runs"),
            flag("1"),
            flag("--shard"),
            flag("0/6"),
            flag("-o"),
            &out("calibrated.jsonl"),
        ],
    );
    exists("calibrated.jsonl");
    stage(
        "pack-context",
        &[
            &out("calibrated.jsonl"),
            flag("--repo"),
            &fixture,
            flag("--tokenizer"),
            &tokenizer,
            flag("--settings"),
            flag("po"),
            flag("--seed"),
            flag("0"),
            flag("-o"),
            &out("instances.jsonl"),
        ],
    );
    exists("instances.jsonl");
    stage(
        "generate",
        &[
            &out("instances.jsonl"),
            flag("--model"),
            flag("oracle"),
            flag("-o"),
            &out("responses.jsonl"),
        ],
    );
    exists("responses.jsonl");
    stage(
        "sandbox-run",
        &[
            &out("responses.jsonl"),
            flag("--repo"),
            &fixture,
            flag("--python"),
            &python,
            flag("-o"),
            &out("results.jsonl"),
        ],
    );
    let results = records(&here.join(out("results.jsonl")));
    assert!(!results.is_empty());
    for r in &results {
        let r: serde_json::Value = serde_json::from_str(r).unwrap();
        assert_eq!(r["outcome"], "passed", "{r}");
    }
    stage(
        "score",
        &[
            &out("results.jsonl"),
            flag("--instances"),
            &out("instances.jsonl"),
            flag("-o"),
            &out("scores.md"),
        ],
    );
    assert!(here.join(out("scores.md")).is_file());
    stage(
        "export",
        &[&out("instances.jsonl"), flag("--out"), &out("hf")],
    );
    assert!(here.join(out("hf")).is_dir());
    // sandbox-run's direct mode: a test file and the interpreter, relative.
    std::fs::write(
        here.join("test_direct.py"),
        "def test_one():\n    assert 1 + 1 == 2\n",
    )
    .unwrap();
    stage(
        "sandbox-run",
        &[
            flag("--repo"),
            &fixture,
            flag("--python"),
            &python,
            flag("--test-file"),
            flag("test_direct.py"),
            flag("--at"),
            flag("tests/test_direct.py"),
        ],
    );
}
