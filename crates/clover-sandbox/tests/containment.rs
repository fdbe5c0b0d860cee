//! Hostile payloads run through the sandbox. Each test asserts the verdict, then that the
//! payload was contained: no process of the run is left, and the repository is unchanged.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use clover_protocol::{LimitHit, Outcome};
use clover_sandbox::pytest::{PytestResult, PytestRun};
use clover_sandbox::{Collected, ExitStatus, Limits, RunOutput, RunSpec, Sandbox, WriteFile};

fn sandbox() -> Option<&'static Sandbox> {
    static SB: OnceLock<Result<Sandbox, String>> = OnceLock::new();
    match SB.get_or_init(|| Sandbox::new().map_err(|e| e.to_string())) {
        Ok(sb) => Some(sb),
        Err(e) => clover_testkit::require(&format!("the sandbox ({e})"), None),
    }
}

/// A small repository with a nested directory and a symlink.
fn make_repo() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("sbx-repo-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    std::fs::write(dir.path().join("pkg/mod.py"), "X = 1\n").unwrap();
    std::fs::write(dir.path().join("file.txt"), "original\n").unwrap();
    std::os::unix::fs::symlink("pkg/mod.py", dir.path().join("link.py")).unwrap();
    dir
}

fn tree_hash(root: &Path) -> u64 {
    fn walk(p: &Path, rel: &Path, h: &mut DefaultHasher) {
        let md = std::fs::symlink_metadata(p).unwrap();
        rel.hash(h);
        md.permissions().mode().hash(h);
        if md.file_type().is_symlink() {
            std::fs::read_link(p).unwrap().hash(h);
        } else if md.is_dir() {
            let mut names: Vec<_> = std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names.sort();
            for n in names {
                walk(&p.join(&n), &rel.join(&n), h);
            }
        } else {
            std::fs::read(p).unwrap().hash(h);
        }
    }
    let mut h = DefaultHasher::new();
    walk(root, Path::new(""), &mut h);
    h.finish()
}

/// Processes on the host running as the run's host uid.
fn processes_of(uid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(status) = std::fs::read_to_string(e.path().join("status")) {
            let uid_line = status.lines().find(|l| l.starts_with("Uid:"));
            if uid_line.is_some_and(|l| l.split_whitespace().nth(1) == Some(&uid.to_string())) {
                found.push(name);
            }
        }
    }
    found
}

struct Case {
    repo: tempfile::TempDir,
    hash: u64,
}

impl Case {
    fn new() -> Case {
        let repo = make_repo();
        let hash = tree_hash(repo.path());
        Case { repo, hash }
    }

    fn spec(&self, script: &str) -> RunSpec {
        let mut s = RunSpec::new(self.repo.path(), ["/bin/sh", "-c", script]);
        s.limits.wall = Duration::from_secs(20);
        s
    }

    fn run(&self, sb: &Sandbox, spec: &RunSpec) -> RunOutput {
        let out = sb.run(spec).expect("the run is carried out");
        eprintln!(
            "exit {:?} limit {:?} in {:?}\nstdout: {}\nstderr: {}",
            out.exit,
            out.limit_hit,
            out.duration,
            out.stdout.tail(2000),
            out.stderr.tail(2000)
        );
        self.assert_contained(&out);
        out
    }

    fn assert_contained(&self, out: &RunOutput) {
        let left = processes_of(out.host_uid);
        assert!(
            left.is_empty(),
            "processes of the run left behind: {left:?}"
        );
        assert_eq!(
            tree_hash(self.repo.path()),
            self.hash,
            "the repository changed"
        );
    }
}

fn python() -> Option<&'static str> {
    let p = "/usr/bin/python3";
    clover_testkit::require(p, Path::new(p).exists().then_some(p))
}

#[test]
fn runs_a_command_as_the_sandbox_user_in_the_repository() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let mut spec = c.spec("id -u; id -g; pwd; cat pkg/mod.py; cat tests/new.txt; echo changed > file.txt; touch -d @1 pkg/mod.py; stat -c '%u %Y' pkg/mod.py; echo new > new.txt; echo out > report.txt; echo $HOME $TZ $LC_ALL $PYTHONHASHSEED");
    spec.files.push(WriteFile {
        path: "tests/new.txt".into(),
        contents: b"written by the caller\n".to_vec(),
    });
    spec.collect = vec![
        "report.txt".into(),
        "file.txt".into(),
        "new.txt".into(),
        "missing.txt".into(),
    ];
    let out = c.run(sb, &spec);
    assert_eq!(out.exit, ExitStatus::Code(0));
    assert_eq!(out.limit_hit, None);
    let expected = format!(
        "65534\n65534\n{}\nX = 1\nwritten by the caller\n65534 1\n/tmp/home UTC C.UTF-8 0\n",
        c.repo.path().canonicalize().unwrap().display()
    );
    assert_eq!(out.stdout.text(), expected);
    assert_eq!(out.file("report.txt").unwrap().bytes(), Some(&b"out\n"[..]));
    // Checked-in files are the sandbox user's (an idmapped lower layer), as in a checkout of
    // its own: it may change them, in its own view only (`run` checks the repository).
    assert_eq!(
        out.file("file.txt").unwrap().bytes(),
        Some(&b"changed\n"[..])
    );
    assert_eq!(out.file("new.txt").unwrap().bytes(), Some(&b"new\n"[..]));
    assert_eq!(out.file("missing.txt"), Some(&Collected::Missing));
}

#[test]
fn concurrent_runs_do_not_see_each_others_files() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let outs: Vec<RunOutput> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|i| {
                let spec = c.spec(&format!(
                    "ls; echo {i} > mine.txt; echo {i} > /tmp/mine.txt; sleep 0.3; cat mine.txt /tmp/mine.txt"
                ));
                let c = &c;
                s.spawn(move || c.run(sb, &spec))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, out) in outs.iter().enumerate() {
        assert_eq!(out.exit, ExitStatus::Code(0), "{out:?}");
        assert_eq!(
            out.stdout.text(),
            format!("file.txt\nlink.py\npkg\n{i}\n{i}\n")
        );
    }
}

/// A file the run executes is written by the host while other threads clone supervisors; a
/// clone that inherited the file's descriptor open for writing would make the `exec` fail
/// with "Text file busy" (ETXTBSY). Many concurrent runs that each write and exec a large
/// file must all run it.
#[test]
fn files_written_for_a_run_can_be_executed_while_others_start() {
    let Some(_) = sandbox() else { return };
    // A sandbox of its own: its 100 runs would take the shared one's network namespaces,
    // whose reuse another test counts.
    let sb = &Sandbox::new().unwrap();
    let c = Case::new();
    let mut tool = b"#!/bin/sh\necho ran\n".to_vec();
    // A long file keeps its descriptor open longer while it is written.
    tool.extend(std::iter::repeat_n(b"# padding padding padding\n", 200_000).flatten());
    let failures: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let (c, tool) = (&c, &tool);
                s.spawn(move || {
                    let mut failed = Vec::new();
                    for _ in 0..25 {
                        let mut spec = c.spec("chmod u+x bin/tool && exec ./bin/tool");
                        spec.files = vec![WriteFile {
                            path: "bin/tool".into(),
                            contents: tool.clone(),
                        }];
                        let out = sb.run(&spec).expect("the run is carried out");
                        if out.exit != ExitStatus::Code(0) || out.stdout.text() != "ran\n" {
                            failed.push(format!("{:?}: {}", out.exit, out.stderr.tail(300)));
                        }
                    }
                    failed
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(
        failures.is_empty(),
        "{} of 100 runs: {failures:?}",
        failures.len()
    );
    assert_eq!(tree_hash(c.repo.path()), c.hash, "the repository changed");
}

/// The preparer builds roots ahead for repositories that may be deleted meanwhile (here,
/// right after their second run). That failure is the repository's, not the host's: later
/// runs still get the idmapped layer, so checked-in files stay the sandbox user's. (A race:
/// without the fix, about one run of this test in three caught it.)
#[test]
fn a_repository_deleted_under_the_preparer_costs_later_runs_nothing() {
    let Some(_) = sandbox() else { return };
    let sb = &Sandbox::new().unwrap();
    let owner = |c: &Case| {
        let out = c.run(sb, &c.spec("stat -c %u pkg/mod.py"));
        out.stdout.text()
    };
    for _ in 0..20 {
        let c = Case::new();
        assert_eq!(owner(&c), "65534\n");
        assert_eq!(owner(&c), "65534\n");
    }
    assert_eq!(owner(&Case::new()), "65534\n");
}

#[test]
fn fork_bomb_is_stopped_by_the_process_limit() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let mut spec = c.spec("bomb() { bomb | bomb & }; bomb; sleep 2; i=0; while [ $i -lt 200 ]; do sleep 60 & i=$((i+1)); done");
    spec.limits.pids = 32;
    let out = c.run(sb, &spec);
    assert!(!out.exit.success());
    assert_eq!(out.limit_hit, Some(LimitHit::Pids));
}

#[test]
fn memory_bomb_is_killed_by_the_memory_limit() {
    let Some(sb) = sandbox() else { return };
    let Some(py) = python() else { return };
    let c = Case::new();
    let mut spec = RunSpec::new(
        c.repo.path(),
        [
            py,
            "-c",
            "x = []\nwhile True:\n    x.append(b' ' * (16 << 20))\n",
        ],
    );
    spec.limits.memory_bytes = 128 << 20;
    let out = c.run(sb, &spec);
    assert_eq!(out.exit, ExitStatus::Signal(libc::SIGKILL));
    assert_eq!(out.limit_hit, Some(LimitHit::Memory));
}

#[test]
fn busy_loop_is_stopped_by_the_cpu_limit() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let mut spec = c.spec("while :; do :; done");
    spec.limits.cpu_secs = 1;
    let out = c.run(sb, &spec);
    assert_eq!(out.exit, ExitStatus::Signal(libc::SIGXCPU));
    assert_eq!(out.limit_hit, Some(LimitHit::CpuTime));
}

#[test]
fn sleeping_past_the_wall_clock_kills_the_whole_run() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let mut spec = c.spec("sleep 60 & (sleep 60 &); setsid sleep 60 & sleep 60");
    spec.limits.wall = Duration::from_millis(700);
    let out = c.run(sb, &spec);
    assert_eq!(out.exit, ExitStatus::Signal(libc::SIGKILL));
    assert_eq!(out.limit_hit, Some(LimitHit::WallClock));
}

#[test]
fn stdout_flood_is_capped_while_read() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let mut spec = c.spec("echo first; head -c 50000000 /dev/zero | tr '\\0' x; echo; echo last");
    spec.limits.output_bytes = 64 * 1024;
    let out = c.run(sb, &spec);
    assert_eq!(out.exit, ExitStatus::Code(0));
    assert_eq!(out.limit_hit, None);
    assert!(out.stdout.truncated);
    assert_eq!(
        out.stdout.total_bytes,
        50_000_000 + "first\n\nlast\n".len() as u64
    );
    assert!(out.stdout.bytes.len() < 65 * 1024);
    let text = out.stdout.text();
    assert!(text.starts_with("first\nxxx"));
    assert!(text.ends_with("xxx\nlast\n"));
}

#[test]
fn writes_outside_the_work_dir_never_reach_the_host() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let repo = c.repo.path().canonicalize().unwrap();
    let outside = repo.parent().unwrap().join(format!(
        "{}-evil",
        repo.file_name().unwrap().to_string_lossy()
    ));
    let script = format!(
        "for p in /usr/clover-evil /etc/clover-evil /clover-evil {o} /proc/clover-evil /dev/clover-evil; do \
           echo x > $p 2>/dev/null && echo wrote $p; done; \
         echo changed > file.txt && rm pkg/mod.py 2>/dev/null; rm link.py; echo done",
        o = outside.display()
    );
    let out = c.run(sb, &c.spec(&script));
    // The repository's parent is on the sandbox's own /tmp here, so that write may succeed.
    assert_eq!(
        out.stdout
            .text()
            .replace(&format!("wrote {}\n", outside.display()), ""),
        "done\n"
    );
    for p in ["/usr/clover-evil", "/etc/clover-evil", "/clover-evil"] {
        assert!(!Path::new(p).exists());
    }
    assert!(!outside.exists());
}

#[test]
fn filling_the_disk_ends_in_the_disk_limit() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    for target in ["/tmp/big", "big"] {
        let mut spec = c.spec(&format!("dd if=/dev/zero of={target} bs=1M count=64"));
        spec.limits.tmpfs_bytes = 8 << 20;
        spec.limits.overlay_bytes = 8 << 20;
        let out = c.run(sb, &spec);
        assert_eq!(out.exit, ExitStatus::Code(1), "{target}");
        assert_eq!(out.limit_hit, Some(LimitHit::Disk), "{target}");
        assert!(out.stderr.text().contains("No space left"));
    }
}

#[test]
fn large_files_end_in_the_file_size_limit() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let mut spec = c.spec("exec dd if=/dev/zero of=/tmp/big bs=1M count=4");
    spec.limits.file_size_bytes = 1 << 20;
    let out = c.run(sb, &spec);
    assert_eq!(out.exit, ExitStatus::Signal(libc::SIGXFSZ));
    assert_eq!(out.limit_hit, Some(LimitHit::FileSize));
}

#[test]
fn host_secrets_and_caller_environment_stay_out() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("secret.txt");
    std::fs::write(&secret, "TOPSECRET").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Even when the caller binds the directory by mistake, the sandbox user cannot read it.
    std::fs::set_permissions(secret_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: no other thread of this test binary reads this variable.
    std::env::set_var("CLOVER_SANDBOX_TEST_SECRET", "TOPSECRET");
    let mut spec = c.spec(&format!(
        "cat {s}; cat /etc/shadow; cat /proc/1/environ; echo \"[$CLOVER_SANDBOX_TEST_SECRET]\"; env",
        s = secret.display()
    ));
    spec.binds.push(secret_dir.path().to_path_buf());
    let out = c.run(sb, &spec);
    assert!(!out.stdout.text().contains("TOPSECRET"));
    assert!(out.stdout.text().contains("[]"));
    assert!(out.stderr.text().contains("Permission denied"));
}

#[test]
fn loopback_service_on_the_host_is_unreachable() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut spec = RunSpec::new(
        c.repo.path(),
        [
            "/bin/bash",
            "-c",
            &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        ],
    );
    spec.limits.wall = Duration::from_secs(20);
    let out = c.run(sb, &spec);
    assert_eq!(out.exit, ExitStatus::Code(1));
    assert!(out.stderr.text().contains("Connection refused"));
    assert!(listener.accept().is_err());
}

#[test]
fn only_loopback_is_visible() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let out = c.run(
        sb,
        &c.spec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"),
    );
    assert_eq!(out.exit, ExitStatus::Code(0));
    assert_eq!(out.stdout.text(), "lo\n");
}

#[test]
fn kill_minus_one_and_killing_the_parent_hurt_no_one_outside() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let mut bystander = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let spec =
        c.spec("sleep 30 & kill -9 -1; kill -9 $PPID; kill -9 1; kill -9 0; echo still here");
    let out = c.run(sb, &spec);
    // `kill -9 0` kills the payload's own process group, the shell included.
    assert_eq!(out.exit, ExitStatus::Signal(libc::SIGKILL));
    assert_eq!(out.limit_hit, None);
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "a host process was killed"
    );
    bystander.kill().unwrap();
    let _ = bystander.wait();
}

#[test]
fn orphans_are_killed_when_the_payload_exits() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let spec = c.spec("setsid sleep 60 & (sleep 60 &); sh -c 'sleep 60 &'; nohup sleep 60 >/dev/null 2>&1 & echo done");
    let out = c.run(sb, &spec);
    assert_eq!(out.exit, ExitStatus::Code(0));
}

#[test]
fn host_processes_are_invisible() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let out = c.run(sb, &c.spec("ls /proc | grep -c '^[0-9]'"));
    let n: u32 = out.stdout.text().trim().parse().unwrap();
    // The supervisor, the shell, ls and grep.
    assert!(n <= 4, "{n} processes visible");
}

#[test]
fn ptrace_of_other_processes_fails() {
    let Some(sb) = sandbox() else { return };
    let Some(py) = python() else { return };
    let c = Case::new();
    let code = format!(
        "import ctypes, os\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         for pid in (1, {host}):\n\
         \x20   r = libc.ptrace(16, pid, 0, 0)\n\
         \x20   print(pid, r, os.strerror(ctypes.get_errno()))\n",
        host = std::process::id()
    );
    let out = c.run(sb, &RunSpec::new(c.repo.path(), [py, "-c", &code]));
    assert_eq!(out.exit, ExitStatus::Code(0));
    let text = out.stdout.text();
    assert_eq!(text.lines().count(), 2);
    assert!(
        text.lines()
            .all(|l| l.split_whitespace().nth(1) == Some("-1")),
        "{text}"
    );
}

#[test]
fn nested_user_namespaces_are_refused() {
    let Some(sb) = sandbox() else { return };
    if clover_testkit::require(
        "/usr/bin/unshare",
        Path::new("/usr/bin/unshare").exists().then_some(()),
    )
    .is_none()
    {
        return;
    }
    let c = Case::new();
    let out = c.run(sb, &c.spec("unshare -U -r id -u"));
    assert_ne!(out.exit, ExitStatus::Code(0));
    assert!(!out.stdout.text().contains('0'));
}

#[test]
fn planted_symlinks_are_never_followed_when_collecting() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("secret.txt");
    std::fs::write(&secret, "TOPSECRET").unwrap();
    let mut spec = c.spec(&format!(
        "ln -s {s} report.xml; ln -s / root; mkdir -p out; ln -s /etc/passwd out/cov.xml; mkfifo fifo",
        s = secret.display()
    ));
    spec.collect = vec![
        "report.xml".into(),
        PathBuf::from("root").join(secret.strip_prefix("/").unwrap()),
        "out/cov.xml".into(),
        "fifo".into(),
        "link.py".into(),
    ];
    let out = c.run(sb, &spec);
    assert_eq!(out.exit, ExitStatus::Code(0));
    for f in &out.files {
        assert!(matches!(f.content, Collected::Refused(_)), "{f:?}");
    }
}

#[test]
fn inherited_descriptors_are_closed() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("secret.txt");
    std::fs::File::create(&secret)
        .unwrap()
        .write_all(b"TOPSECRET")
        .unwrap();
    let path = std::ffi::CString::new(secret.to_str().unwrap()).unwrap();
    // Deliberately without O_CLOEXEC, as careless code in a caller would.
    // SAFETY: path is a valid C string.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
    assert!(fd >= 0);
    let out = c.run(
        sb,
        &c.spec(&format!(
            "ls /proc/self/fd; cat <&{fd}; cat /proc/self/fd/{fd}"
        )),
    );
    // SAFETY: fd was opened above.
    unsafe { libc::close(fd) };
    assert!(!out.stdout.text().contains("TOPSECRET"));
    let fds: Vec<&str> = out.stdout.text().leak().lines().collect();
    assert_eq!(
        fds,
        ["0", "1", "2", "3"],
        "only stdio and ls's own directory"
    );
}

#[test]
fn a_missing_command_is_an_error_not_an_outcome() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let err = sb
        .run(&RunSpec::new(c.repo.path(), ["no-such-program-anywhere"]))
        .unwrap_err();
    assert!(
        err.to_string().contains("no-such-program-anywhere"),
        "{err}"
    );
}

/// Runs share network namespaces one after another (making one per run is the dearest part
/// of a start), never at the same time, and nothing of a run is left in one for the next: a
/// listener left behind by a detached daemon is gone, `lo` is still up, and the run can
/// change nothing in its namespace's configuration.
#[test]
fn network_namespaces_are_reused_clean_and_never_shared_at_once() {
    let Some(_) = sandbox() else { return };
    // A sandbox of its own: the shared one's preparer, working for the other tests, may
    // lease the namespace this test waits to see again.
    let sb = &Sandbox::new().unwrap();
    let Some(py) = python() else { return };
    let c = Case::new();
    let script = |body: &str| {
        let mut s = RunSpec::new(c.repo.path(), [py, "-c", body]);
        s.limits.wall = Duration::from_secs(20);
        s
    };
    let probe = r#"
import os, socket
print(os.readlink('/proc/self/ns/net'))
s = socket.socket()
try:
    s.connect(('127.0.0.1', 45678))
    print('connected')
except ConnectionRefusedError:
    print('refused')
l = socket.socket()
l.bind(('127.0.0.1', 0))
l.listen()
socket.create_connection(l.getsockname()).close()
print('lo up')
"#;
    // A leaves a listener behind in a detached daemon and tries to change its namespace;
    // B, running at the same time, looks for that listener.
    let leaver = r#"
import os, socket, subprocess, sys, time
print(os.readlink('/proc/self/ns/net'))
daemon = 'import socket, time\ns = socket.socket()\ns.bind(("127.0.0.1", 45678))\ns.listen()\ntime.sleep(60)'
subprocess.Popen([sys.executable, '-c', daemon], start_new_session=True)
for _ in range(100):
    try:
        socket.create_connection(('127.0.0.1', 45678)).close()
        print('daemon listening')
        break
    except ConnectionRefusedError:
        time.sleep(0.05)
time.sleep(1.0)
for path in ('/proc/sys/net/ipv4/ip_forward', '/proc/sys/net/ipv4/ip_unprivileged_port_start'):
    try:
        open(path, 'w').write('1')
        print('changed', path)
    except OSError:
        pass
print('left a listener')
"#;
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| c.run(sb, &script(leaver)));
        std::thread::sleep(Duration::from_millis(700));
        let b = c.run(sb, &script(probe));
        (a.join().unwrap(), b)
    });
    assert_eq!(a.exit, ExitStatus::Code(0), "{}", a.stderr.text());
    let a_lines: Vec<String> = a.stdout.text().lines().map(String::from).collect();
    assert_eq!(
        a_lines[1..],
        ["daemon listening", "left a listener"],
        "a run changed its namespace"
    );
    let b_text = b.stdout.text();
    assert!(b_text.contains("refused\nlo up\n"), "{b_text}");
    assert_ne!(b_text.lines().next(), Some(a_lines[0].as_str()));
    // One after another: every run finds no listener and `lo` up, and namespaces repeat.
    let mut seen = Vec::new();
    let runs = 12;
    for _ in 0..runs {
        let out = c.run(sb, &script(probe));
        let text = out.stdout.text();
        assert!(text.ends_with("refused\nlo up\n"), "{text}");
        seen.push(text.lines().next().unwrap().to_string());
    }
    let reused_a = seen.contains(&a_lines[0]);
    eprintln!("A {} then {seen:?}", a_lines[0]);
    assert!(
        reused_a,
        "the namespace of the run that left a listener was not reused in {runs} runs: {seen:?}"
    );
}

/// A payload that looks for a key by description in every keyring it can name, reads what it
/// finds, and (with `plant`) adds a key of its own to its session and user keyrings.
fn key_probe(find: &str, plant: bool) -> String {
    let (add_key, request_key, keyctl) =
        (libc::SYS_add_key, libc::SYS_request_key, libc::SYS_keyctl);
    format!(
        r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
for ring in (-1, -2, -3, -4, -5):
    k = libc.syscall(L({keyctl}), L(10), L(ring), b"user", b"{find}", L(0))
    if k >= 0:
        buf = ctypes.create_string_buffer(256)
        n = libc.syscall(L({keyctl}), L(11), L(k), buf, L(256))
        print("found", ring, buf.raw[:max(n, 0)])
k = libc.syscall(L({request_key}), b"user", b"{find}", None, L(0))
if k >= 0:
    print("requested", k)
if {plant}:
    for ring in (-3, -4):
        k = libc.syscall(L({add_key}), b"user", b"clover-planted", b"x", L(1), L(ring))
        print("planted" if k >= 0 else "refused", ring, ctypes.get_errno())
print("done")
"#,
        plant = if plant { "True" } else { "False" },
    )
}

/// The caller (here, this test's thread) has a session keyring with a secret in it, as a
/// login shell or a systemd service would. A run can neither read it nor leave a key that
/// the next run, or the caller, finds.
#[test]
fn the_callers_keyring_is_out_of_reach_and_runs_share_no_keys() {
    let Some(sb) = sandbox() else { return };
    let Some(py) = python() else { return };
    let (add_key, keyctl) = (libc::SYS_add_key, libc::SYS_keyctl);
    // SAFETY: plain syscalls with valid C strings; they change this thread's keyrings only.
    unsafe {
        assert!(libc::syscall(keyctl, 1, c"clover-test-session".as_ptr()) >= 0);
        let secret = b"TOPSECRET";
        let key = libc::syscall(
            add_key,
            c"user".as_ptr(),
            c"clover-caller-secret".as_ptr(),
            secret.as_ptr(),
            secret.len(),
            -3 as libc::c_long,
        );
        assert!(key >= 0, "the caller could not add its own key");
    }
    let c = Case::new();
    let run = |body: &str| c.run(sb, &RunSpec::new(c.repo.path(), [py, "-c", body]));
    let first = run(&key_probe("clover-caller-secret", true));
    assert_eq!(first.exit, ExitStatus::Code(0), "{}", first.stderr.text());
    let text = first.stdout.text();
    assert!(
        !text.contains("TOPSECRET"),
        "the run read the caller's key: {text}"
    );
    assert!(
        !text.contains("found") && !text.contains("requested"),
        "{text}"
    );
    assert!(!text.contains("planted"), "the run added a key: {text}");
    let second = run(&key_probe("clover-planted", false));
    assert_eq!(second.stdout.text(), "done\n", "{}", second.stderr.text());
    // SAFETY: a search of this thread's session keyring by a valid description.
    let planted = unsafe {
        libc::syscall(
            keyctl,
            10,
            -3 as libc::c_long,
            c"user".as_ptr(),
            c"clover-planted".as_ptr(),
            0,
        )
    };
    assert!(planted < 0, "a run's key reached the caller's keyring");
}

/// A candidate test file run by real pytest in the case's repository, without coverage.
/// `test` as `test_attack.py` of the case's repository, measuring `cov_sources`.
fn attack(c: &Case, python: PathBuf, test: &str, cov_sources: &[&str]) -> PytestRun {
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
    c.assert_contained(&r.run);
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

/// The supervisor is a clone of the caller that never execs: its command line (world
/// readable in /proc), environment and memory are the caller's. None of them reaches the run.
#[test]
fn the_callers_argv_environment_and_memory_are_unreadable() {
    let Some(sb) = sandbox() else { return };
    let c = Case::new();
    let own: Vec<String> = std::env::args().collect();
    let script = "for f in cmdline environ mem; do \
                    if head -c 4096 /proc/1/$f > /tmp/out 2>/dev/null; then \
                      echo read $f; tr '\\0' ' ' < /tmp/out; echo; fi; done; \
                  ls -d /proc/[0-9]* | wc -l; echo done";
    let out = c.run(sb, &c.spec(script));
    assert_eq!(out.exit, ExitStatus::Code(0), "{}", out.stderr.text());
    let text = out.stdout.text();
    assert!(
        !text.contains("read "),
        "the run read the supervisor's /proc: {text}"
    );
    assert!(
        !text.contains(&own[0]),
        "the caller's argv is visible: {text}"
    );
    assert!(text.ends_with("done\n"), "{text}");
}

/// A run that closes a connection first leaves its port in TIME_WAIT, which outlives every
/// process of the run. The next run lent a network namespace binds that port all the same.
#[test]
fn a_socket_left_in_time_wait_does_not_reach_the_next_run() {
    let Some(_) = sandbox() else { return };
    // A sandbox of its own: its free list of network namespaces is this test's alone.
    let sb = &Sandbox::new().unwrap();
    let Some(py) = python() else { return };
    let leaver = r#"
import os, socket
print(os.readlink('/proc/self/ns/net'))
l = socket.socket()
l.bind(('127.0.0.1', 47801))
l.listen()
c = socket.create_connection(('127.0.0.1', 47801))
s, _ = l.accept()
s.close()  # the accepted side closes first: 127.0.0.1:47801 goes to TIME_WAIT
c.close()
l.close()
print(sum(1 for line in open('/proc/net/tcp') if ' 06 ' in line), 'in TIME_WAIT')
"#;
    let binder = r#"
import os, socket
print(os.readlink('/proc/self/ns/net'))
socket.socket().bind(('127.0.0.1', 47801))
print('bound')
"#;
    let (a, b) = (Case::new(), Case::new());
    let run = |c: &Case, body: &str| c.run(sb, &RunSpec::new(c.repo.path(), [py, "-c", body]));
    let left = run(&a, leaver);
    assert_eq!(left.exit, ExitStatus::Code(0), "{}", left.stderr.text());
    assert!(
        left.stdout.text().ends_with("1 in TIME_WAIT\n"),
        "{}",
        left.stdout.text()
    );
    // The first run's teardown (on the reaper thread) has handed its namespace back by now.
    std::thread::sleep(Duration::from_millis(500));
    let next = run(&b, binder);
    assert_eq!(next.exit, ExitStatus::Code(0), "{}", next.stderr.text());
    assert!(next.stdout.text().ends_with("bound\n"));
}

/// CPU time per wall second of a run of two busy loops (two cores' worth of demand).
fn busy_loops_share(c: &Case, sb: &Sandbox, cpus: Option<f64>) -> f64 {
    let mut spec = c.spec("for i in 1 2; do (while :; do :; done) & done; sleep 2");
    if let Some(cpus) = cpus {
        spec.limits.cpus = cpus;
    }
    let out = c.run(sb, &spec);
    assert_eq!(out.exit, ExitStatus::Code(0), "{}", out.stderr.text());
    let share = out.cpu_time.as_secs_f64() / out.duration.as_secs_f64();
    eprintln!(
        "cpus {cpus:?}: {:?} of CPU in {:?}: {share:.2}",
        out.cpu_time, out.duration
    );
    share
}

/// Busy loops in several processes get no more CPU than the run's cap: one core by default,
/// a quarter when asked. (Ratios of CPU time to wall time, with margins for a loaded host.)
#[test]
fn busy_loops_in_parallel_get_no_more_than_the_cpu_cap() {
    let Some(sb) = sandbox() else { return };
    if sb.limit_backend() == clover_sandbox::LimitBackend::Rlimits {
        clover_testkit::require::<()>("cgroups", None);
        return;
    }
    let c = Case::new();
    let default = busy_loops_share(&c, sb, None);
    assert!(
        default < 1.25,
        "{default:.2} cores with the default cap of one"
    );
    let quarter = busy_loops_share(&c, sb, Some(0.25));
    assert!(quarter < 0.4, "{quarter:.2} cores with a cap of a quarter");
}

/// Loopback TCP buffers are kernel memory the run's processes do not map: a run that fills
/// many connections and never reads pins them. They count against the run's memory limit:
/// it cannot pin more than its limit (or is stopped).
#[test]
fn socket_buffers_count_against_the_memory_limit() {
    let Some(sb) = sandbox() else { return };
    let Some(py) = python() else { return };
    if sb.limit_backend() == clover_sandbox::LimitBackend::Rlimits {
        clover_testkit::require::<()>("cgroups", None);
        return;
    }
    let c = Case::new();
    let pin = r#"
import socket, time
l = socket.socket()
l.bind(('127.0.0.1', 0))
l.listen(128)
pinned, held, deadline = 0, [], time.monotonic() + 15
for _ in range(48):
    a = socket.create_connection(l.getsockname())
    b, _ = l.accept()
    held += [a, b]
    a.setblocking(False)
    chunk = b'x' * (1 << 16)
    while pinned < (1 << 30) and time.monotonic() < deadline:
        try:
            pinned += a.send(chunk)
        except BlockingIOError:
            break
print(pinned >> 20, 'MiB pinned', flush=True)
"#;
    let mut spec = RunSpec::new(c.repo.path(), [py, "-c", pin]);
    spec.limits.memory_bytes = 64 << 20;
    spec.limits.wall = Duration::from_secs(30);
    let out = c.run(sb, &spec);
    let text = out.stdout.text();
    let pinned: Option<u64> = text.split_whitespace().next().and_then(|n| n.parse().ok());
    let stopped = matches!(out.limit_hit, Some(LimitHit::Memory)) || !out.exit.success();
    assert!(
        stopped || pinned.is_some_and(|mib| mib < 96),
        "a run limited to 64 MiB pinned {text} of socket buffers ({:?}, {:?})",
        out.exit,
        out.limit_hit
    );
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
    let pool = clover_sandbox::WarmPool::new();
    let results = [false, true].map(|warm| {
        let c = Case::new();
        let run = attack(&c, python.clone(), test, cov_sources);
        let r = if warm {
            run.run_warm(sb, &pool)
        } else {
            run.run(sb)
        }
        .expect("the run is carried out");
        c.assert_contained(&r.run);
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
        assert_eq!(
            r.tests.len(),
            1,
            "the forged report was read: {:?}",
            r.tests
        );
        assert_eq!(r.tests[0].outcome, clover_protocol::TestOutcome::Passed);
        assert_eq!(r.outcome, Outcome::Error, "{:?}", r.message);
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
            assert_eq!(r.tests.len(), 1, "{what}: {:?}", r.tests);
            assert_eq!(r.outcome, Outcome::Error, "{what}: {:?}", r.message);
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
        assert_eq!(r.outcome, Outcome::Error, "{report}: {:?}", r.message);
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
    assert_eq!(
        r.tests.len(),
        1,
        "the forged report was read: {:?}",
        r.tests
    );
    assert_eq!(r.outcome, Outcome::Error, "{:?}", r.message);
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
    assert_eq!(r.tests.len(), 1);
    assert_eq!(r.tests[0].outcome, clover_protocol::TestOutcome::Passed);
    assert_eq!(r.outcome, Outcome::Error, "{:?}", r.message);
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
    c.assert_contained(&r.run);
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
