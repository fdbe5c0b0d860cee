//! Real pytest through the sandbox against the captured project: same outcomes as the
//! report captured from a bare run, coverage read back. Needs root and a virtual environment
//! with pytest and pytest-cov (`cargo xtask setup` makes it; see clover-testkit).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clover_protocol::{Outcome, TestOutcome};
use clover_sandbox::pytest::PytestRun;
use clover_sandbox::report::parse_junit;
use clover_sandbox::{Limits, Sandbox, WriteFile};

fn venv_python() -> Option<PathBuf> {
    clover_testkit::python()
}

fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pytest/project")
}

fn run(
    py: &Path,
    files: Vec<WriteFile>,
    target: &str,
) -> Option<clover_sandbox::pytest::PytestResult> {
    let sb = match Sandbox::new() {
        Ok(sb) => sb,
        Err(e) => return clover_testkit::require(&format!("the sandbox ({e})"), None),
    };
    let r = PytestRun {
        repo: project(),
        python: py.to_path_buf(),
        targets: vec![target.into()],
        files,
        cov_sources: vec!["src/calc".into()],
        cov_contexts: false,
        env: vec![("PYTHONPATH".into(), "src".into())],
        limits: Limits {
            wall: Duration::from_secs(60),
            ..Limits::default()
        },
    };
    Some(r.run(&sb).expect("the run is carried out"))
}

#[test]
fn sandboxed_pytest_matches_the_bare_report() {
    let Some(py) = venv_python() else { return };
    let Some(r) = run(&py, vec![], "tests/test_calc.py") else {
        return;
    };
    eprintln!("{:?}\n{}", r.message, r.run.stdout.tail(3000));
    let bare = parse_junit(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pytest/junit-xunit1.xml"),
        )
        .unwrap(),
    )
    .unwrap();
    let names = |v: &[clover_protocol::TestCase]| {
        v.iter()
            .map(|t| (t.name.clone(), t.outcome))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&r.tests), names(&bare));
    assert_eq!(r.outcome, Outcome::Failed);
    assert_eq!(r.coverage.len(), 1);
    assert_eq!(r.coverage[0].path, "src/calc/__init__.py");
}

#[test]
fn candidate_file_is_written_and_judged() {
    let Some(py) = venv_python() else { return };
    let files = vec![WriteFile {
        path: "tests/test_candidate.py".into(),
        contents: b"from calc import add\n\ndef test_it():\n    assert add(2, 2) == 4\n".to_vec(),
    }];
    let Some(r) = run(&py, files, "tests/test_candidate.py") else {
        return;
    };
    assert_eq!(
        r.outcome,
        Outcome::Passed,
        "{:?} {}",
        r.message,
        r.run.stdout.text()
    );
    assert_eq!(r.tests.len(), 1);
    assert_eq!(r.tests[0].outcome, TestOutcome::Passed);
    // The candidate never reaches the repository.
    assert!(!project().join("tests/test_candidate.py").exists());
}

#[test]
fn crashing_interpreter_is_not_a_pass() {
    let Some(py) = venv_python() else { return };
    let files = vec![WriteFile {
        path: "tests/test_crash.py".into(),
        contents: b"import os\n\ndef test_it():\n    os.abort()\n".to_vec(),
    }];
    let Some(r) = run(&py, files, "tests/test_crash.py") else {
        return;
    };
    assert_eq!(r.outcome, Outcome::Killed, "{:?}", r.message);
    assert!(r.tests.is_empty());
}
