//! Measurements behind `cargo xtask bench` (run as root, release build):
//!
//! ```text
//! sandbox_bench spawn  N REPO            # /bin/true: bare fork+exec, the sandbox, bubblewrap
//! sandbox_bench pytest N REPO PYTHON TESTFILE SRC  # one pytest file, bare and sandboxed
//! ```
//!
//! Each prints one JSON object of medians (microseconds). The variants run interleaved, one
//! of each per round, so a noisy neighbour slows them alike.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clover_sandbox::pytest::PytestRun;
use clover_sandbox::{Limits, RunSpec, Sandbox};

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
        cov_contexts: false,
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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = |s: &str| s.parse::<usize>().expect("a count");
    let abs = |s: &str| std::path::absolute(s).expect("a path");
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["spawn", count, repo] => spawn(n(count), &abs(repo)),
        ["pytest", count, repo, python, test_file, src] => {
            pytest(n(count), &abs(repo), &abs(python), test_file, src)
        }
        _ => {
            eprintln!("usage: sandbox_bench spawn N REPO | pytest N REPO PYTHON TESTFILE SRC");
            std::process::exit(2);
        }
    }
}
