//! Measurements behind `cargo xtask bench` (run as root, release build):
//!
//! ```text
//! sandbox_bench spawn  N REPO            # /bin/true: bare fork+exec, the sandbox, bubblewrap
//! sandbox_bench pytest N REPO PYTHON TESTFILE SRC  # one pytest file, bare and sandboxed
//! sandbox_bench gtest  N MANIFEST NAME TESTFILE…   # C++ test files, bare and sandboxed
//! ```
//!
//! Each prints one JSON object of medians (microseconds). The variants run interleaved, one
//! of each per round, so a noisy neighbour slows them alike.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clover_gtest::{CppProject, GtestRun, LibraryCache};
use clover_pytest::PytestRun;
use clover_report::parse_junit;
use clover_sandbox::{Limits, RunSpec, Sandbox, WriteFile};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

/// bubblewrap with the same kinds of isolation: every namespace, a read-only system, fresh
/// /proc, /dev and /tmp, the repository read-only.
fn bwrap_command(repo: &Path) -> Command {
    let mut c = Command::new("bwrap");
    c.args(["--unshare-all", "--die-with-parent", "--new-session"]);
    c.args(["--ro-bind", "/usr", "/usr"]);
    for d in ["/bin", "/sbin", "/lib", "/lib64"] {
        match std::fs::read_link(d) {
            Ok(target) => {
                c.arg("--symlink").arg(target).arg(d);
            }
            Err(_) if Path::new(d).is_dir() => {
                c.args(["--ro-bind", d, d]);
            }
            Err(_) => {}
        }
    }
    c.args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);
    c.arg("--ro-bind").arg(repo).arg(repo);
    c.args(["--chdir", "/", "/bin/true"]);
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

fn spawn(n: usize, repo: &Path) {
    let sb = Sandbox::new().expect("the sandbox needs root");
    let spec = RunSpec::new(repo, ["/bin/true"]);
    let has_bwrap = bwrap_command(repo).status().is_ok_and(|s| s.success());
    // Warm up: page cache, cgroup hierarchy, the first namespace of each kind.
    for _ in 0..3 {
        sb.run(&spec).expect("sandboxed /bin/true");
    }
    let (mut bare, mut sand, mut bwrap) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        bare.push(time(|| {
            let st = Command::new("/bin/true").status().expect("/bin/true");
            assert!(st.success());
        }));
        sand.push(time(|| {
            let out = sb.run(&spec).expect("sandboxed /bin/true");
            assert!(out.exit.success());
        }));
        if has_bwrap {
            bwrap.push(time(|| {
                let st = bwrap_command(repo).status().expect("bwrap");
                assert!(st.success());
            }));
        }
    }
    // Back to back: bursts of runs with nothing in between, so prepared supervisors are
    // used up as fast as they are made; the time per run of a burst, bare and sandboxed.
    let burst = 20;
    let (mut bare_b2b, mut sand_b2b) = (Vec::new(), Vec::new());
    for _ in 0..(n / burst).max(3) {
        bare_b2b.push(
            time(|| {
                for _ in 0..burst {
                    let st = Command::new("/bin/true").status().expect("/bin/true");
                    assert!(st.success());
                }
            }) / burst as u32,
        );
        sand_b2b.push(
            time(|| {
                for _ in 0..burst {
                    let out = sb.run(&spec).expect("sandboxed /bin/true");
                    assert!(out.exit.success());
                }
            }) / burst as u32,
        );
    }
    let bwrap = if has_bwrap {
        median(bwrap).to_string()
    } else {
        "null".into()
    };
    println!(
        "{{\"n\":{n},\"bare_us\":{:.1},\"sandbox_us\":{:.1},\"bwrap_us\":{bwrap},\
         \"bare_b2b_us\":{:.1},\"sandbox_b2b_us\":{:.1}}}",
        median(bare),
        median(sand),
        median(bare_b2b),
        median(sand_b2b)
    );
}

fn pytest(n: usize, repo: &Path, python: &Path, test_file: &str, src: &str) {
    let sb = Sandbox::new().expect("the sandbox needs root");
    let run = PytestRun {
        repo: repo.to_path_buf(),
        python: python.to_path_buf(),
        targets: vec![test_file.into()],
        files: Vec::new(),
        cov_sources: vec![src.into()],
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: Vec::new(),
        limits: Limits::default(),
    };
    let scratch = tempfile::tempdir().expect("a temporary folder");
    let out = scratch.path();
    // The same pytest command line, run on the host in the repository, reports elsewhere.
    let bare_cmd = || {
        let mut c = Command::new(python);
        c.args(["-m", "pytest", "-p", "no:cacheprovider", "-q"])
            .args(["-o", "junit_family=xunit1"])
            .arg(format!("--junitxml={}", out.join("junit.xml").display()))
            .arg(format!("--cov={src}"))
            .arg(format!(
                "--cov-report=xml:{}",
                out.join("coverage.xml").display()
            ))
            .arg(test_file)
            .current_dir(repo)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", out)
            .env("COVERAGE_FILE", out.join(".coverage"))
            .env("TZ", "UTC")
            .env("LC_ALL", "C.UTF-8")
            .env("PYTHONHASHSEED", "0")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    for _ in 0..2 {
        bare_cmd().status().expect("bare pytest");
        run.run(&sb).expect("sandboxed pytest");
    }
    let (mut bare, mut sand) = (Vec::new(), Vec::new());
    let mut outcomes = (None, None);
    for _ in 0..n {
        bare.push(time(|| {
            let st = bare_cmd().status().expect("bare pytest");
            outcomes.0 = st.code();
        }));
        sand.push(time(|| {
            let r = run.run(&sb).expect("sandboxed pytest");
            outcomes.1 = r.run.exit.code();
        }));
    }
    assert_eq!(outcomes.0, outcomes.1, "bare and sandboxed runs disagree");
    println!(
        "{{\"n\":{n},\"bare_us\":{:.1},\"sandbox_us\":{:.1}}}",
        median(bare),
        median(sand)
    );
}

/// One candidate (`test_file`'s text, written as a new file) run cold and in a warm worker,
/// interleaved: the wall time of each, and the tests' own time (the sum of the durations in
/// the report). The verdicts, tests and coverage of the two must agree.
fn warm(n: usize, repo: &Path, python: &Path, test_file: &str, src: &str) {
    let sb = Sandbox::new().expect("the sandbox needs root");
    let text = std::fs::read(repo.join(test_file)).expect("the test file");
    let candidate = Path::new(test_file).with_file_name("test_clover_bench_candidate.py");
    let run = PytestRun {
        repo: repo.to_path_buf(),
        python: python.to_path_buf(),
        targets: vec![candidate.display().to_string()],
        files: vec![clover_sandbox::WriteFile {
            path: candidate,
            contents: text,
        }],
        cov_sources: vec![src.into()],
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: Vec::new(),
        limits: Limits::default(),
    };
    let pool = clover_pytest::WarmPool::new();
    let same = |r: &clover_pytest::PytestResult| {
        let tests: Vec<_> = r
            .tests
            .iter()
            .map(|t| (t.name.clone(), t.outcome))
            .collect();
        (r.outcome, tests, r.coverage.clone())
    };
    let first = run.run_warm(&sb, &pool).expect("a warm run");
    assert!(first.message.is_none(), "{:?}", first.message);
    let (mut cold, mut warm, mut own) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let mut c = None;
        cold.push(time(|| c = Some(run.run(&sb).expect("a cold run"))));
        let mut w = None;
        warm.push(time(|| {
            w = Some(run.run_warm(&sb, &pool).expect("a warm run"))
        }));
        let (c, w) = (c.expect("ran"), w.expect("ran"));
        assert_eq!(same(&c), same(&w), "the cold and the warm run disagree");
        own.push(Duration::from_secs_f64(
            w.tests.iter().map(|t| t.duration_secs).sum::<f64>(),
        ));
    }
    println!(
        "{{\"n\":{n},\"cold_us\":{:.1},\"warm_us\":{:.1},\"own_us\":{:.1}}}",
        median(cold),
        median(warm),
        median(own)
    );
}

/// `words` as one shell command line.
fn sh(words: &[&str]) -> String {
    let quote = |w: &str| format!("'{}'", w.replace('\'', r"'\''"));
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// C++ test files of a manifest's repository, each compiled with the library under test
/// (`--coverage`), run and measured with gcovr: bare on the host, in a fresh copy of the
/// repository, with the sandbox's own commands (the run without a network, `unshare -n`);
/// and sandboxed, `GtestRun::run` with an empty library cache. Both build the library from
/// its sources, so each does the same work; sandbox-run itself builds a repository's library
/// once and reuses it.
fn gtest(n: usize, manifest: &Path, name: &str, tests: &[&str]) {
    let sb = Sandbox::new().expect("the sandbox needs root");
    let cfg = clover_manifest::RepoConfig::resolve(Some(manifest), Some(name), None)
        .expect("the manifest")
        .remove(0);
    let project = CppProject::from_config(&cfg);
    let limits = Limits {
        wall: Duration::from_secs(600),
        cpu_secs: 600,
        ..Limits::default()
    };
    let sources: Vec<String> = {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let cache = LibraryCache::new(dir.path()).expect("a library cache");
        let lib = cache.library(&sb, &project, &limits).expect("the library");
        lib.sources().map(|p| p.display().to_string()).collect()
    };
    let includes: Vec<String> = cfg
        .include_dirs
        .iter()
        .map(|d| format!("-I{}", d.display()))
        .collect();
    let links: Vec<String> = project.link.iter().map(|l| format!("-l{l}")).collect();
    let compile = |extra: &[&str]| -> Vec<String> {
        std::iter::once(project.cxx.as_str())
            .chain(project.cxxflags.iter().map(String::as_str))
            .chain(includes.iter().map(String::as_str))
            .chain(extra.iter().copied())
            .map(String::from)
            .collect()
    };
    // The three steps of a sandboxed run, as shell scripts run in the copy.
    let scripts = |test: &str| -> [String; 3] {
        let mut lib = String::from("set -e\nmkdir -p .clover-build/lib .clover-out\n");
        let mut objects = Vec::new();
        for src in &sources {
            let obj = format!(".clover-build/lib/{}.o", src.replace('/', "__"));
            let words = compile(&["--coverage", "-c", src, "-o", &obj]);
            lib.push_str(&sh(&words.iter().map(String::as_str).collect::<Vec<_>>()));
            lib.push('\n');
            objects.push(obj);
        }
        let cand = compile(&["-c", test, "-o", ".clover-build/candidate.o"]);
        let mut link = compile(&[".clover-build/candidate.o"]);
        link.extend(objects);
        link.extend(["--coverage", "-o", ".clover-build/candidate-test"].map(String::from));
        link.extend(links.iter().cloned());
        let words = |v: &[String]| sh(&v.iter().map(String::as_str).collect::<Vec<_>>());
        let run = format!(
            "set -e\n{}\n{}\nexec unshare -n ./.clover-build/candidate-test \
             --gtest_output=xml:.clover-out/gtest.xml\n",
            words(&cand),
            words(&link)
        );
        let gcovr = "gcovr --root . --cobertura .clover-out/coverage.xml .clover-build/lib".into();
        [lib, run, gcovr]
    };
    let env: Vec<(String, String)> = cfg.env.clone().into_iter().collect();
    let copies = tempfile::tempdir().expect("a temporary folder");
    let mut copy_no = 0;
    let mut bare_run = |test: &str| -> (Duration, usize) {
        copy_no += 1;
        let copy = copies.path().join(copy_no.to_string());
        let st = Command::new("cp")
            .arg("-a")
            .arg(&cfg.root)
            .arg(&copy)
            .status()
            .expect("cp");
        assert!(st.success(), "copying {}", cfg.root.display());
        let t = Instant::now();
        for (step, script) in scripts(test).iter().enumerate() {
            let st = Command::new("/bin/sh")
                .args(["-c", script])
                .current_dir(&copy)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("/bin/sh");
            // The test binary may fail on purpose; the builds and gcovr may not.
            assert!(step == 1 || st.success(), "bare step {step} of {test}");
        }
        let elapsed = t.elapsed();
        let xml = std::fs::read(copy.join(".clover-out/gtest.xml")).expect("the bare report");
        let cov = copy.join(".clover-out/coverage.xml");
        assert!(cov.exists(), "bare gcovr of {test} wrote no report");
        std::fs::remove_dir_all(&copy).expect("removing the copy");
        (elapsed, parse_junit(&xml).expect("the bare report").len())
    };
    let sandboxed_run = |test: &str| -> (Duration, usize) {
        let cache_dir = tempfile::tempdir().expect("a temporary folder");
        let run = GtestRun {
            project: &project,
            test_file: WriteFile {
                path: test.into(),
                contents: std::fs::read(cfg.root.join(test)).expect("the test file"),
            },
            filter: Vec::new(),
            limits: limits.clone(),
        };
        let t = Instant::now();
        let cache = LibraryCache::new(cache_dir.path()).expect("a library cache");
        let r = run.run(&sb, &cache).expect("the sandboxed run");
        let elapsed = t.elapsed();
        assert!(
            !r.coverage.is_empty(),
            "sandboxed run of {test}: no coverage"
        );
        (elapsed, r.tests.len())
    };
    let (mut bare, mut sand) = (Vec::new(), Vec::new());
    for round in 0..=n {
        let (mut b, mut s) = (Duration::ZERO, Duration::ZERO);
        for test in tests {
            let (bt, bn) = bare_run(test);
            let (st, sn) = sandboxed_run(test);
            assert_eq!(
                bn, sn,
                "{test}: bare and sandboxed runs ran different tests"
            );
            assert!(bn > 0, "{test}: no tests ran");
            (b, s) = (b + bt, s + st);
        }
        // Round 0 warms the page cache and the compiler.
        if round > 0 {
            bare.push(b);
            sand.push(s);
        }
    }
    println!(
        "{{\"n\":{n},\"bare_us\":{:.1},\"sandbox_us\":{:.1}}}",
        median(bare),
        median(sand)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = |s: &str| s.parse::<usize>().expect("a count");
    let abs = |s: &str| std::path::absolute(s).expect("a path");
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["spawn", count, repo] => spawn(n(count), &abs(repo)),
        ["pytest", count, repo, python, test_file, src] => {
            pytest(n(count), &abs(repo), &abs(python), test_file, src)
        }
        ["warm", count, repo, python, test_file, src] => {
            warm(n(count), &abs(repo), &abs(python), test_file, src)
        }
        ["gtest", count, manifest, name, ref tests @ ..] if !tests.is_empty() => {
            gtest(n(count), &abs(manifest), name, tests)
        }
        _ => {
            eprintln!(
                "usage: sandbox_bench spawn N REPO | pytest N REPO PYTHON TESTFILE SRC \
                 | warm N REPO PYTHON TESTFILE SRC \
                 | gtest N MANIFEST NAME TESTFILE…"
            );
            std::process::exit(2);
        }
    }
}
