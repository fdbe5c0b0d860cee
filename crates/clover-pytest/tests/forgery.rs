//! Hostile pytest files: verdicts and coverage forged from inside a test, run cold and in a
//! warm worker, and what the static screen says of each. Each test asserts the verdict, then
//! that the run was contained: no process of the run is left, and the repository is
//! unchanged.

use std::sync::OnceLock;

use clover_protocol::Outcome;
use clover_pytest::{PytestResult, PytestRun};
use clover_sandbox::{ExitStatus, Limits, Sandbox, WriteFile};
use clover_testkit::contained::Case;

fn sandbox() -> Option<&'static Sandbox> {
    static SB: OnceLock<Result<Sandbox, String>> = OnceLock::new();
    match SB.get_or_init(|| Sandbox::new().map_err(|e| e.to_string())) {
        Ok(sb) => Some(sb),
        Err(e) => clover_testkit::require(&format!("the sandbox ({e})"), None),
    }
}

/// A candidate test file run by real pytest in the case's repository, without coverage.
/// `test` as `test_attack.py` of the case's repository, measuring `cov_sources`.
fn attack(c: &Case, python: std::path::PathBuf, test: &str, cov_sources: &[&str]) -> PytestRun {
    PytestRun {
        repo: c.repo.path().to_path_buf(),
        python,
        targets: vec!["test_attack.py".into()],
        files: vec![WriteFile {
            path: "test_attack.py".into(),
            contents: test.as_bytes().to_vec(),
        }],
        cov_sources: cov_sources.iter().map(|s| s.to_string()).collect(),
        cov_only: None,
        cov_contexts: false,
        env: vec![],
        limits: Limits::default(),
    }
}

fn run_pytest(c: &Case, sb: &Sandbox, test: &str) -> Option<PytestResult> {
    let run = attack(c, clover_testkit::python()?, test, &[]);
    let r = run.run(sb).expect("the run is carried out");
    c.assert_contained(r.run.host_uid);
    Some(r)
}

/// A file that only skips, or only expects its failures, checks nothing: it is not a pass.
#[test]
fn a_file_of_skipped_and_xfailed_tests_is_not_a_pass() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let test = "import pytest\n\n\
                @pytest.mark.skip(reason='later')\ndef test_skipped():\n    assert False\n\n\
                @pytest.mark.xfail\ndef test_xfailed():\n    assert False\n\n\
                def test_skips_itself():\n    pytest.skip('not today')\n";
    let Some(r) = run_pytest(&c, sb, test) else {
        return;
    };
    assert_eq!(
        r.run.exit,
        ExitStatus::Code(0),
        "{}",
        r.run.stdout.tail(2000)
    );
    assert_eq!(r.tests.len(), 3, "{:?}", r.tests);
    assert_eq!(r.outcome, Outcome::NoTestsRun, "{:?}", r.message);
}

/// A test that raises with a 20 MiB message: every text that reaches the result is capped,
/// its head and tail kept and the cut said, and the verdict is still a plain failure.
#[test]
fn a_huge_exception_message_gives_a_bounded_result() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let test = "def test_huge():\n    raise ValueError('A' + 'B' * (20 << 20) + 'Z')\n";
    let Some(r) = run_pytest(&c, sb, test) else {
        return;
    };
    assert_eq!(r.outcome, Outcome::Failed, "{:?}", r.message);
    assert_eq!(r.tests.len(), 1);
    let message = r.tests[0].message.as_deref().unwrap_or_default();
    assert!(
        message.len() <= 20 * 1024,
        "a {} byte message",
        message.len()
    );
    assert!(
        message.contains("bytes of output left out"),
        "the cut is not said"
    );
    assert!(message.contains("ValueError: ABBB"), "the head is lost");
    assert!(message.contains("BBBZ"), "the tail is lost");
    let texts: usize = r
        .tests
        .iter()
        .map(|t| t.name.len() + t.classname.len() + t.message.as_ref().map_or(0, String::len))
        .sum::<usize>()
        + r.message.as_ref().map_or(0, String::len);
    assert!(texts < 64 * 1024, "{texts} bytes of text");
    // Everything the run printed was capped while it was read.
    for stream in [&r.run.stdout, &r.run.stderr] {
        assert!(stream.bytes.len() <= Limits::default().output_bytes + 100);
    }
}

/// A report that claims one passing test of the attack file.
const FORGED_JUNIT: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?><testsuites><testsuite \
    name=\"pytest\" errors=\"0\" failures=\"0\" skipped=\"0\" tests=\"1\"><testcase \
    classname=\"test_attack\" name=\"test_false\" time=\"0.001\"/></testsuite></testsuites>";

/// A verdict forged from inside the test, run with the screen off (the library does not
/// screen), and what the screen says of the same file.
fn forge(test: &str) -> Option<(PytestResult, Vec<clover_screen::Finding>)> {
    let sb = sandbox()?;
    let c = Case::new();
    let r = run_pytest(&c, sb, test)?;
    show("", &r);
    Some((r, clover_screen::screen_python(test)))
}

fn show(label: &str, r: &PytestResult) {
    eprintln!(
        "{label}outcome {:?} message {:?} exit {:?}\nstdout: {}\nstderr: {}",
        r.outcome,
        r.message,
        r.run.exit,
        r.run.stdout.tail(2000),
        r.run.stderr.tail(2000)
    );
}

/// `test` run cold and in a warm worker (which must serve it, not send it cold), each in a
/// fresh copy of the small repository, with the screen off, measuring `cov_sources`.
fn forge_cold_and_warm(test: &str, cov_sources: &[&str]) -> Option<[PytestResult; 2]> {
    let sb = sandbox()?;
    let python = clover_testkit::python()?;
    let pool = clover_pytest::WarmPool::new();
    let results = [false, true].map(|warm| {
        let c = Case::new();
        let run = attack(&c, python.clone(), test, cov_sources);
        let r = if warm {
            run.run_warm(sb, &pool)
        } else {
            run.run(sb)
        }
        .expect("the run is carried out");
        c.assert_contained(r.run.host_uid);
        show(&format!("warm {warm}: "), &r);
        if warm {
            assert!(
                r.message.as_deref().is_none_or(|m| !m.contains("ran cold")),
                "{:?}",
                r.message
            );
        }
        r
    });
    Some(results)
}

/// A test that knows the session record's format writes a consistent one by path where the
/// plugin once wrote it (`.clover-out/session.txt`), beside a forged report whose hash it
/// holds, and ends with `os._exit(0)`: the record the host reads comes through the report
/// channel, not from a file of the run, so there is none and the report is not taken.
#[test]
fn a_consistent_record_written_by_path_is_not_a_pass() {
    let test = format!(
        "import hashlib, os\n\n\
         REPORT = '{FORGED_JUNIT}'\n\n\
         def test_false():\n    \
             os.makedirs('.clover-out', exist_ok=True)\n    \
             with open('.clover-out/junit.xml', 'w') as f:\n        \
                 f.write(REPORT)\n    \
             digest = hashlib.sha256(REPORT.encode()).hexdigest()\n    \
             with open('.clover-out/session.txt', 'w') as f:\n        \
                 f.write('exitstatus 0\\njunit_sha256 %s\\npassed 1\\nskipped 0\\n'\n                \
                         'error 0\\nfailed 0\\nunfinished 0\\n' % digest)\n    \
             os._exit(0)\n    \
             assert 1 == 2\n"
    );
    let Some(results) = forge_cold_and_warm(&test, &[]) else {
        return;
    };
    for r in results {
        assert_eq!(r.run.exit, ExitStatus::Code(0));
        assert!(
            r.tests.is_empty() && r.coverage.is_empty(),
            "the forged report outlived its verdict: {:?}",
            r.tests
        );
        assert_eq!(r.outcome, Outcome::Forged, "{:?}", r.message);
        let message = r.message.unwrap_or_default();
        assert!(message.contains("no session record"), "{message}");
    }
}

/// The report channel is the plugin's alone once pytest has imported it: its variable is gone,
/// the descriptor the run was given (fd 3) is closed, and the one the plugin holds is the
/// only descriptor of that pipe in the process and is not inherited by a child the test
/// starts (even one started with `close_fds=False`). Cold and warm.
#[test]
fn the_report_channel_is_the_plugins_alone() {
    let test = r#"import os, stat, subprocess, sys
import _clover_report


def pipes(ino):
    """The descriptors of this process that are the pipe with inode `ino`."""
    found = []
    for name in os.listdir('/proc/self/fd'):
        try:
            st = os.fstat(int(name))
        except OSError:
            continue
        if stat.S_ISFIFO(st.st_mode) and st.st_ino == ino:
            found.append(int(name))
    return found


def test_private():
    assert 'CLOVER_REPORT_FD' not in os.environ
    channel = _clover_report._channel
    assert channel is not None and not os.get_inheritable(channel)
    ino = os.fstat(channel).st_ino
    assert pipes(ino) == [channel]
    child = subprocess.run(
        [sys.executable, '-c', 'import test_attack; print(test_attack.pipes(%d))' % ino],
        capture_output=True, text=True, close_fds=False,
    )
    assert child.stdout.strip() == '[]', child
"#;
    let Some(results) = forge_cold_and_warm(test, &[]) else {
        return;
    };
    for r in results {
        assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    }
}

/// Bytes a test writes into the report channel itself (it found the plugin's descriptor),
/// before the plugin's record or as a second record of its own, make the run an error
/// whatever the record says: only one record, and nothing else, is believed.
#[test]
fn anything_a_test_writes_into_the_report_channel_is_an_error() {
    // `\\n` is a newline once Python reads the bytes literal: the body holds none.
    let frame = |body: &str| format!("clover-session {}\\n{body}", body.len());
    for (what, bytes) in [
        ("garbage", "garbage".to_string()),
        ("a second record", frame("exitstatus 0")),
    ] {
        let test = format!(
            "import os\n\
             import _clover_report\n\n\
             def test_true():\n    \
                 os.write(_clover_report._channel, b'{bytes}')\n    \
                 assert 1 == 1\n"
        );
        let Some(results) = forge_cold_and_warm(&test, &[]) else {
            return;
        };
        for r in results {
            assert_eq!(r.run.exit, ExitStatus::Code(0), "{what}");
            assert!(r.tests.is_empty(), "{what}: {:?}", r.tests);
            assert_eq!(r.outcome, Outcome::Forged, "{what}: {:?}", r.message);
            let message = r.message.unwrap_or_default();
            assert!(message.contains("report channel"), "{what}: {message}");
        }
    }
}

/// An `atexit` handler that changes the coverage report (a cold run's Cobertura XML, a warm
/// run's hit lines) once pytest's session has ended: the session record hashed the report
/// pytest-cov or the worker wrote, so the run is not believed.
#[test]
fn a_coverage_report_changed_after_the_session_is_not_believed() {
    let test = "import atexit, os\n\
                from pkg import mod\n\n\
                def grow():\n    \
                    for name in ('coverage.xml', 'coverage.json'):\n        \
                        path = os.path.join('.clover-out', name)\n        \
                        if os.path.exists(path):\n            \
                            with open(path, 'a') as f:\n                \
                                f.write(' ')\n\n\
                atexit.register(grow)\n\n\
                def test_true():\n    \
                    assert mod.X == 1\n";
    let Some(results) = forge_cold_and_warm(test, &["pkg"]) else {
        return;
    };
    for (r, report) in results.into_iter().zip(["coverage.xml", "coverage.json"]) {
        assert_eq!(r.run.exit, ExitStatus::Code(0));
        assert_eq!(r.outcome, Outcome::Forged, "{report}: {:?}", r.message);
        let message = r.message.unwrap_or_default();
        assert!(
            message.contains(&format!("{report} is not the one pytest left")),
            "{message}"
        );
        // The report itself still reads: the run is refused for what it did, not its syntax.
        assert!(
            r.coverage.iter().any(|f| f.path == "pkg/mod.py"),
            "{report}: {:?}",
            r.coverage
        );
    }
}

/// A report written by hand, then `os._exit(0)`: pytest never ended its session, so there is
/// no session record and the report is not taken.
#[test]
fn a_hand_written_report_and_os_exit_is_not_a_pass() {
    let test = format!(
        "import os\n\n\
         def test_false():\n    \
             os.makedirs('.clover-out', exist_ok=True)\n    \
             with open('.clover-out/junit.xml', 'w') as f:\n        \
                 f.write('{FORGED_JUNIT}')\n    \
             os._exit(0)\n    \
             assert 1 == 2\n"
    );
    let Some((r, screened)) = forge(&test) else {
        return;
    };
    assert_eq!(r.run.exit, ExitStatus::Code(0));
    assert!(
        r.tests.is_empty() && r.coverage.is_empty(),
        "the forged report outlived its verdict: {:?}",
        r.tests
    );
    assert_eq!(r.outcome, Outcome::Forged, "{:?}", r.message);
    let message = r.message.unwrap_or_default();
    assert!(message.contains("not completed by pytest"), "{message}");
    assert!(!screened.is_empty(), "the screen lets os._exit pass");
}

/// An `atexit` handler that rewrites the report after pytest wrote it and exits 0: the exit
/// code is not the one pytest ended its session with, and the report is not the one it wrote.
#[test]
fn an_atexit_rewrite_of_the_report_is_not_a_pass() {
    let test = format!(
        "import atexit, os\n\n\
         def rewrite():\n    \
             with open('.clover-out/junit.xml', 'w') as f:\n        \
                 f.write('{FORGED_JUNIT}')\n    \
             os._exit(0)\n\n\
         atexit.register(rewrite)\n\n\
         def test_false():\n    \
             assert 1 == 2\n"
    );
    let Some((r, screened)) = forge(&test) else {
        return;
    };
    assert_eq!(r.run.exit, ExitStatus::Code(0));
    assert!(r.tests.is_empty(), "the forged report outlived its verdict");
    assert_eq!(r.outcome, Outcome::Forged, "{:?}", r.message);
    let message = r.message.unwrap_or_default();
    assert!(
        message.contains("exit code 1 but the process exited with 0"),
        "{message}"
    );
    assert!(!screened.is_empty(), "the screen lets atexit pass");
}

/// A hookwrapper registered from an autouse fixture turns the failure into a pass before any
/// report hook sees it: pytest's own record agrees with the forged report, so the run-time
/// check cannot see it. The screen rejects the file (the plugin manager, the hook).
#[test]
fn a_hookwrapper_registered_from_a_fixture_is_seen_by_the_screen_only() {
    let test = "import pytest\n\n\
                class Forger:\n    \
                    @pytest.hookimpl(hookwrapper=True)\n    \
                    def pytest_runtest_makereport(self, item, call):\n        \
                        outcome = yield\n        \
                        report = outcome.get_result()\n        \
                        if report.failed:\n            \
                            report.outcome = 'passed'\n            \
                            report.longrepr = None\n\n\
                @pytest.fixture(autouse=True)\n\
                def forge(request):\n    \
                    if not request.config.pluginmanager.has_plugin('forger'):\n        \
                        request.config.pluginmanager.register(Forger(), 'forger')\n\n\
                def test_false():\n    \
                    assert 1 == 2\n";
    let Some((r, screened)) = forge(test) else {
        return;
    };
    // What the run-time check cannot see: every record of the run says "passed".
    assert_eq!(r.run.exit, ExitStatus::Code(0));
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    let constructs: Vec<&str> = screened.iter().map(|f| f.construct.as_str()).collect();
    assert!(
        constructs.iter().any(|c| c.contains("pluginmanager")),
        "{constructs:?}"
    );
}

/// Coverage data claimed from inside the test (`add_lines` of lines that never ran) is in the
/// report pytest-cov writes: nothing at run time tells it from measured data. The screen
/// rejects the file (`import coverage`).
#[test]
fn coverage_claimed_from_inside_is_seen_by_the_screen_only() {
    let Some(sb) = sandbox() else { return };
    let Some(python) = clover_testkit::python() else {
        return;
    };
    let c = Case::new();
    let test = "import os\n\
                import coverage\n\
                from pkg import lib\n\n\
                def test_claims():\n    \
                    assert lib.used() == 1\n    \
                    data = coverage.Coverage.current().get_data()\n    \
                    data.add_lines({os.path.abspath('pkg/lib.py'): [5]})\n";
    let run = PytestRun {
        repo: c.repo.path().to_path_buf(),
        python,
        targets: vec!["test_attack.py".into()],
        files: vec![
            WriteFile {
                path: "test_attack.py".into(),
                contents: test.as_bytes().to_vec(),
            },
            WriteFile {
                path: "pkg/lib.py".into(),
                contents: b"def used():\n    return 1\n\n\ndef unused():\n    return 2\n".to_vec(),
            },
        ],
        cov_sources: vec!["pkg".into()],
        cov_only: None,
        cov_contexts: false,
        env: vec![],
        limits: Limits::default(),
    };
    let r = run.run(sb).expect("the run is carried out");
    c.assert_contained(r.run.host_uid);
    eprintln!(
        "{:?} {:?}\n{}",
        r.outcome,
        r.message,
        r.run.stdout.tail(2000)
    );
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    let lib = r.coverage.iter().find(|f| f.path == "pkg/lib.py");
    let claimed = lib.is_some_and(|f| f.lines.ranges().iter().any(|[a, b]| *a <= 5 && 5 <= *b));
    assert!(claimed, "the claimed line is not in the report: {lib:?}");
    let screened = clover_screen::screen_python(test);
    assert!(
        screened.iter().any(|f| f.construct.contains("coverage")),
        "{screened:?}"
    );
}
