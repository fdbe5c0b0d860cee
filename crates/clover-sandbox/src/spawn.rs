//! Starting the sandbox: clone into new namespaces, build the root, drop to the sandbox user,
//! exec; and the parent's side: uid maps, cgroup attach, output capture, wall clock.
//!
//! The process tree of one run:
//!
//! ```text
//! caller (host, root)
//! └── supervisor  pid 1 of a new pid namespace; uid 0 in a new user namespace (host uid 0)
//!     └── payload  uid/gid 65534 inside, a private non-zero host uid outside; exec's argv
//!         └── whatever the payload starts
//! ```
//!
//! The supervisor is a raw `clone` of the caller, which may be multi-threaded (rayon), so it
//! must not allocate, take locks or call glibc wrappers that act on all threads (`setuid`
//! and friends): everything it needs is prepared beforehand as C strings
//! and plain vectors ([`ChildPlan`]), and it talks to the caller through fixed-size records
//! on a pipe. It builds the root while its kernel uid is still 0 (owner bits of root's mode
//! 700 directories grant it traversal, so `/root/.pyenv` can be bound), then waits for the
//! caller's "go", forks the payload, reaps everything (it is init), and when the payload has
//! exited kills whatever the payload left behind and reports. Killing the supervisor (the
//! wall clock does) kills the whole pid namespace.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::capture::{Captured, HeadTail};
use crate::error::SandboxError;

/// The uid and gid of the payload inside the sandbox.
pub(crate) const SANDBOX_ID: u32 = 65534;

const TAG_READY: u64 = 1;
const TAG_SETUP_ERROR: u64 = 2;
const TAG_EXEC_ERROR: u64 = 3;
const TAG_DONE: u64 = 4;
const RECORD: usize = 5 * 8;

const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const AT_RECURSIVE: libc::c_uint = 0x8000;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `struct ifreq` reduced to what bringing `lo` up needs (name, flags, and the union's size).
#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// One step of building the sandbox's root, run by the supervisor.
#[derive(Debug)]
pub(crate) enum Op {
    /// Stop mount events from propagating back to the host.
    MakeRprivate,
    /// Creates a directory; an existing one is fine.
    Mkdir {
        path: CString,
        mode: u32,
    },
    Chown {
        path: CString,
        uid: u32,
        gid: u32,
    },
    /// Creates an empty file to bind a file onto; an existing one is fine.
    MkFile {
        path: CString,
    },
    WriteFile {
        path: CString,
        contents: Vec<u8>,
    },
    /// Writes to an existing file (a sysctl).
    WriteExisting {
        path: CString,
        contents: Vec<u8>,
    },
    Symlink {
        target: CString,
        path: CString,
    },
    Mount {
        source: CString,
        target: CString,
        fstype: Option<CString>,
        flags: libc::c_ulong,
        data: Option<CString>,
    },
    /// Read-only, nosuid, nodev; for binds recursively.
    ReadOnly {
        path: CString,
        recursive: bool,
    },
    PivotRoot {
        new_root: CString,
    },
    Hostname {
        name: CString,
    },
    LoopbackUp,
}

impl Op {
    pub(crate) fn describe(&self) -> String {
        let s = |c: &CString| c.to_string_lossy().into_owned();
        match self {
            Op::MakeRprivate => "make / private".into(),
            Op::Mkdir { path, .. } => format!("mkdir {}", s(path)),
            Op::Chown { path, .. } => format!("chown {}", s(path)),
            Op::MkFile { path } => format!("create {}", s(path)),
            Op::WriteFile { path, .. } => format!("write {}", s(path)),
            Op::WriteExisting { path, .. } => format!("write {}", s(path)),
            Op::Symlink { path, .. } => format!("symlink {}", s(path)),
            Op::Mount {
                source,
                target,
                fstype,
                ..
            } => format!(
                "mount {} on {} ({})",
                s(source),
                s(target),
                fstype.as_ref().map_or("bind".into(), s)
            ),
            Op::ReadOnly { path, .. } => format!("make {} read-only", s(path)),
            Op::PivotRoot { new_root } => format!("pivot_root into {}", s(new_root)),
            Op::Hostname { .. } => "sethostname".into(),
            Op::LoopbackUp => "bring up lo".into(),
        }
    }
}

/// Everything the supervisor and the payload need, prepared before the clone.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    pub(crate) ops: Vec<Op>,
    /// Absolute, inside the new root.
    pub(crate) workdir: CString,
    /// Paths tried in order with `execve` (the `PATH` lookup done beforehand).
    pub(crate) exec_candidates: Vec<CString>,
    pub(crate) argv: Vec<CString>,
    pub(crate) env: Vec<CString>,
    pub(crate) rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
}

/// Pointer arrays for `execve`, built before the clone so the child only reads them.
struct ExecArgs {
    argv: Vec<*const libc::c_char>,
    env: Vec<*const libc::c_char>,
}

impl ExecArgs {
    fn new(plan: &ChildPlan) -> Self {
        let ptrs = |v: &[CString]| {
            v.iter()
                .map(|c| c.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        ExecArgs {
            argv: ptrs(&plan.argv),
            env: ptrs(&plan.env),
        }
    }
}

#[derive(Clone, Copy)]
struct ChildFds {
    ctl: RawFd,
    status: RawFd,
    stdin: RawFd,
    out: RawFd,
    err: RawFd,
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn send(fd: RawFd, rec: [u64; 5]) {
    let mut buf = [0u8; RECORD];
    for (i, v) in rec.iter().enumerate() {
        buf[i * 8..i * 8 + 8].copy_from_slice(&v.to_ne_bytes());
    }
    // SAFETY: buf is valid for RECORD bytes; a pipe write of at most PIPE_BUF is atomic.
    unsafe { libc::write(fd, buf.as_ptr().cast(), RECORD) };
}

fn read_byte(fd: RawFd) -> Option<u8> {
    let mut b = 0u8;
    loop {
        // SAFETY: b is a valid one-byte buffer.
        let n = unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) };
        if n == 1 {
            return Some(b);
        }
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        return None;
    }
}

/// `fork` without glibc's fork handlers: the child of a multi-threaded caller must not rely
/// on them anyway, and the supervisor (itself such a child) could deadlock in them.
unsafe fn raw_clone(flags: libc::c_ulong) -> libc::pid_t {
    // SAFETY: a null stack makes clone behave like fork (the child continues on a copy of
    // this stack); the remaining arguments are unused without the matching flags.
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags | libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        ) as libc::pid_t
    }
}

unsafe fn run_op(op: &Op) -> Result<(), i32> {
    let check = |r: libc::c_int| if r == 0 { Ok(()) } else { Err(errno()) };
    let allow_exists = |r: libc::c_int| {
        if r == 0 || errno() == libc::EEXIST {
            Ok(())
        } else {
            Err(errno())
        }
    };
    // SAFETY: every pointer passed below comes from a live CString or slice of the plan.
    unsafe {
        match op {
            Op::MakeRprivate => check(libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )),
            Op::Mkdir { path, mode } => allow_exists(libc::mkdir(path.as_ptr(), *mode)),
            Op::Chown { path, uid, gid } => check(libc::lchown(path.as_ptr(), *uid, *gid)),
            Op::MkFile { path } => {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                    0o644,
                );
                if fd < 0 {
                    return Err(errno());
                }
                libc::close(fd);
                Ok(())
            }
            Op::WriteFile { path, contents } | Op::WriteExisting { path, contents } => {
                let flags = if matches!(op, Op::WriteFile { .. }) {
                    libc::O_CREAT | libc::O_TRUNC | libc::O_WRONLY | libc::O_NOFOLLOW
                } else {
                    libc::O_WRONLY
                };
                let fd = libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, 0o644);
                if fd < 0 {
                    return Err(errno());
                }
                let mut rest: &[u8] = contents;
                while !rest.is_empty() {
                    let n = libc::write(fd, rest.as_ptr().cast(), rest.len());
                    if n <= 0 {
                        let e = errno();
                        libc::close(fd);
                        return Err(e);
                    }
                    rest = &rest[n as usize..];
                }
                libc::close(fd);
                Ok(())
            }
            Op::Symlink { target, path } => {
                allow_exists(libc::symlink(target.as_ptr(), path.as_ptr()))
            }
            Op::Mount {
                source,
                target,
                fstype,
                flags,
                data,
            } => check(libc::mount(
                source.as_ptr(),
                target.as_ptr(),
                fstype.as_ref().map_or(std::ptr::null(), |f| f.as_ptr()),
                *flags,
                data.as_ref()
                    .map_or(std::ptr::null(), |d| d.as_ptr().cast()),
            )),
            Op::ReadOnly { path, recursive } => {
                let attr = MountAttr {
                    attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                    attr_clr: 0,
                    propagation: 0,
                    userns_fd: 0,
                };
                let flags = if *recursive { AT_RECURSIVE } else { 0 };
                let r = libc::syscall(
                    libc::SYS_mount_setattr,
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    flags,
                    &attr as *const MountAttr,
                    std::mem::size_of::<MountAttr>(),
                );
                check(r as libc::c_int)
            }
            Op::PivotRoot { new_root } => {
                check(libc::chdir(new_root.as_ptr()))?;
                // pivot_root(".", ".") stacks the old root on top of the new one; detaching
                // it leaves the new root alone, with no directory needed for the old one.
                check(libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) as i32)?;
                check(libc::umount2(c".".as_ptr(), libc::MNT_DETACH))?;
                check(libc::chdir(c"/".as_ptr()))
            }
            Op::Hostname { name } => check(libc::sethostname(name.as_ptr(), name.as_bytes().len())),
            Op::LoopbackUp => {
                let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
                if fd < 0 {
                    return Err(errno());
                }
                let mut req = IfReq {
                    name: [0; 16],
                    flags: 0,
                    _pad: [0; 22],
                };
                req.name[..2].copy_from_slice(b"lo");
                let mut r = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req as *mut IfReq);
                if r == 0 {
                    req.flags |= libc::IFF_UP as libc::c_short;
                    r = libc::ioctl(fd, libc::SIOCSIFFLAGS, &req as *const IfReq);
                }
                let e = errno();
                libc::close(fd);
                if r == 0 {
                    Ok(())
                } else {
                    Err(e)
                }
            }
        }
    }
}

/// Closes every descriptor but `keep` (which is sorted in place).
unsafe fn close_all_except(keep: &mut [RawFd]) {
    keep.sort_unstable();
    let mut next: libc::c_uint = 0;
    for &k in keep.iter() {
        let k = k as libc::c_uint;
        if k > next {
            // SAFETY: closing descriptors has no memory effects.
            unsafe { libc::syscall(libc::SYS_close_range, next, k - 1, 0) };
        }
        next = k + 1;
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, next, libc::c_uint::MAX, 0) };
}

/// pid 1 of the sandbox. Never returns.
unsafe fn supervisor(plan: &ChildPlan, args: &ExecArgs, fds: ChildFds) -> ! {
    // SAFETY: only syscalls on prepared data; see the module docs.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        close_all_except(&mut [fds.ctl, fds.status, fds.stdin, fds.out, fds.err]);
        // The caller writes our uid/gid maps and moves us into the run's cgroups first.
        if read_byte(fds.ctl) != Some(1) {
            libc::_exit(1);
        }
        // A cgroup namespace rooted at the run's cgroup hides the host's cgroup paths.
        libc::unshare(libc::CLONE_NEWCGROUP);
        libc::umask(0);
        for (i, op) in plan.ops.iter().enumerate() {
            if let Err(e) = run_op(op) {
                send(fds.status, [TAG_SETUP_ERROR, i as u64, e as u64, 0, 0]);
                libc::_exit(1);
            }
        }
        send(fds.status, [TAG_READY, 0, 0, 0, 0]);
        // Meanwhile the caller writes the run's files into the repository view.
        if read_byte(fds.ctl) != Some(2) {
            libc::_exit(1);
        }
        let payload_pid = raw_clone(0);
        if payload_pid == 0 {
            payload(plan, args, fds);
        }
        if payload_pid < 0 {
            send(fds.status, [TAG_EXEC_ERROR, errno() as u64, 0, 0, 0]);
            libc::_exit(1);
        }
        libc::close(fds.out);
        libc::close(fds.err);
        libc::close(fds.stdin);
        let mut payload_status: libc::c_int = 0;
        loop {
            let mut st: libc::c_int = 0;
            let r = libc::waitpid(-1, &mut st, 0);
            if r < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                break;
            }
            if r == payload_pid {
                payload_status = st;
                // Nothing the payload left behind outlives it: init may signal every
                // process of its namespace.
                libc::kill(-1, libc::SIGKILL);
            }
        }
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
        send(
            fds.status,
            [
                TAG_DONE,
                payload_status as u32 as u64,
                us(ru.ru_utime) + us(ru.ru_stime),
                ru.ru_maxrss as u64,
                0,
            ],
        );
        libc::_exit(0);
    }
}

/// The payload, before `execve`. Never returns.
unsafe fn payload(plan: &ChildPlan, args: &ExecArgs, fds: ChildFds) -> ! {
    // SAFETY: only syscalls on prepared data.
    unsafe {
        let fail = |e: i32| -> ! {
            send(fds.status, [TAG_EXEC_ERROR, e as u64, 0, 0, 0]);
            libc::_exit(127)
        };
        // The caller (a Rust program) ignores SIGPIPE, and ignored signals survive execve.
        for sig in 1..=64 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::setsid();
        for &(res, soft, hard) in &plan.rlimits {
            let rl = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(res, &rl) != 0 {
                fail(errno());
            }
        }
        // No capabilities are left after the uid change; empty the bounding set as well (it
        // needs CAP_SETPCAP, so before), so that no exec can bring any back.
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        // Raw syscalls: glibc's wrappers would try to change the credentials of every thread
        // it believes exists — the caller's, which are not here — and wait for them forever.
        let id = SANDBOX_ID as libc::c_long;
        if libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) != 0
            || libc::syscall(libc::SYS_setresgid, id, id, id) != 0
            || libc::syscall(libc::SYS_setresuid, id, id, id) != 0
        {
            fail(errno());
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            fail(errno());
        }
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        libc::umask(0o022);
        // Move the three streams clear of 0..2 first so no dup2 overwrites another source.
        let srcs =
            [fds.stdin, fds.out, fds.err].map(|fd| libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3));
        for (target, src) in srcs.iter().enumerate() {
            if *src < 0 || libc::dup2(*src, target as i32) < 0 {
                fail(errno());
            }
        }
        // Everything else (including descriptors the caller leaked without CLOEXEC) is closed
        // by execve; the status pipe stays usable until then to report a failed exec.
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        );
        if libc::chdir(plan.workdir.as_ptr()) != 0 {
            fail(errno());
        }
        let mut first_err = libc::ENOENT;
        for cand in &plan.exec_candidates {
            libc::execve(cand.as_ptr(), args.argv.as_ptr(), args.env.as_ptr());
            let e = errno();
            if e != libc::ENOENT && e != libc::ENOTDIR && first_err == libc::ENOENT {
                first_err = e;
            }
        }
        fail(first_err)
    }
}

fn pipe() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SandboxError::sys("pipe2"));
    }
    // SAFETY: pipe2 returned two fresh descriptors that we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Why the supervisor could not get ready.
#[derive(Debug)]
pub(crate) enum StartError {
    /// Op number `.0` of the plan failed with this error.
    Op(usize, io::Error),
    Other(SandboxError),
}

impl From<SandboxError> for StartError {
    fn from(e: SandboxError) -> Self {
        StartError::Other(e)
    }
}

/// A supervisor that has built the root and waits for "go".
#[derive(Debug)]
pub(crate) struct Running {
    pid: libc::pid_t,
    ctl: OwnedFd,
    status: OwnedFd,
    out: OwnedFd,
    err: OwnedFd,
    reaped: bool,
}

/// How a started run ended, as the parent saw it.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The payload's wait status, or `None` when the supervisor was killed first.
    pub(crate) payload_status: Option<i32>,
    /// The signal that killed the supervisor, if one did.
    pub(crate) supervisor_signal: Option<i32>,
    pub(crate) exec_error: Option<io::Error>,
    pub(crate) timed_out: bool,
    pub(crate) stdout: Captured,
    pub(crate) stderr: Captured,
    pub(crate) duration: Duration,
    pub(crate) cpu_time: Duration,
}

/// Clones the supervisor into new namespaces and waits until it has built the root.
pub(crate) fn start(
    plan: &ChildPlan,
    host_uid: u32,
    attach: impl FnOnce(libc::pid_t) -> io::Result<()>,
) -> Result<Running, StartError> {
    let args = ExecArgs::new(plan);
    let (ctl_r, ctl_w) = pipe()?;
    let (status_r, status_w) = pipe()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let devnull = std::fs::File::open("/dev/null")
        .map_err(|e| SandboxError::io("opening", "/dev/null", e))?;
    let fds = ChildFds {
        ctl: ctl_r.as_raw_fd(),
        status: status_w.as_raw_fd(),
        stdin: devnull.as_raw_fd(),
        out: out_w.as_raw_fd(),
        err: err_w.as_raw_fd(),
    };
    let flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNET
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS;
    // SAFETY: the child runs only `supervisor`, which never returns and does not allocate.
    let pid = unsafe { raw_clone(flags as libc::c_ulong) };
    if pid == 0 {
        // SAFETY: see above.
        unsafe { supervisor(plan, &args, fds) };
    }
    if pid < 0 {
        return Err(SandboxError::sys("clone into new namespaces").into());
    }
    let mut running = Running {
        pid,
        ctl: ctl_w,
        status: status_r,
        out: out_r,
        err: err_r,
        reaped: false,
    };
    drop((ctl_r, status_w, out_w, err_w, devnull));
    // Inside: 0 is host root (for building the root), 65534 is the run's own host uid.
    let map = format!("0 0 1\n{SANDBOX_ID} {host_uid} 1\n");
    for file in ["uid_map", "gid_map"] {
        let path = PathBuf::from(format!("/proc/{pid}/{file}"));
        std::fs::write(&path, &map).map_err(|e| SandboxError::io("writing", path, e))?;
    }
    attach(pid).map_err(|e| SandboxError::Sys {
        what: "moving the sandbox into its cgroups",
        source: e,
    })?;
    running.send_ctl(1)?;
    let mut buf = Vec::new();
    let rec = read_record(
        running.status.as_raw_fd(),
        &mut buf,
        Duration::from_secs(30),
    )?;
    match rec {
        Some([TAG_READY, ..]) => Ok(running),
        Some([TAG_SETUP_ERROR, op, e, ..]) => Err(StartError::Op(
            op as usize,
            io::Error::from_raw_os_error(e as i32),
        )),
        _ => {
            let st = running.kill_and_reap();
            Err(SandboxError::SupervisorDied(st).into())
        }
    }
}

/// Reads one status record, waiting at most `timeout`.
fn read_record(
    fd: RawFd,
    buf: &mut Vec<u8>,
    timeout: Duration,
) -> Result<Option<[u64; 5]>, SandboxError> {
    let deadline = Instant::now() + timeout;
    while buf.len() < RECORD {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: pfd is one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(i32::MAX as u128) as i32) };
        if r < 0 && errno() != libc::EINTR {
            return Err(SandboxError::sys("poll"));
        }
        if r <= 0 {
            continue;
        }
        match read_some(fd, buf)? {
            0 => return Ok(None),
            _ => continue,
        }
    }
    Ok(Some(take_record(buf)))
}

fn take_record(buf: &mut Vec<u8>) -> [u64; 5] {
    let mut rec = [0u64; 5];
    for (i, v) in rec.iter_mut().enumerate() {
        *v = u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    }
    buf.drain(..RECORD);
    rec
}

/// Appends what is readable now; returns the count (0 at end of file).
fn read_some(fd: RawFd, buf: &mut Vec<u8>) -> Result<usize, SandboxError> {
    let mut chunk = [0u8; 4096];
    loop {
        // SAFETY: chunk is a valid buffer of its length.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n >= 0 {
            buf.extend_from_slice(&chunk[..n as usize]);
            return Ok(n as usize);
        }
        match errno() {
            libc::EINTR => continue,
            libc::EAGAIN => return Ok(usize::MAX),
            _ => return Err(SandboxError::sys("reading from the sandbox")),
        }
    }
}

impl Running {
    /// The supervisor's root (the sandbox's `/`) as seen from the host.
    pub(crate) fn root(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.pid))
    }

    fn send_ctl(&self, b: u8) -> Result<(), SandboxError> {
        // SAFETY: b is a valid one-byte buffer.
        let n = unsafe { libc::write(self.ctl.as_raw_fd(), (&b as *const u8).cast(), 1) };
        if n != 1 {
            return Err(SandboxError::sys("signalling the sandbox supervisor"));
        }
        Ok(())
    }

    fn kill_and_reap(&mut self) -> i32 {
        if self.reaped {
            return 0;
        }
        let mut st = 0;
        // SAFETY: pid is our unreaped child, so the number cannot have been reused.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            while libc::waitpid(self.pid, &mut st, 0) < 0 && errno() == libc::EINTR {}
        }
        self.reaped = true;
        st
    }

    /// Lets the payload start and waits until every process of the run is gone.
    pub(crate) fn run(
        mut self,
        wall: Duration,
        output_cap: usize,
    ) -> Result<Finished, SandboxError> {
        for fd in [&self.out, &self.err] {
            // SAFETY: fd is a valid open descriptor.
            unsafe {
                let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
        }
        let start = Instant::now();
        self.send_ctl(2)?;
        let deadline = start + wall;
        let mut out = HeadTail::new(output_cap);
        let mut err = HeadTail::new(output_cap);
        let mut status_buf = Vec::new();
        let mut open = [true; 3];
        let mut timed_out = false;
        let mut done: Option<[u64; 5]> = None;
        let mut exec_error = None;
        let mut end = None;
        let mut scratch = Vec::with_capacity(65536);
        while open.iter().any(|o| *o) {
            let now = Instant::now();
            if !timed_out && now >= deadline && done.is_none() {
                self.kill_and_signal_only();
                timed_out = true;
            }
            let wait_ms = if timed_out || done.is_some() {
                1000
            } else {
                deadline
                    .saturating_duration_since(now)
                    .as_millis()
                    .clamp(1, 1000) as i32
            };
            let raw = [
                self.status.as_raw_fd(),
                self.out.as_raw_fd(),
                self.err.as_raw_fd(),
            ];
            let mut pfds: Vec<libc::pollfd> = raw
                .iter()
                .zip(open)
                .map(|(&fd, o)| libc::pollfd {
                    fd: if o { fd } else { -1 },
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            // SAFETY: pfds is a valid array of pollfd.
            let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, wait_ms) };
            if r < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                return Err(SandboxError::sys("poll"));
            }
            for (i, p) in pfds.iter().enumerate() {
                if !open[i] || p.revents == 0 {
                    continue;
                }
                if i == 0 {
                    match read_some(raw[0], &mut status_buf)? {
                        0 => {
                            open[0] = false;
                            end.get_or_insert_with(Instant::now);
                        }
                        _ => {
                            while status_buf.len() >= RECORD {
                                let rec = take_record(&mut status_buf);
                                match rec[0] {
                                    TAG_EXEC_ERROR => {
                                        exec_error =
                                            Some(io::Error::from_raw_os_error(rec[1] as i32))
                                    }
                                    TAG_DONE => {
                                        end = Some(Instant::now());
                                        done = Some(rec);
                                    }
                                    _ => {}
                                }
                            }
                        }
                    }
                } else {
                    // Drain what is there; a flood is counted and mostly dropped.
                    loop {
                        scratch.clear();
                        match read_some(raw[i], &mut scratch)? {
                            0 => {
                                open[i] = false;
                                break;
                            }
                            usize::MAX => break,
                            _ => {
                                let sink = if i == 1 { &mut out } else { &mut err };
                                sink.push(&scratch);
                                if scratch.len() < 4096 {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
        let st = self.kill_and_reap();
        let supervisor_signal = libc::WIFSIGNALED(st).then(|| libc::WTERMSIG(st));
        if done.is_none() && !timed_out && supervisor_signal.is_none() {
            return Err(SandboxError::SupervisorDied(st));
        }
        Ok(Finished {
            payload_status: done.map(|d| d[1] as u32 as i32),
            supervisor_signal,
            exec_error,
            timed_out,
            stdout: out.finish(),
            stderr: err.finish(),
            duration: end.unwrap_or_else(Instant::now) - start,
            cpu_time: Duration::from_micros(done.map_or(0, |d| d[2])),
        })
    }

    fn kill_and_signal_only(&self) {
        // SAFETY: pid is our unreaped child. Killing pid 1 of the namespace kills all of it.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

/// Converts a path-like into a C string, naming it in the error.
pub(crate) fn cstring(what: &str, bytes: impl Into<Vec<u8>>) -> Result<CString, SandboxError> {
    CString::new(bytes)
        .map_err(|_| SandboxError::InvalidSpec(format!("{what} contains a NUL byte")))
}
