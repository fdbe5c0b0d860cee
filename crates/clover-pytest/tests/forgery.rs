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
        witness: Vec::new(),
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
    cold_and_warm(Case::new, |_| {}, test, cov_sources)
}

/// `test` run cold and warm, each in a fresh repository `case` makes, its run as `adjust`
/// leaves it.
fn cold_and_warm(
    case: impl Fn() -> Case,
    adjust: impl Fn(&mut PytestRun),
    test: &str,
    cov_sources: &[&str],
) -> Option<[PytestResult; 2]> {
    let sb = sandbox()?;
    let python = clover_testkit::python()?;
    let pool = clover_pytest::WarmPool::new();
    let results = [false, true].map(|warm| {
        let c = case();
        let mut run = attack(&c, python.clone(), test, cov_sources);
        adjust(&mut run);
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
        // The report itself still reads, but nothing of a forged run is kept.
        assert!(
            r.coverage.is_empty() && r.tests.is_empty(),
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

/// The code under test of the witnessed runs: function bodies, methods, a nested function, a
/// decorated one, and a function that runs at import.
const LIB: &str = "import functools\n\n\n\
def used(x=1):\n    \
    \"\"\"Doc.\"\"\"\n    \
    if x:\n        \
        y = x + 1\n    \
    else:\n        \
        y = 0\n    \
    try:\n        \
        z = 1 / x\n    \
    except ZeroDivisionError:\n        \
        z = 0\n    \
    return y + z\n\n\n\
def one(): return 1\n\n\n\
def deco(f):\n    \
    @functools.wraps(f)\n    \
    def inner(*a):\n        \
        return f(*a)\n    \
    return inner\n\n\n\
@deco\n\
def wrapped():\n    \
    return 3\n\n\n\
class K:\n    \
    def m(self):\n        \
        def nested():\n            \
            return 4\n        \
        return nested()\n\n\n\
def at_import():\n    \
    return 5\n\n\n\
AT_IMPORT = at_import()\n\n\n\
def unused():\n    \
    a = 1\n    \
    return a\n";

/// `test` run cold and warm as [`forge_cold_and_warm`] runs it, in a repository that has
/// `pkg/lib.py` ([`LIB`]) and, with `loaded`, a conftest that imports it (a warm worker then
/// has it loaded before any candidate), measuring and witnessing `pkg/lib.py`.
fn witnessed_cold_and_warm(test: &str, loaded: bool) -> Option<[PytestResult; 2]> {
    let mut files = vec![("pkg/lib.py", LIB)];
    if loaded {
        files.push(("conftest.py", "import pkg.lib  # noqa: F401\n"));
    }
    let witness = |run: &mut PytestRun| {
        run.cov_only = Some(vec!["pkg/lib.py".into()]);
        run.witness = vec!["pkg/lib.py".into()];
    };
    cold_and_warm(|| Case::with_files(&files), witness, test, &["pkg"])
}

fn covered(r: &PytestResult, path: &str) -> Vec<u32> {
    r.coverage
        .iter()
        .filter(|f| f.path == path)
        .flat_map(|f| {
            f.lines
                .ranges()
                .iter()
                .flat_map(|[a, b]| *a..=*b)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// An honest test of every kind of code the witness instruments passes with its coverage,
/// cold and warm, the module loaded by the worker before the candidate or imported by it:
/// the witness saw every line coverage.py did (and the function run at import counts).
#[test]
fn an_honest_run_is_witnessed_without_a_false_alarm() {
    let test = "from pkg import lib\n\n\
                def test_all():\n    \
                    assert lib.used() == 3\n    \
                    assert lib.used(0) == 0 or True\n    \
                    assert lib.one() == 1\n    \
                    assert lib.wrapped() == 3\n    \
                    assert lib.K().m() == 4\n    \
                    assert lib.AT_IMPORT == 5\n";
    for loaded in [false, true] {
        let Some(results) = witnessed_cold_and_warm(test, loaded) else {
            return;
        };
        let mut lines = Vec::new();
        for r in &results {
            assert_eq!(
                r.outcome,
                Outcome::Passed,
                "loaded {loaded}: {:?}",
                r.message
            );
            lines.push(covered(r, "pkg/lib.py"));
        }
        // Bodies of used, inner, wrapped, m, nested and at_import ran.
        for line in [6, 7, 11, 14, 23, 29, 34, 35, 36, 40] {
            assert!(
                lines[0].contains(&line),
                "loaded {loaded}: {line} {:?}",
                lines[0]
            );
        }
        assert_eq!(lines[0], lines[1], "loaded {loaded}: cold and warm differ");
    }
}

/// A run that brings its own version of a witnessed file (as a mutant's run does) runs that
/// version, cold and warm (where the worker loaded the repository's and patches the run's
/// in): the witness does not put the repository's code back.
#[test]
fn a_run_that_brings_its_own_version_of_a_witnessed_file_runs_it() {
    let mutant = LIB.replace("    return y + z\n", "    return 99\n");
    assert_ne!(mutant, LIB);
    let test = "from pkg import lib\n\n\
                def test_mutant():\n    \
                    assert lib.used() == 99\n";
    let files = [
        ("pkg/lib.py", LIB),
        ("conftest.py", "import pkg.lib  # noqa: F401\n"),
    ];
    let adjust = |run: &mut PytestRun| {
        run.files.push(WriteFile {
            path: "pkg/lib.py".into(),
            contents: mutant.clone().into_bytes(),
        });
        run.cov_only = Some(vec!["pkg/lib.py".into()]);
        run.witness = vec!["pkg/lib.py".into()];
    };
    let Some(results) = cold_and_warm(|| Case::with_files(&files), adjust, test, &["pkg"]) else {
        return;
    };
    for r in &results {
        assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    }
}

/// The same honest run under Python 3.12's `sys.monitoring` core of coverage.py, cold and warm,
/// the module loaded by the worker: the witness sees what that core measures.
#[test]
fn an_honest_run_is_witnessed_under_coverage_s_sys_monitoring_core() {
    let Some(sysmon) = clover_testkit::sysmon_python() else {
        return;
    };
    let test = "from pkg import lib\n\n\
                def test_all():\n    \
                    assert lib.used() == 3\n    \
                    assert lib.wrapped() == 3\n    \
                    assert lib.K().m() == 4\n";
    let files = [
        ("pkg/lib.py", LIB),
        ("conftest.py", "import pkg.lib  # noqa: F401\n"),
    ];
    let adjust = |run: &mut PytestRun| {
        run.python = sysmon.clone();
        run.env.push(("COVERAGE_CORE".into(), "sysmon".into()));
        run.cov_only = Some(vec!["pkg/lib.py".into()]);
        run.witness = vec!["pkg/lib.py".into()];
    };
    let Some(results) = cold_and_warm(|| Case::with_files(&files), adjust, test, &["pkg"]) else {
        return;
    };
    for r in &results {
        assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
        let lines = covered(r, "pkg/lib.py");
        for line in [6, 7, 11, 14, 23, 29, 34, 35, 36] {
            assert!(lines.contains(&line), "{line} {lines:?}");
        }
    }
}

/// Lines put into coverage.py's data by a test that runs none of them — through its API,
/// into the collector's tables, or by `exec` of decoded text fetched from the builtins by a
/// built name — are claimed by the coverage report and never seen by the run's witness:
/// the run is forged, cold and warm, and nothing of it is kept.
#[test]
fn coverage_claimed_from_inside_is_forged_whatever_the_spelling() {
    let api = "import os\n\
               import coverage\n\n\
               def test_claims():\n    \
                   data = coverage.Coverage.current().get_data()\n    \
                   data.add_lines({os.path.abspath('pkg/lib.py'): [6, 7, 12, 43, 44]})\n";
    let tables = "import os\n\
                  import importlib\n\n\
                  def test_claims():\n    \
                      cov = getattr(importlib.import_module('cov' + 'erage'), 'Cov' + 'erage')\n    \
                      c = getattr(cov.current(), '_coll' + 'ector')\n    \
                      lines = c.data.setdefault(os.path.abspath('pkg/lib.py'), set())\n    \
                      lines.update({6, 7, 12, 43, 44})\n";
    let exec = "import base64, builtins, os\n\n\
                def test_claims():\n    \
                    text = base64.b64decode(b'aW1wb3J0IGNvdmVyYWdlLCBvcwpjb3ZlcmFnZS5Db3ZlcmFnZS5jdXJyZW50KCkuZ2V0X2RhdGEoKS5hZGRfbGluZXMoe29zLnBhdGguYWJzcGF0aCgncGtnL2xpYi5weScpOiBbNiwgNywgMTIsIDQzLCA0NF19KQo=')\n    \
                    getattr(builtins, 'ex' + 'ec')(text)\n";
    for (what, test) in [("api", api), ("tables", tables), ("exec", exec)] {
        for loaded in [false, true] {
            let Some(results) = witnessed_cold_and_warm(test, loaded) else {
                return;
            };
            for (r, warm) in results.iter().zip([false, true]) {
                let lines = covered(r, "pkg/lib.py");
                let label = format!("{what} loaded {loaded} warm {warm}: {:?}", r.message);
                // Either the claim reached the report and the run is forged, with nothing
                // kept, or it never reached the report (a warm run that traces no line of a
                // file reports none of it).
                if r.outcome == Outcome::Forged {
                    let message = r.message.as_deref().unwrap_or_default();
                    assert!(message.contains("never ran"), "{label}");
                    assert!(r.coverage.is_empty() && r.tests.is_empty(), "{label}");
                } else {
                    assert_eq!(r.outcome, Outcome::Passed, "{label}");
                    assert!(
                        !lines.contains(&6) && !lines.contains(&7),
                        "{label} {lines:?}"
                    );
                }
                // A cold run reports what coverage.py's data holds, the claim too (a warm one
                // reads the tracer's tables, which only the second spelling reaches).
                if !warm || what == "tables" {
                    assert_eq!(r.outcome, Outcome::Forged, "{label} {lines:?}");
                }
            }
        }
    }
}

/// The same claims with the witness off pass with the claimed lines: what the witness
/// catches, and that the comparison flag really turns it off.
#[test]
fn without_the_witness_claimed_coverage_is_believed() {
    let Some(sb) = sandbox() else { return };
    let Some(python) = clover_testkit::python() else {
        return;
    };
    let c = Case::with_files(&[("pkg/lib.py", LIB)]);
    let test = "import os\n\
                import coverage\n\n\
                def test_claims():\n    \
                    data = coverage.Coverage.current().get_data()\n    \
                    data.add_lines({os.path.abspath('pkg/lib.py'): [47, 48]})\n";
    let mut run = attack(&c, python, test, &["pkg"]);
    run.cov_only = Some(vec!["pkg/lib.py".into()]);
    let r = run.run(sb).expect("the run is carried out");
    c.assert_contained(r.run.host_uid);
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    let lines = covered(&r, "pkg/lib.py");
    assert!(lines.contains(&47) && lines.contains(&48), "{lines:?}");
}

/// A failing test's verdict made a pass from inside its own run, each a way the screen's
/// reading of the text does not see (names built at run time): a hook wrapper registered
/// from a fixture, one that removes itself once it has run, a hook-call monitor, a report
/// hook registered to run first, pytest's report class or runner replaced. pytest's own
/// record is the plugin's, which watched the machinery: each run is forged, cold and warm.
#[test]
fn a_verdict_forged_through_pytest_s_machinery_is_forged() {
    let common = "import base64\n\
                  import pytest\n\
                  from pkg import mod\n\n\
                  def _d(s):\n    \
                      return base64.b64decode(s).decode()\n\n\
                  def pm(request):\n    \
                      return getattr(request.config, _d('cGx1Z2lubWFuYWdlcg=='))\n\n";
    let wrapper = "@pytest.fixture(autouse=True)\n\
                   def _f(request):\n    \
                       def wrap(item, call):\n        \
                           outcome = yield\n        \
                           rep = outcome.get_result()\n        \
                           rep.outcome = 'passed'\n        \
                           rep.longrepr = None\n    \
                       name = _d('cHl0ZXN0X3J1bnRlc3RfbWFrZXJlcG9ydA==')\n    \
                       P = type('P', (), {name: staticmethod(pytest.hookimpl(hookwrapper=True)(wrap))})\n    \
                       getattr(pm(request), 'register')(P())\n    \
                       yield\n";
    let gone = "@pytest.fixture(autouse=True)\n\
                def _f(request):\n    \
                    manager = pm(request)\n    \
                    def wrap(item, call):\n        \
                        outcome = yield\n        \
                        rep = outcome.get_result()\n        \
                        rep.outcome = 'passed'\n        \
                        rep.longrepr = None\n        \
                        manager.unregister(plugin)\n    \
                    name = _d('cHl0ZXN0X3J1bnRlc3RfbWFrZXJlcG9ydA==')\n    \
                    P = type('P', (), {name: staticmethod(pytest.hookimpl(hookwrapper=True, tryfirst=True)(wrap))})\n    \
                    plugin = P()\n    \
                    manager.register(plugin)\n    \
                    yield\n";
    let monitor = "@pytest.fixture(autouse=True)\n\
                   def _f(request):\n    \
                       def before(name, impls, kwargs):\n        \
                           pass\n    \
                       def after(outcome, name, impls, kwargs):\n        \
                           if name.endswith('makereport'):\n            \
                               rep = outcome.get_result()\n            \
                               rep.outcome = 'passed'\n            \
                               rep.longrepr = None\n    \
                       getattr(pm(request), 'add_hookcall_' + 'monitoring')(before, after)\n    \
                       yield\n";
    let first = "@pytest.fixture(autouse=True)\n\
                 def _f(request):\n    \
                     def flip(report):\n        \
                         report.outcome = 'passed'\n        \
                         report.longrepr = None\n    \
                     name = 'pytest_runtest_' + 'logreport'\n    \
                     P = type('P', (), {name: staticmethod(pytest.hookimpl(tryfirst=True)(flip))})\n    \
                     pm(request).register(P())\n    \
                     yield\n";
    let class = "import importlib\n\
                 reports = importlib.import_module('_pytest.' + 'reports')\n\
                 made = reports.TestReport.from_item_and_call\n\
                 def forged(item, call):\n    \
                     rep = made(item, call)\n    \
                     rep.outcome = 'passed'\n    \
                     rep.longrepr = None\n    \
                     return rep\n\
                 setattr(reports.TestReport, 'from_item_' + 'and_call', staticmethod(forged))\n";
    let runner = "import importlib\n\
                  runner = importlib.import_module('_pytest.' + 'runner')\n\
                  reports = importlib.import_module('_pytest.' + 'reports')\n\
                  def call_and_report(item, when, log=True, **kwds):\n    \
                      call = runner.CallInfo.from_call(lambda: None, when=when)\n    \
                      rep = reports.TestReport.from_item_and_call(item, call)\n    \
                      if log:\n        \
                          item.ihook.pytest_runtest_logreport(report=rep)\n    \
                      return rep\n\
                  setattr(runner, 'call_and_' + 'report', call_and_report)\n";
    // pytest's python plugin taken out: the call of a test function has no implementation
    // left, so the test's body never runs and it cannot fail.
    let unplugged = "@pytest.fixture(autouse=True)\n\
                     def _f(request):\n    \
                         manager = pm(request)\n    \
                         manager.unregister(manager.get_plugin('py' + 'thon'))\n    \
                         yield\n";
    for (what, forgery) in [
        ("wrapper", wrapper),
        ("gone", gone),
        ("unplugged", unplugged),
        ("monitor", monitor),
        ("first", first),
        ("class", class),
        ("runner", runner),
    ] {
        let test = format!("{common}{forgery}\n\ndef test_false():\n    assert mod.X == 2\n");
        let Some(results) = forge_cold_and_warm(&test, &[]) else {
            return;
        };
        for (r, warm) in results.iter().zip([false, true]) {
            assert_eq!(
                r.outcome,
                Outcome::Forged,
                "{what} warm {warm}: {:?}",
                r.message
            );
            assert!(r.tests.is_empty(), "{what} warm {warm}: {:?}", r.tests);
        }
    }
}

/// flask's own tests take pytest's logging plugin out for a test and put it back
/// (`tests/test_logging.py`): nothing runs that was not there, and the verdict is the test's.
#[test]
fn a_plugin_taken_out_and_put_back_by_an_honest_test_is_no_forgery() {
    let test = "import pytest\n\n\
                @pytest.fixture\n\
                def no_logging(pytestconfig):\n    \
                    plugin = pytestconfig.pluginmanager.unregister(name='logging-plugin')\n    \
                    yield\n    \
                    pytestconfig.pluginmanager.register(plugin, 'logging-plugin')\n\n\
                def test_without(no_logging):\n    \
                    assert 1 + 1 == 2\n\n\
                def test_after():\n    \
                    assert 2 + 2 == 4\n";
    assert_honest(test, 2);
}

/// freezegun (kombu's tests use it) replaces the standard library's `datetime` in every
/// loaded module while a test runs, pytest's `_pytest.junitxml` among them, and puts it back
/// after: an import of the standard library's, not pytest's machinery, and the verdict is
/// the test's.
#[test]
fn a_clock_frozen_in_every_module_by_an_honest_test_is_no_forgery() {
    // As freezegun does, every module's reference to the real object is swapped; pytest 9's
    // watched modules import no datetime, so `pprint.pprint` (which `_pytest.reports`
    // imports) is swapped too, and the test checks a watched module was touched.
    let test = "import datetime, pprint, sys\nimport pytest\n\n\
                class FakeDatetime(datetime.datetime):\n    \
                    pass\n\n\
                def fake_pprint(*a, **k):\n    \
                    pass\n\n\
                FAKES = {id(datetime.datetime): (datetime.datetime, FakeDatetime), id(pprint.pprint): (pprint.pprint, fake_pprint)}\n\
                SWAPPED = []\n\n\
                @pytest.fixture\n\
                def frozen():\n    \
                    for key, module in list(sys.modules.items()):\n        \
                        space = getattr(module, '__dict__', None)\n        \
                        if not isinstance(space, dict) or key in ('datetime', 'pprint'):\n            \
                            continue\n        \
                        for name, value in list(space.items()):\n            \
                            fake = FAKES.get(id(value))\n            \
                            if fake is not None and fake[0] is value:\n                \
                                space[name] = fake[1]\n                \
                                SWAPPED.append((key, space, name, value))\n    \
                    yield\n    \
                    for _, space, name, value in SWAPPED:\n        \
                        space[name] = value\n\n\
                def test_frozen(frozen):\n    \
                    assert any(key.startswith('_pytest.') for key, _, _, _ in SWAPPED)\n\n\
                def test_after():\n    \
                    assert 2 + 2 == 4\n";
    assert_honest(test, 2);
}

/// `test`, an honest one, passes cold and warm with its `tests` tests: no forgery is seen.
fn assert_honest(test: &str, tests: usize) {
    let Some(results) = forge_cold_and_warm(test, &[]) else {
        return;
    };
    for (r, warm) in results.iter().zip([false, true]) {
        assert_eq!(r.outcome, Outcome::Passed, "warm {warm}: {:?}", r.message);
        assert_eq!(r.tests.len(), tests, "warm {warm}: {:?}", r.tests);
    }
}
