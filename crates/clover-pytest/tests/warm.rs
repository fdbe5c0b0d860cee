//! The warm worker against the cold path: the same verdicts, tests and coverage for the same
//! candidates, and no candidate sees what another did. Needs root and the project's virtual
//! environment (`cargo xtask setup`).

use std::path::PathBuf;
use std::time::Duration;

use clover_protocol::Outcome;
use clover_pytest::WarmPool;
use clover_pytest::{PytestResult, PytestRun};
use clover_sandbox::{Limits, Sandbox, WriteFile};

fn fixture() -> PathBuf {
    clover_testkit::fixture("python")
}

fn sandbox() -> Option<Sandbox> {
    match Sandbox::new() {
        Ok(sb) => Some(sb),
        Err(e) => clover_testkit::require(&format!("the sandbox ({e})"), None),
    }
}

fn candidate(py: &std::path::Path, path: &str, text: &str) -> PytestRun {
    PytestRun {
        repo: fixture(),
        python: py.to_path_buf(),
        targets: vec![path.into()],
        files: vec![WriteFile {
            path: path.into(),
            contents: text.as_bytes().to_vec(),
        }],
        cov_sources: vec!["src/ledger".into()],
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: vec![],
        limits: Limits {
            wall: Duration::from_secs(60),
            ..Limits::default()
        },
    }
}

/// The fixture's test files whose tests all pass every time.
const FIXTURE_TESTS: [&str; 4] = [
    "test_money.py",
    "test_accounts.py",
    "test_inventory.py",
    "test_report.py",
];

/// Writes `files` (path, text) under `root`.
fn write_tree(root: &std::path::Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// What must not depend on the path that ran a candidate.
fn verdict(
    r: &PytestResult,
) -> (
    Outcome,
    Vec<(String, String, clover_protocol::TestOutcome)>,
    Vec<clover_protocol::FileCoverage>,
) {
    let mut tests: Vec<_> = r
        .tests
        .iter()
        .map(|t| (t.classname.clone(), t.name.clone(), t.outcome))
        .collect();
    tests.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    (r.outcome, tests, r.coverage.clone())
}

/// Runs `run` cold, which must pass, then twice warm in one pool (the second time in the
/// worker the first left), which must run warm and give the cold verdict; the cold result.
fn passes_warm_as_cold(run: &PytestRun, sb: &Sandbox) -> PytestResult {
    let cold = run.run(sb).unwrap();
    assert_eq!(cold.outcome, Outcome::Passed, "{:?}", cold.message);
    let pool = WarmPool::new();
    for _ in 0..2 {
        let warm = run.run_warm(sb, &pool).unwrap();
        assert!(warm.message.is_none(), "{:?}", warm.message);
        assert_eq!(verdict(&warm), verdict(&cold));
    }
    cold
}

#[test]
fn warm_runs_give_the_cold_verdicts_on_the_fixture() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let pool = WarmPool::new();
    for name in FIXTURE_TESTS {
        let text = std::fs::read_to_string(fixture().join("tests").join(name)).unwrap();
        let run = candidate(&py, "tests/test_clover_candidate.py", &text);
        let cold = run.run(&sb).unwrap();
        let warm = run.run_warm(&sb, &pool).unwrap();
        assert!(
            warm.message
                .as_deref()
                .is_none_or(|m| !m.contains("ran cold")),
            "{:?}",
            warm.message
        );
        assert_eq!(verdict(&warm), verdict(&cold), "{name}");
    }
}

/// The worker compiles, before it forks, the patterns every run would compile for itself:
/// a warm candidate finds JUnit's escape of characters XML cannot hold in the `re` cache it
/// inherits before any report is written, a cold one does not.
#[test]
fn a_warm_candidate_inherits_the_compiled_report_pattern() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    // Checked while the module is imported, before JUnit has recorded any report (which
    // compiles the escape in a cold run).
    let text = r#"
import re

from _pytest import junitxml

ESCAPE = next(
    c
    for c in junitxml.bin_xml_escape.__code__.co_consts
    if isinstance(c, str) and c.startswith("[^")
)
COMPILED = any(key[1] == ESCAPE for key in re._cache)


def test_the_escape_was_compiled_before_the_run():
    assert COMPILED
"#;
    let run = candidate(&py, "tests/test_clover_candidate.py", text);
    let pool = WarmPool::new();
    let warm = run.run_warm(&sb, &pool).unwrap();
    assert_eq!(warm.outcome, Outcome::Passed, "{:?}", warm.message);
    let cold = run.run(&sb).unwrap();
    assert_eq!(
        cold.outcome,
        Outcome::Failed,
        "a cold run compiles them itself"
    );
}

/// What one candidate does to the package, the files it can reach, its memory or the
/// processes around it is gone for the next candidate the same worker serves: a clean
/// candidate after each gives the verdict and coverage it gives alone, cold.
#[test]
fn a_candidate_leaves_nothing_behind_for_the_next() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let path = "tests/test_clover_candidate.py";
    let clean_text = format!(
        "{}\n\ndef test_nothing_left_behind():\n    import os\n    for p in {LEFT:?}:\n        \
         assert not os.path.exists(p), p\n",
        std::fs::read_to_string(fixture().join("tests/test_money.py")).unwrap()
    );
    let clean = candidate(&py, path, &clean_text);
    let alone = clean.run(&sb).unwrap();
    assert_eq!(alone.outcome, Outcome::Passed, "{:?}", alone.message);
    let hostile = [
        // Monkeypatches the package under test, at import and in a test.
        "import ledger.money as m\nm.Money.__add__ = lambda self, other: 42\n\
         def test_patch():\n    import ledger\n    ledger.Money = None\n",
        // Writes every place it may write to, and leaves a process behind.
        "import os, subprocess\n\
         def test_write():\n\
         \x20   for p in ['/tmp/left', '/dev/shm/left', 'conftest.py', 'tests/conftest_left.py', \
         'left.txt', '/tmp/home/left']:\n\
         \x20       open(p, 'w').write('import sys; sys.exit(3)')\n\
         \x20   subprocess.Popen(['sleep', '600'])\n",
        // Exhausts its memory.
        "def test_hog():\n    x = bytearray(1 << 30)\n    y = bytearray(1 << 30)\n",
        // Times out, with a child of its own.
        "import subprocess, time\ndef test_hang():\n    subprocess.Popen(['sleep', '600'])\n    time.sleep(600)\n",
        // Passes, and leaves a thread the interpreter waits for at exit: a timeout cold.
        "import threading, time\ndef test_thread():\n    threading.Thread(target=time.sleep, args=(600,)).start()\n",
        // Ends its own process with a signal, leaving a process behind.
        "import os, signal, subprocess\ndef test_signal():\n    subprocess.Popen(['sleep', '600'])\n    \
         os.kill(os.getpid(), signal.SIGTERM)\n",
    ];
    let pool = WarmPool::new();
    let mut clean_warm = clean.clone();
    clean_warm.limits.memory_bytes = 768 << 20;
    let first = clean_warm.run_warm(&sb, &pool).unwrap();
    assert_eq!(verdict(&first), verdict(&alone));
    for text in hostile {
        let mut bad = candidate(&py, path, text);
        bad.limits.memory_bytes = 768 << 20;
        bad.limits.wall = Duration::from_secs(5);
        let r = bad.run_warm(&sb, &pool).unwrap();
        let cold = bad.run(&sb).unwrap();
        assert_eq!(
            r.outcome, cold.outcome,
            "{text}: {:?} / {:?}",
            r.message, cold.message
        );
        // How it ended, too: the runner's own status (a signal is the signal), and the
        // limit it hit.
        assert_eq!(
            (r.run.exit, r.run.limit_hit),
            (cold.run.exit, cold.run.limit_hit),
            "{text}"
        );
        let after = clean_warm.run_warm(&sb, &pool).unwrap();
        assert!(after.message.is_none(), "{:?}", after.message);
        assert_eq!(verdict(&after), verdict(&alone), "after {text}");
    }
}

const LEFT: [&str; 6] = [
    "/tmp/left",
    "/dev/shm/left",
    "conftest.py",
    "tests/conftest_left.py",
    "left.txt",
    "/tmp/home/left",
];

/// Not a check (no wall-clock time is asserted): prints what a candidate costs either way.
/// A run that reads the lines of some files only (`cov_only`: what its scoring reads)
/// measures those alone, warm as cold: what it reports of them is what a run measuring the
/// whole package reports of them, and files it does not read are not even traced (checked
/// from inside by the candidate, against coverage.py's own dispositions). A run that reads
/// none (Task I) measures nothing: no tracer runs. The worker that measures the package
/// serves all three.
#[test]
fn a_run_measures_only_the_files_it_reads_warm_as_cold() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let only = "src/ledger/money.py";
    let tests = format!(
        "{}\n{}",
        std::fs::read_to_string(fixture().join("tests/test_money.py")).unwrap(),
        std::fs::read_to_string(fixture().join("tests/test_accounts.py")).unwrap(),
    );
    let measuring = |what: &str, cov_only: Option<Vec<String>>| {
        let text = format!(
            "{tests}\n\nimport os, sys\n\n\
             def test_what_is_traced():\n\
             \x20   import coverage\n\
             \x20   if {what:?} == 'none':\n\
             \x20       assert sys.gettrace() is None\n\
             \x20       return\n\
             \x20   cache = coverage.Coverage.current()._collector.should_trace_cache\n\
             \x20   traced = {{os.path.basename(d.source_filename) for d in cache.values() \
             if d and d.trace}}\n\
             \x20   if {what:?} == 'all':\n\
             \x20       assert {{'money.py', 'accounts.py'}} <= traced, traced\n\
             \x20   else:\n\
             \x20       assert traced == {{'money.py'}}, traced\n"
        );
        let mut run = candidate(&py, "tests/test_clover_candidate.py", &text);
        run.cov_only = cov_only;
        run
    };
    let all = measuring("all", None);
    let some = measuring("some", Some(vec![only.into()]));
    let none = measuring("none", Some(vec![]));
    let whole = passes_warm_as_cold(&all, &sb);
    assert!(whole.coverage.len() > 1, "{:?}", whole.coverage);
    let money: Vec<_> = whole
        .coverage
        .iter()
        .filter(|f| f.path == only)
        .cloned()
        .collect();
    assert_eq!(money.len(), 1);
    let cold = passes_warm_as_cold(&some, &sb);
    assert_eq!(cold.coverage, money);
    let cold = passes_warm_as_cold(&none, &sb);
    assert!(cold.coverage.is_empty() && cold.message.is_none());
    // One worker, measuring the package, serves each in turn.
    let pool = WarmPool::new();
    for run in [&all, &some, &none, &some, &all] {
        let warm = run.run_warm(&sb, &pool).unwrap();
        assert_eq!(warm.outcome, Outcome::Passed, "{:?}", warm.message);
        let expected = match &run.cov_only {
            None => whole.coverage.clone(),
            Some(o) if o.is_empty() => Vec::new(),
            Some(_) => money.clone(),
        };
        assert_eq!(warm.coverage, expected);
    }
    assert_eq!(pool.workers_started(), 1);
}

/// A run that measures only a file that nothing imports collects no data: in a project that
/// turns warnings into errors, coverage.py's "no data was collected" is shown, not raised,
/// warm as cold (pytest-cov's loop makes coverage warnings show once). The run passes with
/// no coverage; one that imports the file reports its lines, warm as cold.
#[test]
fn a_run_measuring_a_file_nothing_imports_passes_where_warnings_are_errors() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let repo = batch_repo(&[
        (
            "pytest.ini",
            "[pytest]\npythonpath = .\nfilterwarnings =\n    error\n",
        ),
        ("pkg/m.py", "def f():\n    return 1\n"),
        ("pkg/lazy.py", "def z():\n    return 9\n"),
    ]);
    let run = |test: &str| PytestRun {
        cov_only: Some(vec!["pkg/lazy.py".into()]),
        ..batch_candidate(&py, repo.path(), test, &["pkg"])
    };
    let untouched = run("import pkg.m\n\n\ndef test_f():\n    assert pkg.m.f() == 1\n");
    let cold = passes_warm_as_cold(&untouched, &sb);
    assert!(cold.coverage.is_empty(), "{:?}", cold.coverage);
    let touched = run("from pkg import lazy\n\n\ndef test_z():\n    assert lazy.z() == 9\n");
    let cold = passes_warm_as_cold(&touched, &sb);
    assert_eq!(cold.coverage.len(), 1, "{:?}", cold.coverage);
    assert_eq!(cold.coverage[0].path, "pkg/lazy.py");
}

/// What a candidate left in its tmpfs is not charged to the next candidate: its supervisor
/// has ended, view and all, before the next one is handed its request (the worker makes the
/// next supervisor while a candidate runs). A candidate that fills `/dev/shm`, then one that
/// needs most of the memory limit, which passes as it does alone.
#[test]
fn a_candidate_s_tmpfs_is_freed_before_the_next_one_runs() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let path = "tests/test_clover_candidate.py";
    let run = |text: &str| {
        let mut run = candidate(&py, path, text);
        run.limits.memory_bytes = 512 << 20;
        run
    };
    let fill = run(
        "def test_fill():\n    with open('/dev/shm/fill', 'wb') as f:\n        \
         for _ in range(240):\n            f.write(b'x' * (1 << 20))\n",
    );
    let need = run("def test_need():\n    assert len(b'x' * (300 << 20)) == 300 << 20\n");
    assert_eq!(need.run(&sb).unwrap().outcome, Outcome::Passed);
    let pool = WarmPool::new();
    for _ in 0..2 {
        for r in [&fill, &need] {
            let warm = r.run_warm(&sb, &pool).unwrap();
            assert_eq!(warm.outcome, Outcome::Passed, "{:?}", warm.message);
            assert_eq!(warm.run.limit_hit, None);
        }
    }
    assert_eq!(pool.workers_started(), 1);
}

#[test]
#[ignore = "a measurement; run with --ignored --nocapture"]
fn cost_per_candidate() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let text = std::fs::read_to_string(fixture().join("tests/test_money.py")).unwrap();
    let run = candidate(&py, "tests/test_clover_candidate.py", &text);
    let pool = WarmPool::new();
    run.run_warm(&sb, &pool).unwrap();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let time = |f: &dyn Fn() -> PytestResult| {
        let t = std::time::Instant::now();
        let r = f();
        (
            t.elapsed().as_secs_f64(),
            r.tests.iter().map(|t| t.duration_secs).sum::<f64>(),
        )
    };
    let (mut cold, mut warm, mut own) = (vec![], vec![], vec![]);
    for _ in 0..9 {
        cold.push(time(&|| run.run(&sb).unwrap()).0);
        let (w, o) = time(&|| run.run_warm(&sb, &pool).unwrap());
        warm.push(w);
        own.push(o);
    }
    eprintln!(
        "cold {:.1} ms, warm {:.1} ms, tests' own time {:.1} ms",
        median(cold) * 1e3,
        median(warm) * 1e3,
        median(own) * 1e3
    );
}

/// What containment promises a cold run holds for a warm candidate too, checked from inside
/// by a test file that passes only when it does, run warm and cold: no network but its own
/// loopback, no capability, no key calls, nothing of the worker's processes to see or signal,
/// no user namespace to make, no way back to the host's files.
#[test]
fn a_warm_candidate_is_contained_as_a_cold_one() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let checks = r#"
import ctypes, errno, os, platform, socket

libc = ctypes.CDLL(None, use_errno=True)
KEYCTL = {"x86_64": 250, "aarch64": 219}[platform.machine()]

def test_only_its_own_loopback():
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("192.0.2.1", 80))
        assert False, "an outside address was reached"
    except OSError as e:
        assert e.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ETIMEDOUT, errno.EINVAL), e
    names = [n for _, n in socket.if_nameindex()]
    assert names == ["lo"], names

def test_no_capability_at_all():
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[cap].strip(), 16) == 0, (cap, status[cap])
    assert int(status["NoNewPrivs"].strip()) == 1
    assert os.getuid() == 65534 and os.getgid() == 65534

def test_key_calls_are_refused():
    r = libc.syscall(KEYCTL, 0, -3, 0)
    assert r == -1 and ctypes.get_errno() == errno.EPERM

def test_no_other_process_to_see_or_signal():
    mine = {p for p in os.listdir("/proc") if p.isdigit()}
    for p in mine:
        assert os.stat("/proc/" + p).st_uid == 65534, p
    try:
        os.kill(1, 0)
        raise AssertionError("pid 1 took a signal")
    except PermissionError:
        pass

def test_no_user_namespace():
    assert libc.unshare(0x10000000) == -1

def test_no_host_files():
    assert not os.path.exists("/root/.bash_history")
    assert not os.path.exists("/etc/shadow") or not os.access("/etc/shadow", os.R_OK)
    for d in ("/home", "/srv", "/var/lib"):
        assert not os.path.exists(d) or not os.listdir(d), d
"#;
    let run = candidate(&py, "tests/test_clover_containment.py", checks);
    let cold = run.run(&sb).unwrap();
    let pool = WarmPool::new();
    let warm = run.run_warm(&sb, &pool).unwrap();
    let failed = |r: &PytestResult| {
        r.tests
            .iter()
            .filter(|t| t.outcome != clover_protocol::TestOutcome::Passed)
            .map(|t| format!("{}: {:?}", t.name, t.message))
            .collect::<Vec<_>>()
    };
    assert_eq!(cold.outcome, Outcome::Passed, "cold: {:?}", failed(&cold));
    assert_eq!(
        warm.outcome,
        Outcome::Passed,
        "warm: {:?} {:?}",
        failed(&warm),
        warm.message
    );
    assert_eq!(warm.tests.len(), 6);
}

/// A candidate that brings its own version of a file a configured worker has already
/// executed (here the fixture's conftest, with a fixture added) cannot be served by a fork of
/// it, which would not read the file again: a worker that configures pytest per run serves
/// it, with the cold run's verdict, tests and coverage.
#[test]
fn a_candidate_replacing_a_loaded_file_runs_in_a_worker_configured_per_run() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let conftest = std::fs::read_to_string(fixture().join("tests/conftest.py")).unwrap();
    let mut run = candidate(
        &py,
        "tests/test_clover_candidate.py",
        "from ledger.money import Money\n\ndef test_marker(clover_marker):\n    assert Money(clover_marker).cents == 7\n",
    );
    run.files.push(WriteFile {
        path: "tests/conftest.py".into(),
        contents: format!(
            "{conftest}\n\nimport pytest\n\n@pytest.fixture\ndef clover_marker():\n    return 7\n"
        )
        .into_bytes(),
    });
    passes_warm_as_cold(&run, &sb);
}

/// A candidate that brings a pytest configuration file of its own (here one that collects
/// `check_*` functions) may give its run another rootdir or configuration file than the
/// worker was configured with: it runs in a worker configured per run, with the verdict of a
/// cold run (before, the worker's fork refused it with pytest's usage error, status 4).
#[test]
fn a_candidate_bringing_a_pytest_configuration_runs_as_a_cold_run_does() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let mut run = candidate(
        &py,
        "tests/sub/test_clover_candidate.py",
        "from ledger.money import Money\n\ndef check_cents():\n    assert Money(7).cents == 7\n",
    );
    run.files.push(WriteFile {
        path: "tests/sub/pytest.ini".into(),
        contents: b"[pytest]\npythonpath = ../../src\npython_functions = check_*\n".to_vec(),
    });
    let cold = passes_warm_as_cold(&run, &sb);
    assert_eq!(cold.tests.len(), 1, "{:?}", cold.tests);
}

/// A candidate that replaces a module the zygote imported, changing only the body of a
/// function that has not run (a mutant of a target's body), is served by a fork of the
/// configured worker with that function's code patched: two such runs see the same import
/// (the module's nonce) and the changed body. One that changes a function which ran at
/// import (`g`, which built `TABLE`) or module-level code cannot be patched in, and runs in
/// a worker configured per run, which imports the module anew: a nonce of its own each time,
/// and the table built by the changed `g`.
#[test]
fn a_changed_body_is_patched_into_the_fork_and_code_that_ran_at_import_is_not() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let repo = tempfile::tempdir().unwrap();
    let module = "import os\n\nNONCE = os.urandom(8).hex()\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return 'g'\n\n\nTABLE = [g()]\n";
    write_tree(
        repo.path(),
        &[
            ("pytest.ini", "[pytest]\npythonpath = .\n"),
            ("pkg/__init__.py", ""),
            ("pkg/m.py", module),
            ("tests/conftest.py", "import pkg.m  # noqa: F401\n"),
        ],
    );
    let test = "import pkg.m\n\n\ndef test_f():\n    assert pkg.m.f() == F\n\n\ndef test_table():\n    assert pkg.m.TABLE == [pkg.m.g()]\n\n\ndef test_nonce():\n    assert False, pkg.m.NONCE\n";
    let run = |mutant: &str, f: u32| PytestRun {
        repo: repo.path().to_path_buf(),
        python: py.clone(),
        targets: vec!["tests/test_c.py".into()],
        files: vec![
            WriteFile {
                path: "tests/test_c.py".into(),
                contents: test.replace("== F", &format!("== {f}")).into_bytes(),
            },
            WriteFile {
                path: "pkg/m.py".into(),
                contents: mutant.as_bytes().to_vec(),
            },
        ],
        cov_sources: vec![],
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: vec![],
        limits: Limits {
            wall: Duration::from_secs(60),
            ..Limits::default()
        },
    };
    let outcomes = |r: &PytestResult| {
        let mut by_name: Vec<_> = r
            .tests
            .iter()
            .map(|t| (t.name.clone(), t.outcome))
            .collect();
        by_name.sort_by(|a, b| a.0.cmp(&b.0));
        by_name
    };
    let nonce = |r: &PytestResult| {
        let t = r.tests.iter().find(|t| t.name == "test_nonce").unwrap();
        t.message.clone().unwrap_or_default()
    };
    use clover_protocol::TestOutcome::{Failed, Passed};
    let want = vec![
        ("test_f".to_string(), Passed),
        ("test_nonce".to_string(), Failed),
        ("test_table".to_string(), Passed),
    ];
    let pool = WarmPool::new();
    let body = run(&module.replace("return 1", "return 2"), 2);
    let at_import = run(&module.replace("return 'g'", "return 'h'"), 1);
    let module_level = run(&module.replace("TABLE = [g()]", "TABLE = [g()] + []"), 1);
    for r in [&body, &at_import, &module_level] {
        assert_eq!(outcomes(&r.run(&sb).unwrap()), want);
    }
    let patched: Vec<_> = (0..2).map(|_| body.run_warm(&sb, &pool).unwrap()).collect();
    for r in &patched {
        assert!(r.message.is_none(), "{:?}", r.message);
        assert_eq!(outcomes(r), want);
    }
    assert_eq!(nonce(&patched[0]), nonce(&patched[1]));
    for r in [&at_import, &module_level] {
        let anew: Vec<_> = (0..2).map(|_| r.run_warm(&sb, &pool).unwrap()).collect();
        for a in &anew {
            assert!(a.message.is_none(), "{:?}", a.message);
            assert_eq!(outcomes(a), want);
        }
        assert_ne!(nonce(&anew[0]), nonce(&anew[1]));
        assert_ne!(nonce(&anew[0]), nonce(&patched[0]));
    }
}

/// A mutant batch collects the candidate once and runs each mutant in a fork with the mutant
/// patched in: a mutant of a body that has not run is judged there, as a cold run of its own
/// judges it (killed, or survived when equivalent), whether its module was imported by the
/// conftest before the fork or by the candidate's collection; a mutant of a module nothing
/// has imported yet is imported from the mutant's text when the run imports it. The batch
/// A repository for mutant batches: `pkg` (`files` besides its `__init__.py`), importable
/// from the root, which a conftest imports `pkg.m` of.
fn batch_repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let mut tree = vec![
        ("pytest.ini", "[pytest]\npythonpath = .\n"),
        ("pkg/__init__.py", ""),
        ("tests/conftest.py", "import pkg.m  # noqa: F401\n"),
    ];
    tree.extend_from_slice(files);
    write_tree(repo.path(), &tree);
    repo
}

fn text_file(path: &str, text: String) -> WriteFile {
    WriteFile {
        path: path.into(),
        contents: text.into_bytes(),
    }
}

/// The candidate `tests/test_c.py` (`test`) of a [`batch_repo`], measuring `cov_sources`.
fn batch_candidate(
    py: &std::path::Path,
    repo: &std::path::Path,
    test: &str,
    cov_sources: &[&str],
) -> PytestRun {
    PytestRun {
        repo: repo.to_path_buf(),
        python: py.to_path_buf(),
        targets: vec!["tests/test_c.py".into()],
        files: vec![text_file("tests/test_c.py", test.to_string())],
        cov_sources: cov_sources.iter().map(|s| s.to_string()).collect(),
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: vec![],
        limits: Limits {
            wall: Duration::from_secs(60),
            ..Limits::default()
        },
    }
}

/// The limits of a mutant's run in the batch tests.
fn mutant_limits() -> Limits {
    Limits {
        wall: Duration::from_secs(20),
        ..Limits::default()
    }
}

/// Whether each mutant's run passed, where the batch judged it.
fn passed(verdicts: &[Option<clover_pytest::BatchVerdict>]) -> Vec<Option<bool>> {
    verdicts
        .iter()
        .map(|v| v.as_ref().map(|v| v.passed))
        .collect()
}

/// leaves to a run of its own a mutant of a function that ran while collecting (a
/// parametrize argument) or at import, one of a module not yet imported that pytest would
/// rewrite (a `test_*.py` helper), and every mutant after a run that changed the view (a
/// file written in /tmp). A run whose test skips kills its mutant. A candidate that does not
/// pass in the batch's control run gets no verdict from it.
#[test]
fn a_mutant_batch_judges_what_a_fork_can_be_given_as_cold_runs_do() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let m = "def f():\n    return 1\n\n\ndef g():\n    return 'g'\n\n\nTABLE = [g()]\n";
    let c = "def h():\n    return 3\n\n\ndef k():\n    return 5\n";
    let lazy = "def z():\n    return 9\n";
    let helper = "def w():\n    return 7\n";
    let repo = batch_repo(&[
        ("pkg/m.py", m),
        ("pkg/c.py", c),
        ("pkg/lazy.py", lazy),
        ("tests/test_lazy_helper.py", helper),
    ]);
    let test = "import pytest\n\nimport pkg.c\nimport pkg.m\n\n\n@pytest.mark.parametrize(\"x\", [pkg.c.k()])\ndef test_all(x):\n    assert pkg.m.f() == 1\n    assert pkg.c.h() == 3\n    assert x == 5\n    from pkg import lazy\n\n    assert lazy.z() == 9\n    import test_lazy_helper\n\n    assert test_lazy_helper.w() == 7\n";
    let file = text_file;
    let mutants = vec![
        file("pkg/m.py", m.replace("return 1", "return 2")),
        file("pkg/m.py", m.replace("return 1", "return 1 + 0")),
        file("pkg/c.py", c.replace("return 3", "return 4")),
        file("pkg/c.py", c.replace("return 5", "return 6")),
        file("pkg/lazy.py", lazy.replace("return 9", "return 8")),
        file("pkg/lazy.py", lazy.replace("return 9", "return 9 + 0")),
        file(
            "tests/test_lazy_helper.py",
            helper.replace("return 7", "return 6"),
        ),
        file("pkg/m.py", m.replace("return 'g'", "return 'h'")),
        file(
            "pkg/m.py",
            m.replace("return 1", "return __import__('pytest').skip('all')"),
        ),
        file(
            "pkg/m.py",
            m.replace(
                "return 1",
                "return open('/tmp/clover-dirt', 'w').close() or 1",
            ),
        ),
        file("pkg/m.py", m.replace("return 1", "return 2")),
    ];
    let run = batch_candidate(&py, repo.path(), test, &[]);
    let candidate = run.files[0].clone();
    let limits = mutant_limits();
    let pool = WarmPool::new();
    let verdicts = run.run_mutants_warm(&sb, &pool, &mutants, &limits);
    let batched = passed(&verdicts);
    assert_eq!(
        batched,
        [
            Some(false),
            Some(true),
            Some(false),
            None,
            Some(false),
            Some(true),
            None,
            None,
            Some(false),
            Some(true),
            None
        ]
    );
    // A killed mutant names the test that failed, as its JUnit report would; one whose
    // test skipped (it checked nothing: killed, as a cold run's judge has it) names none.
    for v in [&verdicts[0], &verdicts[2]].into_iter().flatten() {
        assert_eq!(
            v.failed,
            [("tests.test_c".to_string(), "test_all[5]".to_string())]
        );
    }
    assert_eq!(verdicts[8].as_ref().map(|v| v.failed.len()), Some(0));
    // A candidate that does not pass unmutated in the batch's own control run gets no
    // verdict from it.
    let failing = batch_candidate(&py, repo.path(), &test.replace("== 1", "== 0"), &[]);
    assert!(failing
        .run_mutants_warm(&sb, &pool, &mutants, &limits)
        .iter()
        .all(Option::is_none));
    // Each verdict the batch gave is a cold run's of its own.
    for (mutant, passed) in mutants.iter().zip(&batched) {
        let Some(passed) = passed else { continue };
        let cold = PytestRun {
            files: vec![candidate.clone(), mutant.clone()],
            env: vec![("PYTEST_ADDOPTS".into(), "-x".into())],
            ..run.clone()
        }
        .run(&sb)
        .unwrap();
        assert_eq!(
            cold.outcome == Outcome::Passed,
            *passed,
            "{:?}",
            mutant.path
        );
    }
}

/// A candidate's measured run and its mutants in one request (`run_warm_measuring_mutants`,
/// what `clover sandbox-run --mutation` does warm): the candidate's result is its plain warm
/// run's and its cold run's (tests, coverage — the worker that notes what runs must not run
/// a proxy's code while it looks for functions —, and none of the mutants' output), and the
/// verdicts are those of a batch of their own. A candidate that fails judges no mutant; one
/// whose collection leaves a thread running (a fork would not have it) runs as a plain run
/// and leaves the mutants to a batch, as one does whose mutant runs out of memory (the
/// cgroup's counters cannot say whose run that was).
#[test]
fn a_measured_run_judges_its_mutants_in_the_same_request() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let m = "class Proxy:\n    @property\n    def __class__(self):\n        return type(None)\n\n\nP = Proxy()\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return 'g'\n\n\nTABLE = [g()]\n";
    let lazy = "def z():\n    return 9\n";
    let repo = batch_repo(&[("pkg/m.py", m), ("pkg/lazy.py", lazy)]);
    let test = "import pkg.m\n\n\ndef test_all():\n    print('the candidate speaks')\n    assert pkg.m.f() == 1\n    from pkg import lazy\n\n    assert lazy.z() == 9\n";
    let file = text_file;
    let mutants = vec![
        file("pkg/m.py", m.replace("return 1", "return 2")),
        file("pkg/m.py", m.replace("return 1", "return 1 + 0")),
        file("pkg/m.py", m.replace("return 'g'", "return 'h'")),
        file("pkg/lazy.py", lazy.replace("return 9", "return 8")),
    ];
    let run = |text: &str| batch_candidate(&py, repo.path(), text, &["pkg"]);
    let limits = mutant_limits();
    let pool = WarmPool::new();
    let candidate = run(test);
    let cold = candidate.run(&sb).unwrap();
    assert_eq!(cold.outcome, Outcome::Passed, "{:?}", cold.message);
    let plain = candidate.run_warm(&sb, &WarmPool::new()).unwrap();
    assert_eq!(verdict(&plain), verdict(&cold));
    for _ in 0..2 {
        let (r, verdicts) = candidate
            .run_warm_measuring_mutants(&sb, &pool, &mutants, &limits)
            .unwrap();
        assert!(r.message.is_none(), "{:?}", r.message);
        assert_eq!(verdict(&r), verdict(&cold));
        let verdicts = verdicts.expect("the measured run's request judged the mutants");
        assert_eq!(
            passed(&verdicts),
            [Some(false), Some(true), None, Some(false)]
        );
        assert_eq!(
            passed(&candidate.run_mutants_warm(&sb, &WarmPool::new(), &mutants, &limits)),
            passed(&verdicts)
        );
        // The killed mutants' runs failed loudly; none of it is the candidate's output.
        let out = r.run.stdout.text() + &r.run.stderr.text();
        assert!(
            !out.contains("the candidate speaks") && !out.contains("FAILED"),
            "{out}"
        );
    }
    // A mutant that runs out of memory: the worker's cgroup counts the kill, and cannot say
    // whose run it was; the candidate's own run goes again alone, and is its plain run.
    let hungry = [text_file(
        "pkg/m.py",
        m.replace("return 1", "return len(b'x' * (3 << 27)) and 1"),
    )];
    // A mutant's CPU budget is three times the candidate's CPU time and 0.25 s: this
    // candidate spends 0.3 s of CPU after its call, so that the mutant, which fails in the
    // call, reaches the memory limit well within its budget even while the kernel reclaims
    // on a loaded machine (with the plain test it was sometimes stopped by the budget).
    let spending = "import time\n\nimport pkg.m\n\n\ndef test_f():\n    assert pkg.m.f() == 1\n    t = time.process_time()\n    while time.process_time() - t < 0.3:\n        pass\n";
    let small = PytestRun {
        limits: Limits {
            memory_bytes: 256 << 20,
            ..candidate.limits.clone()
        },
        ..run(spending)
    };
    let (r, verdicts) = small
        .run_warm_measuring_mutants(&sb, &pool, &hungry, &limits)
        .unwrap();
    assert_eq!(r.run.limit_hit, None, "{:?}", r.message);
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    assert_eq!(verdict(&r), verdict(&small.run(&sb).unwrap()));
    assert!(verdicts.is_none(), "{verdicts:?}");
    // A candidate that fails is answered as its plain run, and judges no mutant.
    let failing = run(&test.replace("== 1", "== 0"));
    let (r, verdicts) = failing
        .run_warm_measuring_mutants(&sb, &pool, &mutants, &limits)
        .unwrap();
    assert_eq!(r.outcome, Outcome::Failed);
    assert_eq!(verdict(&r), verdict(&failing.run(&sb).unwrap()));
    assert!(verdicts.unwrap_or_default().iter().all(Option::is_none));
    // A thread left running by the collection: the worker runs the candidate as a plain run.
    let threaded = run(&format!(
        "import threading\nimport time\n\nthreading.Thread(target=time.sleep, args=(2,), daemon=True).start()\n{test}"
    ));
    let (r, verdicts) = threaded
        .run_warm_measuring_mutants(&sb, &pool, &mutants, &limits)
        .unwrap();
    assert!(verdicts.is_none());
    assert_eq!(verdict(&r), verdict(&threaded.run(&sb).unwrap()));
}

/// A run that stops at its first failure (`-x`, as a mutant's run does) ends as pytest's main
/// ends it, tests failed, warm as cold (it was an internal error in the worker), and with the
/// coverage report pytest-cov leaves then: none.
#[test]
fn a_run_stopped_at_its_first_failure_fails_warm_as_cold() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let mut run = candidate(
        &py,
        "tests/test_clover_candidate.py",
        "def test_a():\n    assert False\n\n\ndef test_b():\n    assert True\n",
    );
    run.env = vec![("PYTEST_ADDOPTS".into(), "-x".into())];
    let cold = run.run(&sb).unwrap();
    assert_eq!(cold.outcome, Outcome::Failed, "{:?}", cold.message);
    let warm = run.run_warm(&sb, &WarmPool::new()).unwrap();
    // pytest-cov writes no report when the loop stops early: neither does the worker.
    assert_eq!(warm.message, cold.message);
    assert_eq!(verdict(&warm), verdict(&cold));
}

/// A repository of tests in folders, for the candidates of [`folders_`] tests: pytest's
/// configuration at the top, a conftest with a fixture in `tests`, one in `tests/own` with a
/// fixture of its own, and one in `tests/test_marked` (a `test*` folder, which pytest
/// configured with the folder `tests` loads first, and a cold run of a file in `tests` never
/// loads) that makes every test a strict expected failure.
fn folders_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_tree(
        dir.path(),
        &[
            ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = \"-ra\"\n"),
            (
                "tests/conftest.py",
                "import pytest\n\n@pytest.fixture\ndef seven():\n    return 7\n",
            ),
            ("tests/sub/test_there.py", "def test_there(seven):\n    assert seven == 7\n"),
            (
                "tests/own/conftest.py",
                "import pytest\n\n@pytest.fixture\ndef eight():\n    return 8\n",
            ),
            (
                "tests/test_marked/conftest.py",
                "import pytest\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n        item.add_marker(pytest.mark.xfail(strict=True))\n",
            ),
        ],
    );
    dir
}

fn folders_candidate(
    py: &std::path::Path,
    repo: &std::path::Path,
    path: &str,
    text: &str,
) -> PytestRun {
    PytestRun {
        repo: repo.to_path_buf(),
        cov_sources: Vec::new(),
        ..candidate(py, path, text)
    }
}

/// A worker configured with its candidate's folder loaded the conftests of that folder's
/// `test*` subfolders too, which a cold run of the candidate's file never loads: a hook of
/// one (here marking every test a strict expected failure) changed the warm verdict. The
/// worker now sees that the cold run's initial conftests differ from its own, and a worker
/// configured per run serves the candidate, with the cold verdict.
#[test]
fn a_conftest_of_a_test_subfolder_does_not_reach_a_candidate_above_it() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let repo = folders_repo();
    let run = folders_candidate(
        &py,
        repo.path(),
        "tests/test_clover_candidate.py",
        "def test_seven(seven):\n    assert seven == 7\n",
    );
    passes_warm_as_cold(&run, &sb);
}

/// Candidates of other folders than a worker's are served by it when pytest would configure
/// their cold runs as it did (the same rootdir and configuration file, the same initial
/// conftests): one worker serves `tests/sub` after `tests/sub/deeper` and a folder pytest
/// has not seen; a folder with a conftest of its own gets a worker of its own. Every verdict
/// is the cold run's.
#[test]
fn a_worker_serves_the_folders_whose_runs_pytest_configures_alike() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let repo = folders_repo();
    let pool = WarmPool::new();
    let mut started = Vec::new();
    for (path, text) in [
        (
            "tests/sub/deeper/test_clover_a.py",
            "def test_a(seven):\n    assert seven == 7\n",
        ),
        (
            "tests/sub/test_clover_b.py",
            "def test_b(seven):\n    assert seven + 1 == 8\n",
        ),
        (
            "tests/sub/new/test_clover_c.py",
            "def test_c(seven):\n    assert seven\n",
        ),
        (
            "tests/own/test_clover_d.py",
            "def test_d(seven, eight):\n    assert (seven, eight) == (7, 8)\n",
        ),
        (
            "tests/sub/test_clover_e.py",
            "def test_e(eight):\n    assert eight\n",
        ),
    ] {
        let run = folders_candidate(&py, repo.path(), path, text);
        let cold = run.run(&sb).unwrap();
        let warm = run.run_warm(&sb, &pool).unwrap();
        assert!(warm.message.is_none(), "{path}: {:?}", warm.message);
        assert_eq!(verdict(&warm), verdict(&cold), "{path}");
        started.push(pool.workers_started());
        // The last one asks for the fixture of a conftest it does not see.
        let want = if path.ends_with("_e.py") {
            Outcome::Error
        } else {
            Outcome::Passed
        };
        assert_eq!(cold.outcome, want, "{path}: {:?}", cold.tests);
    }
    assert_eq!(started, [1, 1, 1, 2, 2]);
}

/// A batch stops a mutant's run when it has spent three times the control run's CPU time
/// and a quarter of a second more: a loop that never ends is killed without waiting out the
/// wall clock, while a run that waits (half a second asleep, more than that CPU budget but
/// well within the wall clock's three times the control run and a second) is not stopped,
/// and survives as on its own.
#[test]
fn a_batch_stops_a_mutant_that_spins_not_one_that_waits() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let m = "def f(n):\n    i = 0\n    while i < n:\n        i += 1\n    return i\n";
    let repo = batch_repo(&[("pkg/m.py", m)]);
    let mutants = [
        m.replace("i += 1", "i += 0"),
        m.replace("return i", "return __import__('time').sleep(0.5) or i"),
    ]
    .map(|text| text_file("pkg/m.py", text));
    let test = "import pkg.m\n\n\ndef test_f():\n    assert pkg.m.f(3) == 3\n";
    let run = batch_candidate(&py, repo.path(), test, &[]);
    let verdicts = run.run_mutants_warm(&sb, &WarmPool::new(), &mutants, &mutant_limits());
    assert_eq!(passed(&verdicts), [Some(false), Some(true)]);
    // On its own, the sleeping mutant passes too.
    let mut own = run.clone();
    own.files.push(mutants[1].clone());
    assert_eq!(own.run(&sb).unwrap().outcome, Outcome::Passed);
}

/// Runs pytest in-process on `target` in `repo` with the worker's plugin, its folder
/// listings pruned (`prune`) or not, and returns the ids of every node pytest made and its
/// exit status: what the worker's forks do when they collect, without the sandbox.
fn nodes_made(
    py: &std::path::Path,
    repo: &std::path::Path,
    target: &str,
    prune: bool,
) -> Vec<String> {
    let script = r#"
import json, sys
sys.path.insert(0, sys.argv[1])
import pytest, _pytest.nodes
import _clover_worker

zygote = _clover_worker.Zygote.__new__(_clover_worker.Zygote)
zygote.setup, zygote.cov, zygote.config, zygote.collecting = {}, None, None, None
if sys.argv[3] == "prune":
    zygote.prune_listings()
made = []
init = _pytest.nodes.Node.__init__

def counting(self, *args, **kwargs):
    init(self, *args, **kwargs)
    made.append(self.nodeid)

_pytest.nodes.Node.__init__ = counting
code = pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[2]], plugins=[zygote.start_coverage()])
assert code == 0, code
sys.__stdout__.write("\n" + json.dumps(made) + "\n")
"#;
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let out = std::process::Command::new(py)
        .args(["-c", script])
        .arg(&src)
        .arg(target)
        .arg(if prune { "prune" } else { "all" })
        .current_dir(repo)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

/// pytest collects a file argument by listing each folder on the way to it and making a node
/// of every entry, which it then drops: the worker's listings keep only the way (a sixth of a
/// warm run's work on flask). The same tests are collected and run; the siblings and the
/// folders beside the way are never made. Where a project's hook would be asked about the
/// entries (`pytest_collect_file` in a conftest), every entry is listed, as cold.
#[test]
fn a_candidate_s_folders_list_only_the_way_to_it_unless_a_project_hook_would_see_them() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let repo = tempfile::tempdir().unwrap();
    write_tree(
        repo.path(),
        &[
            ("pytest.ini", "[pytest]\n"),
            ("docs/test_docs.py", "def test_docs():\n    pass\n"),
            ("tests/test_a.py", "def test_a():\n    pass\n"),
            ("tests/test_b.py", "def test_b():\n    pass\n"),
            ("tests/unit/test_c.py", "def test_c():\n    pass\n"),
            ("tests/unit/test_d.py", "def test_d():\n    pass\n"),
        ],
    );
    let target = "tests/unit/test_c.py";
    let all = nodes_made(&py, repo.path(), target, false);
    let pruned = nodes_made(&py, repo.path(), target, true);
    for sibling in ["tests/test_a.py", "tests/unit/test_d.py", "docs"] {
        assert!(
            all.iter().any(|n| n == sibling),
            "{sibling} not made unpruned: {all:?}"
        );
        assert!(
            !pruned.iter().any(|n| n == sibling),
            "{sibling} made pruned: {pruned:?}"
        );
    }
    for wanted in ["tests/unit/test_c.py", "tests/unit/test_c.py::test_c"] {
        assert!(
            pruned.iter().any(|n| n == wanted),
            "{wanted} not made: {pruned:?}"
        );
    }
    // A folder that is an argument is listed whole.
    let whole = nodes_made(&py, repo.path(), "tests/unit", true);
    assert!(
        whole.iter().any(|n| n == "tests/unit/test_d.py::test_d"),
        "{whole:?}"
    );
    assert!(!whole.iter().any(|n| n == "tests/test_a.py"), "{whole:?}");

    write_tree(
        repo.path(),
        &[(
            "tests/conftest.py",
            "def pytest_collect_file(file_path, parent):\n    return None\n",
        )],
    );
    let hooked = nodes_made(&py, repo.path(), target, true);
    assert!(hooked.iter().any(|n| n == "tests/test_a.py"), "{hooked:?}");
}

/// A conftest's `pytest_collect_file` is asked about every file of the folders a cold run
/// lists, siblings of the candidate included: warm, it is asked about the same files (the
/// candidate fails if the hook did not see its sibling).
#[test]
fn a_project_s_collection_hook_sees_every_file_warm_as_cold() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let repo = tempfile::tempdir().unwrap();
    write_tree(
        repo.path(),
        &[
            ("pytest.ini", "[pytest]\n"),
            (
                "tests/conftest.py",
                "import os\n\n\ndef pytest_collect_file(file_path, parent):\n    os.environ['CLOVER_SEEN'] = os.environ.get('CLOVER_SEEN', '') + ' ' + file_path.name\n",
            ),
            ("tests/test_a.py", "def test_a():\n    pass\n"),
        ],
    );
    let run = folders_candidate(
        &py,
        repo.path(),
        "tests/test_clover_candidate.py",
        "import os\n\n\ndef test_saw_its_sibling():\n    assert 'test_a.py' in os.environ['CLOVER_SEEN'].split()\n",
    );
    passes_warm_as_cold(&run, &sb);
}

/// On a Python with `sys.monitoring` (3.12 or later), coverage.py's `sysmon` core reports the
/// lines its C tracer does: each test file of the fixture, measuring the whole package and
/// measuring one file, runs cold with the C tracer, then cold and warm with `sysmon` (as
/// `measure_with_sysmon` asks where the interpreter's check says so), with the same verdicts,
/// tests and lines. A test of the candidate's own says which core measured it.
#[test]
fn coverage_s_sys_monitoring_core_reports_the_c_tracer_s_lines_warm_and_cold() {
    let Some(py) = clover_testkit::sysmon_python() else {
        return;
    };
    let Some(sb) = sandbox() else { return };
    let tools = clover_pytest::check_python(&sb, &py, &fixture()).unwrap();
    assert!(tools.sysmon(), "{tools}");
    let probe = "\n\nimport os as _os\nimport coverage as _coverage\n\n\n\
                 def test_clover_core():\n\
                 \x20   core = type(_coverage.Coverage.current()._collector.tracers[0]).__name__\n\
                 \x20   want = {'sysmon': 'SysMonitor'}.get(_os.environ.get('COVERAGE_CORE'), 'CTracer')\n\
                 \x20   assert core == want, core\n";
    let pool = WarmPool::new();
    for name in FIXTURE_TESTS {
        let text = std::fs::read_to_string(fixture().join("tests").join(name)).unwrap() + probe;
        for only in [None, Some(vec!["src/ledger/money.py".to_string()])] {
            let mut run = candidate(&py, "tests/test_clover_candidate.py", &text);
            run.cov_only = only.clone();
            let ctrace = run.run(&sb).unwrap();
            assert_eq!(
                ctrace.outcome,
                Outcome::Passed,
                "{name}: {:?}",
                ctrace.message
            );
            assert!(!ctrace.coverage.is_empty(), "{name} {only:?}");
            run.measure_with_sysmon(&tools);
            assert!(run
                .env
                .iter()
                .any(|(k, v)| k == "COVERAGE_CORE" && v == "sysmon"));
            let cold = run.run(&sb).unwrap();
            assert_eq!(verdict(&cold), verdict(&ctrace), "{name} {only:?}");
            let warm = run.run_warm(&sb, &pool).unwrap();
            assert!(warm.message.is_none(), "{name}: {:?}", warm.message);
            assert_eq!(verdict(&warm), verdict(&ctrace), "{name} {only:?}");
        }
    }
}
