//! What a caller asks of one run, and what it gets back.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clover_protocol::LimitHit;

use crate::capture::Captured;

/// The limits of one run. Every field has a default sized for one test file of an
/// interpreted language.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Wall clock from the start of the payload; on expiry the whole pid namespace is killed.
    pub wall: Duration,
    /// CPU seconds of each process (RLIMIT_CPU); SIGXCPU then SIGKILL.
    pub cpu_secs: u64,
    /// Memory of the whole run (cgroup), including what it writes to its tmpfs.
    pub memory_bytes: u64,
    /// Processes and threads of the whole run (cgroup `pids.max`, and RLIMIT_NPROC of its uid).
    pub pids: u64,
    /// Largest file the run may write (RLIMIT_FSIZE).
    pub file_size_bytes: u64,
    /// Open file descriptors per process (RLIMIT_NOFILE).
    pub open_files: u64,
    /// Size of the run's `/tmp` (which also holds `HOME`).
    pub tmpfs_bytes: u64,
    /// Room for what the run writes into the repository (the overlay's upper layer, or the
    /// copy of the repository where overlayfs is unavailable).
    pub overlay_bytes: u64,
    /// Bytes kept of each of stdout and stderr (head and tail halves).
    pub output_bytes: usize,
    /// Cores the whole run may keep busy at once, over all its processes and threads (cgroup
    /// `cpu.max`, or the CFS quota on v1); fractions are fine, 0 means no cap. Without it a
    /// candidate that busy-loops in threads takes every core from the runs beside it.
    pub cpus: f64,
}

impl Default for Limits {
    fn default() -> Self {
        const MIB: u64 = 1024 * 1024;
        Limits {
            wall: Duration::from_secs(60),
            cpu_secs: 60,
            memory_bytes: 2048 * MIB,
            pids: 256,
            file_size_bytes: 256 * MIB,
            open_files: 1024,
            tmpfs_bytes: 256 * MIB,
            overlay_bytes: 256 * MIB,
            output_bytes: MIB as usize,
            cpus: 1.0,
        }
    }
}

/// A file to create in the run's writable view of the repository before the payload starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFile {
    /// Relative to the repository root; must not leave it.
    pub path: PathBuf,
    pub contents: Vec<u8>,
}

/// One run: a command inside a throwaway view of a repository.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The repository on the host. It is the read-only lower layer and appears inside the
    /// sandbox at the same absolute path, so paths in reports read the same as on the host.
    pub repo: PathBuf,
    /// Files written into the run's view (the candidate test, a conftest, ...).
    pub files: Vec<WriteFile>,
    /// Working directory, relative to the repository root.
    pub workdir: PathBuf,
    /// The command. A first element without `/` is looked up in `PATH` inside the sandbox.
    pub argv: Vec<OsString>,
    /// Variables added to the clean environment (they override its defaults).
    pub env: Vec<(OsString, OsString)>,
    /// Host paths bound read-only at the same path (a virtual environment, the interpreter
    /// prefix it points to, a compiler's include tree). Missing paths are an error.
    pub binds: Vec<PathBuf>,
    /// Directories (relative to the repository) that the sandbox user may write to, in
    /// addition to the repository root and `workdir`, which always are writable.
    pub writable_dirs: Vec<PathBuf>,
    pub limits: Limits,
    /// Files (relative to the repository) read back after the run, without following
    /// symlinks, at most `collect_max_bytes` each.
    pub collect: Vec<PathBuf>,
    pub collect_max_bytes: u64,
    /// Gives the payload the write end of a pipe that only the host reads: descriptor
    /// [`REPORT_CHANNEL_FD`], named in `$CLOVER_REPORT_FD`. What a trusted part of the run
    /// (a test runner's own plugin) says there cannot be written by path into the run's
    /// files, as a report can; [`RunOutput::channel`] holds it.
    pub report_channel: bool,
}

/// The descriptor a run with [`RunSpec::report_channel`] finds its channel on.
pub const REPORT_CHANNEL_FD: i32 = 3;
/// The variable that names it (a warm worker's candidate has it elsewhere).
pub const REPORT_CHANNEL_ENV: &str = "CLOVER_REPORT_FD";
/// Bytes kept of what a run writes into its channel; the rest is counted only. A record is a
/// few hundred bytes.
pub const REPORT_CHANNEL_MAX_BYTES: usize = 64 * 1024;

impl RunSpec {
    /// A run of `argv` in the repository root with default limits.
    pub fn new(
        repo: impl Into<PathBuf>,
        argv: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        RunSpec {
            repo: repo.into(),
            files: Vec::new(),
            workdir: PathBuf::new(),
            argv: argv.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            binds: Vec::new(),
            writable_dirs: Vec::new(),
            limits: Limits::default(),
            collect: Vec::new(),
            collect_max_bytes: 64 * 1024 * 1024,
            report_channel: false,
        }
    }
}

/// How the payload ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

/// "exit code 1" or "signal 9", for messages.
impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitStatus::Code(c) => write!(f, "exit code {c}"),
            ExitStatus::Signal(s) => write!(f, "signal {s}"),
        }
    }
}

impl ExitStatus {
    pub fn success(self) -> bool {
        self == ExitStatus::Code(0)
    }

    pub fn code(self) -> Option<i32> {
        match self {
            ExitStatus::Code(c) => Some(c),
            ExitStatus::Signal(_) => None,
        }
    }

    pub fn signal(self) -> Option<i32> {
        match self {
            ExitStatus::Signal(s) => Some(s),
            ExitStatus::Code(_) => None,
        }
    }
}

/// A file read back from the run's view of the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectedFile {
    /// As asked for in [`RunSpec::collect`].
    pub path: PathBuf,
    pub content: Collected,
}

/// What reading back one file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collected {
    /// A regular file; `truncated` when it was longer than the cap.
    Read { bytes: Vec<u8>, truncated: bool },
    /// Nothing at that path.
    Missing,
    /// Something was there but was not read: a symlink on the way, not a regular file, ...
    Refused(String),
}

impl Collected {
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Collected::Read { bytes, .. } => Some(bytes),
            _ => None,
        }
    }
}

/// How the run's files were made writable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RepoView {
    Overlay,
    Copy,
}

/// What enforced the memory and process limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitBackend {
    CgroupV2,
    CgroupV1,
    Rlimits,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct RunOutput {
    pub exit: ExitStatus,
    /// The limit that ended the run, if one did.
    pub limit_hit: Option<LimitHit>,
    pub stdout: Captured,
    pub stderr: Captured,
    /// From the payload's start to the end of the last process in the run.
    pub duration: Duration,
    /// CPU time (user + system) of all processes of the run.
    pub cpu_time: Duration,
    /// Peak memory of the run when a cgroup measured it.
    pub peak_memory_bytes: Option<u64>,
    pub files: Vec<CollectedFile>,
    pub repo_view: RepoView,
    pub limit_backend: LimitBackend,
    /// The host uid the sandbox user (65534 inside) was mapped to for this run.
    pub host_uid: u32,
    /// What the run wrote into its report channel, when it had one.
    pub channel: Option<ChannelBytes>,
}

/// What a run wrote into its report channel: every byte, up to
/// [`REPORT_CHANNEL_MAX_BYTES`], in the order written by every writer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelBytes {
    pub bytes: Vec<u8>,
    /// All that was written, counted (more than `bytes` holds when the cap cut it).
    pub total: u64,
}

impl ChannelBytes {
    /// Adds what was read, keeping at most the cap.
    pub fn push(&mut self, data: &[u8]) {
        let room = REPORT_CHANNEL_MAX_BYTES.saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&data[..data.len().min(room)]);
        self.total += data.len() as u64;
    }
}

impl RunOutput {
    /// The collected file at `path`, if it was asked for.
    pub fn file(&self, path: impl AsRef<std::path::Path>) -> Option<&Collected> {
        self.files
            .iter()
            .find(|f| f.path == path.as_ref())
            .map(|f| &f.content)
    }
}
