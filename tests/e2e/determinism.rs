//! Two complete runs of extract → calibrate → pack-context on the fixtures write the same
//! bytes (timing fields, of which these stages have none today, would be dropped by name).

use std::path::{Path, PathBuf};

use crate::support::*;

/// Asserts two outputs are byte-identical, or identical records once timing fields are
/// dropped when they hold any.
fn assert_identical(a: &Path, b: &Path) {
    let (x, y) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    let timed = |t: &[u8]| {
        TIMING_FIELDS.iter().any(|f| {
            t.windows(f.len() + 2)
                .any(|w| w == format!("\"{f}\"").as_bytes())
        })
    };
    if timed(&x) || timed(&y) {
        assert_same_records(a, b);
    } else {
        assert!(x == y, "{} and {} differ", a.display(), b.display());
    }
}

/// One run of the pipeline over `repo` into `dir`; returns the three outputs and calibrate's
/// exit code.
fn pipeline(
    dir: &Path,
    repo: &Path,
    python: &Path,
    tokenizer: &Path,
    problems_filter: bool,
) -> ([PathBuf; 3], i32) {
    std::fs::create_dir_all(dir).unwrap();
    let [problems, calibrated, instances] =
        ["problems", "calibrated", "instances"].map(|s| dir.join(format!("{s}.jsonl")));
    run_ok(
        tool("extract")
            .arg("--repo")
            .arg(repo)
            .arg("-o")
            .arg(&problems),
        0,
    );
    let input = if problems_filter {
        // The fixture's deliberately flaky test changes calibrate's verdict at random.
        let kept = without_test_file(&problems, "tests/test_flaky.py");
        let path = dir.join("problems-deterministic.jsonl");
        std::fs::write(&path, kept).unwrap();
        path
    } else {
        problems.clone()
    };
    let cal = run(tool("calibrate")
        .arg("--repo")
        .arg(repo)
        .arg("--python")
        .arg(python)
        .args(["--runs", "1"])
        .arg(&input)
        .arg("-o")
        .arg(&calibrated));
    assert!(cal.code == 0 || cal.code == 3, "{}", cal.stderr);
    run_ok(
        tool("pack-context")
            .arg("--repo")
            .arg(repo)
            .arg("--tokenizer")
            .arg(tokenizer)
            .arg(&calibrated)
            .arg("-o")
            .arg(&instances),
        0,
    );
    ([problems, calibrated, instances], cal.code)
}

#[test]
fn pipeline_runs_twice_to_the_same_bytes() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (name, filter) in [("python", true), ("cpp", false)] {
        let repo = clover_testkit::fixture(name);
        let (first, code1) = pipeline(
            &dir.path().join(format!("{name}-1")),
            &repo,
            &python,
            &tokenizer,
            filter,
        );
        let (second, code2) = pipeline(
            &dir.path().join(format!("{name}-2")),
            &repo,
            &python,
            &tokenizer,
            filter,
        );
        assert_eq!(code1, code2, "{name}: calibrate ends the same way");
        for (a, b) in first.iter().zip(&second) {
            assert_identical(a, b);
        }
        assert!(
            !records(&first[0]).is_empty(),
            "{name}: problems were extracted"
        );
        if name == "python" {
            assert_eq!(code1, 0);
            assert!(
                !records(&first[2]).is_empty(),
                "python: instances were built"
            );
        }
    }
}
