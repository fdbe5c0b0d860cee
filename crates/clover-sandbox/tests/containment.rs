//! Hostile payloads run through the sandbox. Each test asserts the verdict, then that the
//! payload was contained: no process of the run is left, and the repository is unchanged.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use clover_protocol::LimitHit;
use clover_sandbox::{Collected, ExitStatus, RunOutput, RunSpec, Sandbox, WriteFile};
use clover_testkit::contained::Case;

fn sandbox() -> Option<&'static Sandbox> {
    static SB: OnceLock<Result<Sandbox, String>> = OnceLock::new();
    match SB.get_or_init(|| Sandbox::new().map_err(|e| e.to_string())) {
        Ok(sb) => Some(sb),
        Err(e) => clover_testkit::require(&format!("the sandbox ({e})"), None),
    }
}

/// The sandbox's view of a contained case: a shell command in its repository, and a run that
/// is checked for containment.
trait Runs {
    fn spec(&self, script: &str) -> RunSpec;
    fn run(&self, sb: &Sandbox, spec: &RunSpec) -> RunOutput;
}

impl Runs for Case {
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
        self.assert_contained(out.host_uid);
        out
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
    c.assert_unchanged();
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

/// The embedder's example (`examples/run_command.rs`, built by `cargo test` beside this test)
/// runs a command with limits and prints how it ended: its exit code, its output and a
/// collected file, which never reaches the repository; and a sleeper ended by the wall clock.
#[test]
fn the_run_command_example_runs_a_command_with_limits() {
    let Some(_) = sandbox() else { return };
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/run_command");
    assert!(example.is_file(), "{} was not built", example.display());
    let c = Case::new();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&example)
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{:?}", out.status);
        text
    };
    let repo = c.repo.path().to_str().unwrap();
    let text = run(&[
        "--wall",
        "10",
        "--collect",
        "out.txt",
        repo,
        "--",
        "/bin/sh",
        "-c",
        "cat file.txt; echo data > out.txt; exit 3",
    ]);
    assert!(text.contains("exit: Code(3)\n"), "{text}");
    assert!(text.contains("limit_hit: None\n"), "{text}");
    assert!(text.contains("stdout: \"original\\n\"\n"), "{text}");
    assert!(text.contains("file out.txt: \"data\\n\"\n"), "{text}");
    c.assert_unchanged();
    let text = run(&["--wall", "1", repo, "--", "/bin/sleep", "30"]);
    assert!(text.contains("limit_hit: Some(WallClock)\n"), "{text}");
}
