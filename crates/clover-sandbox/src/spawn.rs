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
use std::sync::RwLock;
use std::time::{Duration, Instant};

use crate::capture::{Captured, HeadTail};
use crate::error::SandboxError;
use crate::spec::{ChannelBytes, REPORT_CHANNEL_FD};

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
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const OPEN_TREE_CLONE: libc::c_uint = 1;

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

/// `KEYCTL_JOIN_SESSION_KEYRING`: with a null name, a new anonymous session keyring.
const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;

/// The architecture this filter is built for, as seccomp reports it (`AUDIT_ARCH_*`).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
/// On x86_64 the x32 ABI shares the architecture and numbers its calls from this bit up.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const fn bpf(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}
/// Classic BPF opcodes (`BPF_LD|BPF_W|BPF_ABS` and so on).
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
const BPF_JMP_JGE_K: u16 = 0x05 | 0x30;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;

/// The payload's seccomp filter: the kernel keyring calls fail with EPERM (a key is a
/// channel between runs and a way to the caller's secrets that no namespace closes), as do
/// x32 calls; a call made under another architecture (a 32-bit binary) kills the process,
/// since its numbers mean other calls. Everything else is allowed: the namespaces and the
/// dropped privileges are the sandbox, this filter only closes what they leave shared.
/// Offsets into `struct seccomp_data`: `nr` at 0, `arch` at 4.
static SECCOMP_FILTER: [libc::sock_filter; 10] = [
    bpf(BPF_LD_W_ABS, 0, 0, 4),
    bpf(BPF_JMP_JEQ_K, 1, 0, AUDIT_ARCH),
    bpf(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
    bpf(BPF_LD_W_ABS, 0, 0, 0),
    bpf(BPF_JMP_JGE_K, 3, 0, X32_SYSCALL_BIT),
    bpf(BPF_JMP_JEQ_K, 2, 0, libc::SYS_keyctl as u32),
    bpf(BPF_JMP_JEQ_K, 1, 0, libc::SYS_add_key as u32),
    bpf(BPF_JMP_JEQ_K, 0, 1, libc::SYS_request_key as u32),
    bpf(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | libc::EPERM as u32),
    bpf(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
];

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
    /// Attaches a detached mount (an inherited descriptor) at `target`.
    MoveMount {
        fd: RawFd,
        target: CString,
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
            Op::MoveMount { target, .. } => {
                format!("attach the idmapped repository at {}", s(target))
            }
            Op::Hostname { .. } => "sethostname".into(),
            Op::LoopbackUp => "bring up lo".into(),
        }
    }
}

/// What the supervisor needs to build the root, prepared before the clone.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    pub(crate) ops: Vec<Op>,
    /// A descriptor an op uses (the idmapped repository), kept open in the supervisor.
    pub(crate) keep_fd: Option<RawFd>,
}

/// A detached mount of `dir` (not recursive) on which files owned by `dir`'s owner appear
/// as owned by `host_uid` (and its group likewise), read-only. Used as the overlay's lower
/// layer, it makes the checked-in files the sandbox user's, as a checkout of their own
/// would be; other owners' files appear as nobody's. Needs root in the host's namespace
/// (the repository's file system belongs to it) and a file system that supports idmapping.
pub(crate) fn idmapped_mount(dir: &std::path::Path, host_uid: u32) -> io::Result<OwnedFd> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(dir)?;
    // A user namespace whose only mapping is owner -> host_uid: held by a child that waits
    // on a pipe, just long enough to open it.
    let (r, w) = {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array of two ints.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: two fresh descriptors that we now own.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    };
    // SAFETY: the child only reads a byte and exits; it allocates nothing.
    let pid = unsafe { clone_of_caller(libc::CLONE_NEWUSER as libc::c_ulong) };
    if pid == 0 {
        // SAFETY: see above.
        unsafe {
            // Our copy of the write end would keep the read below from ever seeing its end.
            libc::close(w.as_raw_fd());
            let mut b = 0u8;
            libc::read(r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
            libc::_exit(0);
        }
    }
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    let result = (|| {
        std::fs::write(
            format!("/proc/{pid}/uid_map"),
            format!("{} {host_uid} 1\n", md.uid()),
        )?;
        std::fs::write(
            format!("/proc/{pid}/gid_map"),
            format!("{} {host_uid} 1\n", md.gid()),
        )?;
        let userns = std::fs::File::open(format!("/proc/{pid}/ns/user"))?;
        let path = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: path is a valid C string; the result is a new descriptor.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_open_tree,
                libc::AT_FDCWD,
                path.as_ptr(),
                OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: open_tree returned a fresh descriptor that we now own.
        let mount = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            attr_clr: 0,
            propagation: 0,
            userns_fd: userns.as_raw_fd() as u64,
        };
        // SAFETY: attr is a valid mount_attr of the size passed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                mount.as_raw_fd(),
                c"".as_ptr(),
                libc::AT_EMPTY_PATH,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(mount)
    })();
    // SAFETY: a one-byte write to our pipe. The child exits on it (or on the pipe's end).
    unsafe { libc::write(w.as_raw_fd(), b"x".as_ptr().cast(), 1) };
    drop(w);
    let mut st = 0;
    // SAFETY: pid is our child; it exits once the pipe is closed.
    unsafe { while libc::waitpid(pid, &mut st, 0) < 0 && errno() == libc::EINTR {} }
    drop(r);
    result
}

/// What the payload needs to start. It is written into memory shared with the supervisor
/// only when the run starts ("go 2"), so a supervisor can build its root before the command
/// is known — that is what lets [`crate::Sandbox`] prepare the next run's supervisor while the
/// current one runs.
#[derive(Debug)]
pub(crate) struct ExecPlan {
    /// Absolute, inside the new root.
    pub(crate) workdir: CString,
    /// Paths tried in order with `execve` (the `PATH` lookup done beforehand).
    pub(crate) exec_candidates: Vec<CString>,
    pub(crate) argv: Vec<CString>,
    pub(crate) env: Vec<CString>,
    pub(crate) rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
    /// The payload keeps uid 0 of the run's user namespace and its capabilities there (none
    /// on the host): the warm worker, which makes a namespace of its own for every child it
    /// runs a candidate in, and drops them in that child. Everything else still applies.
    pub(crate) privileged: bool,
    /// The payload gets the write end of the report channel on [`REPORT_CHANNEL_FD`]
    /// ([`crate::RunSpec::report_channel`]); otherwise exec closes it.
    pub(crate) report_channel: bool,
}

const MAX_RLIMITS: usize = 16;

/// Room for the command line, the environment and the rest of an [`ExecPlan`]. Pages of an
/// anonymous mapping cost nothing until they are written.
const EXEC_AREA_BYTES: usize = 4 << 20;

/// The start of the shared area, as the payload reads it. Pointers point into the area,
/// which has the same address in the caller, the supervisor and the payload (forks).
#[repr(C)]
struct ExecHeader {
    workdir: *const libc::c_char,
    argv: *const *const libc::c_char,
    env: *const *const libc::c_char,
    candidates: *const *const libc::c_char,
    candidate_count: usize,
    rlimit_count: usize,
    rlimits: [[u64; 3]; MAX_RLIMITS],
    privileged: usize,
    report_channel: usize,
}

/// A `MAP_SHARED` anonymous mapping shared by the caller and its supervisor (and, until it
/// execs, the payload). The payload cannot reach it after exec: it is gone from its address
/// space, and the supervisor's memory is another uid's.
#[derive(Debug)]
struct ExecArea {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the area is plain memory owned by one `Running`; it is written only by the caller
// before "go 2" and read by the payload after it.
unsafe impl Send for ExecArea {}

impl ExecArea {
    fn new() -> Result<Self, SandboxError> {
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                EXEC_AREA_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(SandboxError::sys("mapping the exec area"));
        }
        Ok(ExecArea {
            ptr: ptr.cast(),
            len: EXEC_AREA_BYTES,
        })
    }

    /// Lays `plan` out in the area: the header, then strings and pointer arrays.
    fn write(&mut self, plan: &ExecPlan) -> Result<(), SandboxError> {
        if plan.rlimits.len() > MAX_RLIMITS {
            return Err(SandboxError::InvalidSpec("too many rlimits".into()));
        }
        let too_long = || {
            SandboxError::InvalidSpec(format!(
                "the command line and environment take more than {} MiB",
                EXEC_AREA_BYTES >> 20
            ))
        };
        let base = self.ptr as usize;
        let mut off = std::mem::size_of::<ExecHeader>().next_multiple_of(8);
        let len = self.len;
        // SAFETY (both closures): every write is bounds-checked against the mapping's length.
        let put_str = |c: &CString, off: &mut usize| -> Result<usize, SandboxError> {
            let b = c.as_bytes_with_nul();
            if *off + b.len() > len {
                return Err(too_long());
            }
            let at = base + *off;
            unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), at as *mut u8, b.len()) };
            *off += b.len();
            Ok(at)
        };
        let put_ptrs = |ptrs: &[usize], off: &mut usize| -> Result<usize, SandboxError> {
            *off = off.next_multiple_of(8);
            let bytes = (ptrs.len() + 1) * 8;
            if *off + bytes > len {
                return Err(too_long());
            }
            let at = base + *off;
            for (i, p) in ptrs.iter().chain(std::iter::once(&0usize)).enumerate() {
                unsafe { ((at + i * 8) as *mut usize).write(*p) };
            }
            *off += bytes;
            Ok(at)
        };
        let strs = |v: &[CString], off: &mut usize| -> Result<Vec<usize>, SandboxError> {
            v.iter().map(|c| put_str(c, off)).collect()
        };
        let argv = strs(&plan.argv, &mut off)?;
        let env = strs(&plan.env, &mut off)?;
        let cands = strs(&plan.exec_candidates, &mut off)?;
        let workdir = strs(std::slice::from_ref(&plan.workdir), &mut off)?[0];
        let argv = put_ptrs(&argv, &mut off)?;
        let env = put_ptrs(&env, &mut off)?;
        let cands = put_ptrs(&cands, &mut off)?;
        let mut rlimits = [[0u64; 3]; MAX_RLIMITS];
        for (slot, &(res, soft, hard)) in rlimits.iter_mut().zip(&plan.rlimits) {
            *slot = [res as u64, soft, hard];
        }
        let header = ExecHeader {
            workdir: workdir as *const libc::c_char,
            argv: argv as *const *const libc::c_char,
            env: env as *const *const libc::c_char,
            candidates: cands as *const *const libc::c_char,
            candidate_count: plan.exec_candidates.len(),
            rlimit_count: plan.rlimits.len(),
            rlimits,
            privileged: usize::from(plan.privileged),
            report_channel: usize::from(plan.report_channel),
        };
        // SAFETY: the mapping is page-aligned and larger than the header.
        unsafe { (self.ptr as *mut ExecHeader).write(header) };
        Ok(())
    }
}

impl Drop for ExecArea {
    fn drop(&mut self) {
        // SAFETY: ptr/len are the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[derive(Clone, Copy)]
struct ChildFds {
    ctl: RawFd,
    status: RawFd,
    stdin: RawFd,
    out: RawFd,
    err: RawFd,
    /// The write end of the report channel.
    channel: RawFd,
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

/// Taken for reading while the host has a file of a run's view open for writing (the run
/// may execute it), and for writing across each clone of this process. A child holds a copy
/// of every descriptor its parent had open at the clone until it closes them (some of ours
/// never do: they wait, or they are supervisors); while any copy of a descriptor open for
/// writing lives, `exec` of that file fails with ETXTBSY, "Text file busy". O_CLOEXEC does
/// not help a child that does not exec.
static FORK_LOCK: RwLock<()> = RwLock::new(());

/// Runs `write`, which opens, writes and closes files of a run's view, while no clone of
/// this process can happen.
pub(crate) fn writing_files<T>(write: impl FnOnce() -> T) -> T {
    let _guard = FORK_LOCK.read().unwrap_or_else(|e| e.into_inner());
    write()
}

/// [`raw_clone`] in the caller: no thread has a file of a view open for writing meanwhile.
unsafe fn clone_of_caller(flags: libc::c_ulong) -> libc::pid_t {
    let _guard = FORK_LOCK.write().unwrap_or_else(|e| e.into_inner());
    // SAFETY: as the caller's own call to raw_clone.
    unsafe { raw_clone(flags) }
}

/// `fork` without glibc's fork handlers: the child of a multi-threaded caller must not rely
/// on them anyway, and the supervisor (itself such a child) could deadlock in them. Called
/// in the caller's process through [`clone_of_caller`].
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
            Op::MoveMount { fd, target } => check(libc::syscall(
                libc::SYS_move_mount,
                *fd,
                c"".as_ptr(),
                libc::AT_FDCWD,
                target.as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            ) as libc::c_int),
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
unsafe fn supervisor(plan: &ChildPlan, exec: *const ExecHeader, fds: ChildFds) -> ! {
    // SAFETY: only syscalls on prepared data; see the module docs.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        close_all_except(&mut [
            fds.ctl,
            fds.status,
            fds.stdin,
            fds.out,
            fds.err,
            fds.channel,
            plan.keep_fd.unwrap_or(fds.ctl),
        ]);
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
        // The payload is forked now, drops its privileges and waits for "go 2" itself, so the
        // start of a run costs one wake-up and no fork.
        let payload_pid = raw_clone(0);
        if payload_pid == 0 {
            payload(exec, fds);
        }
        if payload_pid < 0 {
            send(
                fds.status,
                [TAG_SETUP_ERROR, plan.ops.len() as u64, errno() as u64, 0, 0],
            );
            libc::_exit(1);
        }
        send(fds.status, [TAG_READY, 0, 0, 0, 0]);
        // Meanwhile the caller writes the run's files into the repository view.
        libc::close(fds.ctl);
        libc::close(fds.out);
        libc::close(fds.err);
        libc::close(fds.stdin);
        // Only the payload writes to the channel: its end of file is the run's end.
        libc::close(fds.channel);
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
unsafe fn payload(exec: *const ExecHeader, fds: ChildFds) -> ! {
    // SAFETY: only syscalls on prepared data.
    unsafe {
        // The control and status pipes and the channel are used after stdio is set up: keep
        // them clear of 0..2 (a caller without stdin could have them there), and of the
        // channel's own number, which is taken last.
        let low = REPORT_CHANNEL_FD + 1;
        let fds = ChildFds {
            ctl: libc::fcntl(fds.ctl, libc::F_DUPFD_CLOEXEC, low),
            status: libc::fcntl(fds.status, libc::F_DUPFD_CLOEXEC, low),
            channel: libc::fcntl(fds.channel, libc::F_DUPFD_CLOEXEC, low),
            ..fds
        };
        if fds.ctl < 0 || fds.status < 0 || fds.channel < 0 {
            libc::_exit(127);
        }
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
        // The run starts: the caller has written the run's files and the exec area.
        if read_byte(fds.ctl) != Some(2) {
            libc::_exit(1);
        }
        let plan = &*exec;
        if plan.privileged == 0 {
            // No capabilities are left after the uid change; empty the bounding set as well
            // (it needs CAP_SETPCAP, so before), so that no exec can bring any back.
            for cap in 0..64 {
                libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
            }
            // Raw syscalls: glibc's wrappers would try to change the credentials of every
            // thread it believes exists — the caller's, which are not here — and wait for
            // them forever.
            let id = SANDBOX_ID as libc::c_long;
            if libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) != 0
                || libc::syscall(libc::SYS_setresgid, id, id, id) != 0
                || libc::syscall(libc::SYS_setresuid, id, id, id) != 0
            {
                fail(errno());
            }
        }
        // A session keyring of the run's own (as runc does): the caller's, inherited through
        // the clone, may hold its secrets, and one shared by runs would carry keys between
        // them. Raw syscall, as above. The filter at exec refuses key calls as well.
        if libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_JOIN_SESSION_KEYRING,
            std::ptr::null::<libc::c_char>(),
        ) < 0
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
            [fds.stdin, fds.out, fds.err].map(|fd| libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, low));
        for (target, src) in srcs.iter().enumerate() {
            if *src < 0 || libc::dup2(*src, target as i32) < 0 {
                fail(errno());
            }
        }
        // Lowering limits needs no privilege (raising a hard limit never worked here: that
        // takes CAP_SYS_RESOURCE in the host's user namespace).
        for &[res, soft, hard] in &plan.rlimits[..plan.rlimit_count.min(MAX_RLIMITS)] {
            let rl = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(res as libc::__rlimit_resource_t, &rl) != 0 {
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
        // dup2 leaves the new descriptor open across exec; what was on that number before is
        // an inherited copy nothing uses.
        if plan.report_channel != 0 && libc::dup2(fds.channel, REPORT_CHANNEL_FD) < 0 {
            fail(errno());
        }
        if libc::chdir(plan.workdir) != 0 {
            fail(errno());
        }
        // Last, so that nothing above runs under it; no_new_privs (set above) lets an
        // unprivileged process install it.
        let prog = libc::sock_fprog {
            len: SECCOMP_FILTER.len() as libc::c_ushort,
            filter: SECCOMP_FILTER.as_ptr().cast_mut(),
        };
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &prog as *const libc::sock_fprog,
        ) != 0
        {
            fail(errno());
        }
        let mut first_err = libc::ENOENT;
        for i in 0..plan.candidate_count {
            libc::execve(*plan.candidates.add(i), plan.argv, plan.env);
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
    /// The read end of the report channel.
    channel: OwnedFd,
    /// The write end of the payload's stdin, when it is a pipe.
    stdin: Option<OwnedFd>,
    exec: ExecArea,
    reaped: bool,
}

/// How a started run ended, as the parent saw it.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The supervisor after a normal end: it has reaped every process of the run and sent
    /// its report, and is exiting. Dropping it reaps it (which waits for the kernel to tear
    /// down its namespaces), so the caller may do that off the critical path.
    pub(crate) exiting: Option<Running>,
    /// The payload's wait status, or `None` when the supervisor was killed first.
    pub(crate) payload_status: Option<i32>,
    /// The signal that killed the supervisor, if one did.
    pub(crate) supervisor_signal: Option<i32>,
    pub(crate) exec_error: Option<io::Error>,
    pub(crate) timed_out: bool,
    pub(crate) stdout: Captured,
    pub(crate) stderr: Captured,
    /// What the run wrote into its report channel.
    pub(crate) channel: ChannelBytes,
    pub(crate) duration: Duration,
    pub(crate) cpu_time: Duration,
}

/// A new network namespace with only `lo`, up, held by the returned descriptor.
///
/// It is made on a short-lived thread of its own (a network namespace is a per-thread
/// property), owned by the host's user namespace: a run that joins it has no capability over
/// it, so it can neither reconfigure it nor leave anything in it but sockets, which die with
/// the run's processes.
pub(crate) fn new_netns() -> io::Result<OwnedFd> {
    std::thread::spawn(|| -> io::Result<OwnedFd> {
        // SAFETY: unshare and open act on this thread alone; run_op is given a plain op.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            run_op(&Op::LoopbackUp).map_err(io::Error::from_raw_os_error)?;
            let fd = libc::open(
                c"/proc/thread-self/ns/net".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(OwnedFd::from_raw_fd(fd))
        }
    })
    .join()
    .unwrap_or_else(|_| Err(io::Error::other("the network namespace thread panicked")))
}

/// Whether the network namespace `fd` holds no TCP socket in any state. A socket outlives
/// its process in the states after a close (TIME_WAIT for a minute after an active close,
/// FIN_WAIT, LAST_ACK): one left on a port would make the next run's `bind` of that port
/// fail. Read on the calling thread, which goes back to its own namespace at once.
///
/// The namespace's own counters in `sockstat` say it (`inuse` counts every hashed socket,
/// orphans included; `tw` the TIME_WAIT ones); `/proc/net/tcp` would too, but reading it
/// walks the host's whole connection table, a millisecond of CPU per run. The last packets of
/// the run's connections may still be on their way through `lo` when its processes are gone,
/// so a namespace with sockets is looked at again a few times, a millisecond apart, before it
/// is called taken: only TIME_WAIT lasts.
pub(crate) fn netns_is_empty(fd: RawFd) -> io::Result<bool> {
    let own = std::fs::File::open("/proc/thread-self/ns/net")?;
    enter_netns(fd)?;
    let counters_zero = || -> io::Result<bool> {
        let v4 = std::fs::read_to_string("/proc/thread-self/net/sockstat")?;
        let v6 = std::fs::read_to_string("/proc/thread-self/net/sockstat6")?;
        Ok(tcp_sockets(&v4, "TCP:") == Some(0) && tcp_sockets(&v6, "TCP6:") == Some(0))
    };
    let mut empty = counters_zero();
    for _ in 0..3 {
        if !matches!(empty, Ok(false)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
        empty = counters_zero();
    }
    enter_netns(own.as_raw_fd()).expect("going back to the thread's own network namespace");
    empty
}

/// The TCP sockets a `sockstat` line counts (`TCP: inuse 1 orphan 0 tw 2 alloc 3 mem 4`): in
/// use plus TIME_WAIT. `None` when the line is missing or malformed.
fn tcp_sockets(sockstat: &str, prefix: &str) -> Option<u64> {
    let line = sockstat.lines().find_map(|l| l.strip_prefix(prefix))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let field = |name: &str| -> Option<u64> {
        let i = words.iter().position(|w| *w == name)?;
        words.get(i + 1)?.parse().ok()
    };
    Some(field("inuse")? + field("tw").unwrap_or(0))
}

/// Moves the calling thread into the network namespace `fd`.
fn enter_netns(fd: RawFd) -> io::Result<()> {
    // SAFETY: setns on a valid descriptor changes only this thread's namespace.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Clones the supervisor into new namespaces and waits until it has built the root. With
/// `netns` it joins that network namespace ([`new_netns`]) instead of making one: the clone
/// happens while the calling thread is in it, and the thread goes back at once.
pub(crate) fn start(
    plan: &ChildPlan,
    host_uid: u32,
    netns: Option<RawFd>,
    stdin_pipe: bool,
    attach: impl FnOnce(libc::pid_t) -> io::Result<()>,
) -> Result<Running, StartError> {
    let exec = ExecArea::new()?;
    let (ctl_r, ctl_w) = pipe()?;
    let (status_r, status_w) = pipe()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    // Made for every run (a pipe costs next to nothing, and a prepared supervisor does not
    // know its command yet); exec closes it in a payload that was not given it.
    let (channel_r, channel_w) = pipe()?;
    // The payload's stdin: nothing, or (for a worker) a pipe the caller writes requests to.
    let (devnull, stdin_w) = if stdin_pipe {
        let (r, w) = pipe()?;
        (r, Some(w))
    } else {
        let null = std::fs::File::open("/dev/null")
            .map_err(|e| SandboxError::io("opening", "/dev/null", e))?;
        (OwnedFd::from(null), None)
    };
    let fds = ChildFds {
        ctl: ctl_r.as_raw_fd(),
        status: status_w.as_raw_fd(),
        stdin: devnull.as_raw_fd(),
        out: out_w.as_raw_fd(),
        err: err_w.as_raw_fd(),
        channel: channel_w.as_raw_fd(),
    };
    let mut flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS;
    let home = match netns {
        None => {
            flags |= libc::CLONE_NEWNET;
            None
        }
        Some(fd) => {
            let own = std::fs::File::open("/proc/thread-self/ns/net")
                .map_err(|e| SandboxError::io("opening", "/proc/thread-self/ns/net", e))?;
            enter_netns(fd).map_err(|e| SandboxError::Sys {
                what: "joining the run's network namespace",
                source: e,
            })?;
            Some(own)
        }
    };
    // SAFETY: the child runs only `supervisor`, which never returns and does not allocate.
    let pid = unsafe { clone_of_caller(flags as libc::c_ulong) };
    if pid == 0 {
        // SAFETY: see above.
        unsafe { supervisor(plan, exec.ptr as *const ExecHeader, fds) };
    }
    if let Some(own) = home {
        // The thread must not stay in the run's namespace: its own later connections (and
        // the caller's, if it is the main thread) belong on the host.
        enter_netns(own.as_raw_fd()).expect("going back to the thread's own network namespace");
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
        channel: channel_r,
        stdin: stdin_w,
        exec,
        reaped: false,
    };
    drop((ctl_r, status_w, out_w, err_w, channel_w, devnull));
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
        Some([TAG_EXEC_ERROR, e, ..]) => {
            running.kill_and_reap();
            Err(SandboxError::Setup {
                step: "drop the payload's privileges".into(),
                source: io::Error::from_raw_os_error(e as i32),
            }
            .into())
        }
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
        plan: &ExecPlan,
        wall: Duration,
        output_cap: usize,
    ) -> Result<Finished, SandboxError> {
        self.exec.write(plan)?;
        for fd in [&self.out, &self.err, &self.channel] {
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
        let mut channel = ChannelBytes::default();
        let mut status_buf = Vec::new();
        let mut open = [true; 4];
        let mut timed_out = false;
        let mut done: Option<[u64; 5]> = None;
        let mut exec_error = None;
        let mut end = None;
        let mut scratch = Vec::with_capacity(65536);
        // Once DONE is in, every process of the run is gone (the supervisor reaped them) and
        // the supervisor is on its way out: its exit is not waited for here (see `Finished`).
        while open[1] || open[2] || open[3] || (open[0] && done.is_none()) {
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
                self.channel.as_raw_fd(),
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
                                match i {
                                    1 => out.push(&scratch),
                                    2 => err.push(&scratch),
                                    _ => channel.push(&scratch),
                                }
                                if scratch.len() < 4096 {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
        let (supervisor_signal, exiting) = if done.is_some() {
            (None, Some(self))
        } else {
            let st = self.kill_and_reap();
            let signal = libc::WIFSIGNALED(st).then(|| libc::WTERMSIG(st));
            if !timed_out && signal.is_none() {
                return Err(SandboxError::SupervisorDied(st));
            }
            (signal, None)
        };
        Ok(Finished {
            exiting,
            payload_status: done.map(|d| d[1] as u32 as i32),
            supervisor_signal,
            exec_error,
            timed_out,
            stdout: out.finish(),
            stderr: err.finish(),
            channel,
            duration: end.unwrap_or_else(Instant::now) - start,
            cpu_time: Duration::from_micros(done.map_or(0, |d| d[2])),
        })
    }

    /// Lets a long-lived payload (a warm worker) start and returns at once: the caller talks
    /// to it through its stdin ([`Running::requests`]) and stdout ([`Running::answers`]).
    /// Dropping the `Running` kills it and everything it started.
    pub(crate) fn start_payload(&mut self, plan: &ExecPlan) -> Result<(), SandboxError> {
        self.exec.write(plan)?;
        self.send_ctl(2)
    }

    pub(crate) fn requests(&self) -> Option<RawFd> {
        self.stdin.as_ref().map(AsRawFd::as_raw_fd)
    }

    pub(crate) fn answers(&self) -> RawFd {
        self.out.as_raw_fd()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockstat_counts_sockets_in_use_and_in_time_wait() {
        let v4 =
            "sockets: used 29\nTCP: inuse 1 orphan 0 tw 2 alloc 1 mem 290\nUDP: inuse 0 mem 0\n";
        assert_eq!(tcp_sockets(v4, "TCP:"), Some(3));
        assert_eq!(
            tcp_sockets("TCP6: inuse 0\nUDP6: inuse 4\n", "TCP6:"),
            Some(0)
        );
        assert_eq!(tcp_sockets("UDP: inuse 0\n", "TCP:"), None);
    }
}
