//! Real pytest through the sandbox against the captured project: same outcomes as the
//! report captured from a bare run, coverage read back. Needs root and a virtual environment
//! with pytest and pytest-cov (`cargo xtask setup` makes it; see clover-testkit).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clover_protocol::{Outcome, TestOutcome};
use clover_pytest::PytestRun;
use clover_report::parse_junit;
use clover_sandbox::{Limits, Sandbox, WriteFile};

fn venv_python() -> Option<PathBuf> {
    clover_testkit::python()
}

fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../clover-report/tests/data/pytest/project")
}

/// The sandbox, or `None` (a skip, or a failure under `CLOVER_REQUIRE_TOOLS=1`) without it.
fn sandbox() -> Option<Sandbox> {
    match Sandbox::new() {
        Ok(sb) => Some(sb),
        Err(e) => clover_testkit::require(&format!("the sandbox ({e})"), None),
    }
}

fn run(py: &Path, files: Vec<WriteFile>, target: &str) -> Option<clover_pytest::PytestResult> {
    let sb = sandbox()?;
    let r = PytestRun {
        repo: project(),
        python: py.to_path_buf(),
        targets: vec![target.into()],
        files,
        cov_sources: vec!["src/calc".into()],
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
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
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../clover-report/tests/data/pytest/junit-xunit1.xml"),
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

/// Two source folders each holding a `util.py`: coverage.py's report named both `util.py`,
/// and the lines of `src/b/util.py` were put on `src/a/util.py`.
#[test]
fn same_named_modules_of_two_sources_keep_their_lines() {
    let Some(py) = venv_python() else { return };
    let Some(sb) = sandbox() else { return };
    let r = PytestRun {
        repo: Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/twins"),
        python: py,
        targets: vec!["tests/test_b.py".into()],
        files: vec![],
        cov_sources: vec!["src/a".into(), "src/b".into()],
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: vec![("PYTHONPATH".into(), "src".into())],
        limits: Limits {
            wall: Duration::from_secs(60),
            ..Limits::default()
        },
    }
    .run(&sb)
    .expect("the run is carried out");
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    assert_eq!(r.message, None);
    let covered: Vec<(&str, Vec<u32>)> = r
        .coverage
        .iter()
        .filter(|f| !f.lines.is_empty())
        .map(|f| (f.path.as_str(), f.lines.iter().collect()))
        .collect();
    // The empty `__init__.py`s have no lines; `src/a/util.py` is never imported.
    assert_eq!(covered, [("src/b/util.py", vec![1, 5, 6, 7])]);
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

/// A candidate test that passes, and whose `atexit` hook (it runs after pytest has written its
/// reports) then does `tamper` to the reports in `.clover-out/`.
fn tampering(tamper: &str) -> Vec<WriteFile> {
    let code = format!(
        "import atexit, os\n\nfrom calc import add\n\n\n\
         def _tamper():\n    out = os.path.join(os.getcwd(), '.clover-out')\n{tamper}\n\n\
         atexit.register(_tamper)\n\n\ndef test_it():\n    assert add(2, 2) == 4\n"
    );
    vec![WriteFile {
        path: "tests/test_tamper.py".into(),
        contents: code.into_bytes(),
    }]
}

#[test]
fn tampered_reports_are_never_believed() {
    let Some(py) = venv_python() else { return };
    // A JUnit report cut in half: not a pass, and the result says why.
    let cut = "    p = os.path.join(out, 'junit.xml')\n    data = open(p, 'rb').read()\n    \
               open(p, 'wb').write(data[: len(data) // 2])";
    let Some(r) = run(&py, tampering(cut), "tests/test_tamper.py") else {
        return;
    };
    assert_eq!(r.outcome, Outcome::Error, "{:?}", r.message);
    assert!(
        r.message
            .as_deref()
            .is_some_and(|m| m.contains("JUnit report is unreadable")),
        "{:?}",
        r.message
    );

    // No JUnit report at all (removed), nor a coverage report: never "0 tests, passed".
    let gone =
        "    for f in ('junit.xml', 'coverage.xml'):\n        os.remove(os.path.join(out, f))";
    let r = run(&py, tampering(gone), "tests/test_tamper.py").unwrap();
    assert_eq!(r.outcome, Outcome::Error, "{:?}", r.message);
    assert!(r.tests.is_empty() && r.coverage.is_empty());

    // The JUnit report stays; the coverage report is replaced by one naming files outside the
    // repository, a path through `..`, and a symlink planted beside the sources: the run is
    // not believed (the report is not the one pytest's session record hashed), and of the
    // report nothing is counted, and no host file is read.
    let forged = r#"    os.symlink('/etc/shadow', os.path.join(os.getcwd(), 'src', 'calc', 'link.py'))
    open(os.path.join(out, 'coverage.xml'), 'w').write('''<?xml version="1.0" ?>
<coverage version="7"><sources><source></source></sources><packages><package name="x"><classes>
<class name="a" filename="/etc/passwd"><lines><line number="1" hits="1"/></lines></class>
<class name="b" filename="../../../../etc/hostname"><lines><line number="1" hits="1"/></lines></class>
<class name="c" filename="src/calc/../../../outside.py"><lines><line number="2" hits="1"/></lines></class>
<class name="d" filename="src/calc/__init__.py"><lines><line number="3" hits="1"/></lines></class>
</classes></package></packages></coverage>''')"#;
    let r = run(&py, tampering(forged), "tests/test_tamper.py").unwrap();
    assert_eq!(r.outcome, Outcome::Forged, "{:?}", r.message);
    assert!(
        r.message
            .as_deref()
            .is_some_and(|m| m.contains("coverage.xml is not the one pytest left")),
        "{:?}",
        r.message
    );
    // Nothing of a forged run outlives its verdict: no test, no line (which files such a
    // report may name at all is clover-report's `tests/reports.rs`).
    assert!(
        r.tests.is_empty() && r.coverage.is_empty(),
        "{:?}",
        r.coverage
    );
    assert!(!project().join("src/calc/link.py").exists());
}

/// The interpreter check reports the versions an import loads: read from the installed
/// distributions, they are the modules' own `__version__`; where the repository holds a module
/// of the same name (`coverage/`, first on the path of `python -c` in the repository), that
/// module's.
#[test]
fn the_interpreter_check_reports_the_versions_an_import_loads() {
    let Some(py) = venv_python() else { return };
    let Some(sb) = sandbox() else { return };
    let imported = std::process::Command::new(&py)
        .args([
            "-c",
            "import sys, pytest, pytest_cov, coverage\n\
             print(sys.version.split()[0], pytest.__version__, pytest_cov.__version__, coverage.__version__)",
        ])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    let imported = String::from_utf8(imported.stdout).unwrap();
    let tools = clover_pytest::check_python(&sb, &py, &project()).unwrap();
    let found = format!(
        "{} {} {} {}",
        tools.python, tools.pytest, tools.pytest_cov, tools.coverage
    );
    assert_eq!(found, imported.trim());

    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join("coverage")).unwrap();
    std::fs::write(
        repo.path().join("coverage/__init__.py"),
        "__version__ = '0.1.shadow'\n",
    )
    .unwrap();
    let shadowed = clover_pytest::check_python(&sb, &py, repo.path()).unwrap();
    assert_eq!(shadowed.coverage, "0.1.shadow");
    assert_eq!(shadowed.pytest, tools.pytest);
}
