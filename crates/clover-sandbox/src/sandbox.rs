//! [`Sandbox`]: one per process, shared by all runs (it is `Sync`; runs may go in parallel).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fs::OpenOptions;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use clover_protocol::LimitHit;

use crate::error::SandboxError;
use crate::fs::{self as sfs, Layout, RootOps, HOME};
use crate::limits::{rlimits, CgroupStats, Cgroups, RunCgroup};
use crate::spawn::{self, cstring, ChildPlan, ExecPlan, StartError};
use crate::spec::{
    CollectedFile, ExitStatus, LimitBackend, Limits, RepoView, RunOutput, RunSpec,
    REPORT_CHANNEL_ENV, REPORT_CHANNEL_FD,
};

/// Host uids handed to runs start here: far above the uids of real accounts and of the usual
/// subordinate-uid ranges, and each run gets its own so RLIMIT_NPROC counts only that run.
const HOST_UID_BASE: u32 = 0x7000_0000;
const HOST_UID_SPAN: u64 = 0x0800_0000;

const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Runs commands in sandboxes. Create one per process with [`Sandbox::new`].
#[derive(Debug)]
pub struct Sandbox {
    shared: Arc<Shared>,
    overlay_unavailable: AtomicBool,
    /// Layouts run before: a layout's second run asks for supervisors to be prepared.
    seen: Mutex<HashSet<LayoutKey>>,
    /// Builds supervisors ahead of need, for layouts that repeat.
    preparer: Option<mpsc::Sender<LayoutKey>>,
    preparer_thread: Option<std::thread::JoinHandle<()>>,
    /// Takes finished runs' exiting supervisors and cgroups, and reaps and removes them while
    /// the caller goes on.
    reaper: Option<mpsc::Sender<Teardown>>,
    reaper_thread: Option<std::thread::JoinHandle<()>>,
}

/// What the preparer thread shares with the runs.
#[derive(Debug)]
struct Shared {
    mount_dir: PathBuf,
    cgroups: Cgroups,
    /// Set when the repository's file system cannot be an idmapped lower layer.
    idmap_unavailable: AtomicBool,
    /// Supervisors that have built a root and wait for a command, by layout.
    pool: Mutex<HashMap<LayoutKey, Vec<Prepared>>>,
    /// Network namespaces no run is in (see [`NetnsLease`]), oldest first: lending the one
    /// given back longest ago uses them all in turn.
    netns_free: Mutex<VecDeque<OwnedFd>>,
    /// Set when no network namespace could be prepared: runs then make their own.
    netns_unavailable: AtomicBool,
}

/// A network namespace lent to one run: only `lo`, up, and no other process in it. Making and
/// destroying a network namespace is the dearest part of starting a sandbox (the kernel tears
/// it down on a shared work queue); reusing one is safe because the run has no capability
/// over it (it belongs to the host's user namespace), so all it can leave in it is sockets.
/// Most die with the run's processes; a TCP socket that was closed lives on (TIME_WAIT, for a
/// minute) and would hold its port against the next run. So when dropped — which the run's
/// teardown does only after its supervisor, and so every process of the run, is gone — it
/// goes back to the free list only if no TCP socket is left in it, and is destroyed
/// otherwise (with whatever was left).
#[derive(Debug)]
struct NetnsLease {
    fd: Option<OwnedFd>,
    shared: Arc<Shared>,
}

impl NetnsLease {
    /// A free namespace, or a new one; `None` when none can be made (runs then make their own).
    fn take(shared: &Arc<Shared>) -> Option<NetnsLease> {
        if shared.netns_unavailable.load(Ordering::Relaxed) {
            return None;
        }
        let free = shared
            .netns_free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        let fd = match free {
            Some(fd) => fd,
            None => match spawn::new_netns() {
                Ok(fd) => fd,
                Err(_) => {
                    shared.netns_unavailable.store(true, Ordering::Relaxed);
                    return None;
                }
            },
        };
        Some(NetnsLease {
            fd: Some(fd),
            shared: Arc::clone(shared),
        })
    }

    fn raw(&self) -> Option<std::os::fd::RawFd> {
        self.fd.as_ref().map(AsRawFd::as_raw_fd)
    }
}

impl Drop for NetnsLease {
    fn drop(&mut self) {
        let Some(fd) = self.fd.take() else { return };
        if spawn::netns_is_empty(fd.as_raw_fd()).unwrap_or(false) {
            self.shared
                .netns_free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_back(fd);
        }
    }
}

/// Prepared supervisors kept per layout: enough for the usual two parallel runs.
const POOL_DEPTH: usize = 2;
/// A prepared supervisor older than this is not used: its view of the repository should not
/// be much older than the run.
const POOL_MAX_AGE: Duration = Duration::from_secs(10);

/// Everything a supervisor's root and cgroups are built from; runs with equal keys can use
/// each other's prepared supervisors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct LayoutKey {
    repo: PathBuf,
    binds: Vec<PathBuf>,
    view: RepoView,
    overlay_bytes: u64,
    tmpfs_bytes: u64,
    memory_bytes: u64,
    pids: u64,
    /// [`Limits::cpus`] in thousandths of a core (a float is no key).
    cpu_millis: u64,
}

impl LayoutKey {
    /// The limits the root and the cgroups are built with (the others apply at exec).
    fn limits(&self) -> Limits {
        Limits {
            overlay_bytes: self.overlay_bytes,
            tmpfs_bytes: self.tmpfs_bytes,
            memory_bytes: self.memory_bytes,
            pids: self.pids,
            cpus: self.cpu_millis as f64 / 1000.0,
            ..Limits::default()
        }
    }
}

/// A supervisor that has built its root, in its cgroups, waiting for "go". Fields drop in
/// order: the supervisor is reaped before its cgroups are removed.
#[derive(Debug)]
struct Prepared {
    running: spawn::Running,
    cgroup: RunCgroup,
    netns: Option<NetnsLease>,
    host_uid: u32,
    made: Instant,
}

/// What is left of a run once its result is known. Fields drop in order: the supervisor is
/// reaped before its cgroups are removed (a cgroup with a task in it cannot be).
#[derive(Debug)]
struct Teardown {
    _supervisor: Option<spawn::Running>,
    _cgroup: RunCgroup,
    _netns: Option<NetnsLease>,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        drop(self.preparer.take());
        if let Some(t) = self.preparer_thread.take() {
            let _ = t.join();
        }
        // Idle supervisors are killed, reaped, and their cgroups removed.
        self.shared
            .pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        drop(self.reaper.take());
        if let Some(t) = self.reaper_thread.take() {
            let _ = t.join();
        }
    }
}

/// Numbers the runs of this process, across every [`Sandbox`] in it: cgroup names and host
/// uids derive from it and must not repeat.
static RUN_SEQ: AtomicU64 = AtomicU64::new(0);

impl Sandbox {
    /// Checks that runs are possible (root), finds the cgroup hierarchy to use and removes
    /// cgroups left behind by crashed runs.
    pub fn new() -> Result<Sandbox, SandboxError> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(SandboxError::NotRoot);
        }
        let mount_dir = std::env::temp_dir().join("clover-sandbox-mnt");
        std::fs::create_dir_all(&mount_dir)
            .and_then(|()| {
                std::fs::set_permissions(&mount_dir, std::fs::Permissions::from_mode(0o700))
            })
            .map_err(|e| SandboxError::io("creating", &mount_dir, e))?;
        let cgroups = Cgroups::detect();
        cgroups.remove_stale();
        let shared = Arc::new(Shared {
            mount_dir,
            cgroups,
            idmap_unavailable: AtomicBool::new(false),
            pool: Mutex::new(HashMap::new()),
            netns_free: Mutex::new(VecDeque::new()),
            netns_unavailable: AtomicBool::new(false),
        });
        let for_preparer = Arc::clone(&shared);
        let (prep_tx, prep_rx) = mpsc::channel::<LayoutKey>();
        // This thread is the parent of the supervisors it prepares: it must live as long as
        // they do (their parent-death signal follows the thread, not the process).
        let preparer_thread = std::thread::Builder::new()
            .name("clover-sandbox-preparer".into())
            .spawn(move || {
                for key in prep_rx {
                    let full = |s: &Shared| {
                        s.pool
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get(&key)
                            .is_some_and(|v| v.len() >= POOL_DEPTH)
                    };
                    if full(&for_preparer) {
                        continue;
                    }
                    // A failure here is met again, and reported, by the run that needs it.
                    if let Ok(p) = prepare(&for_preparer, &key, false) {
                        let mut pool = for_preparer.pool.lock().unwrap_or_else(|e| e.into_inner());
                        let slot = pool.entry(key).or_default();
                        if slot.len() < POOL_DEPTH {
                            slot.push(p);
                        }
                    }
                }
            })
            .map_err(|e| SandboxError::Sys {
                what: "starting the preparer thread",
                source: e,
            })?;
        let (tx, rx) = mpsc::channel::<Teardown>();
        let reaper_thread = std::thread::Builder::new()
            .name("clover-sandbox-reaper".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .map_err(|e| SandboxError::Sys {
                what: "starting the reaper thread",
                source: e,
            })?;
        Ok(Sandbox {
            shared,
            overlay_unavailable: AtomicBool::new(false),
            seen: Mutex::new(HashSet::new()),
            preparer: Some(prep_tx),
            preparer_thread: Some(preparer_thread),
            reaper: Some(tx),
            reaper_thread: Some(reaper_thread),
        })
    }

    /// What enforces memory and process limits on this host.
    pub fn limit_backend(&self) -> LimitBackend {
        self.shared.cgroups.backend()
    }

    /// Runs `spec` to the end. A payload that fails, crashes or hits a limit is an `Ok`; an
    /// `Err` means the run could not be carried out (bad spec, host problem, command missing).
    pub fn run(&self, spec: &RunSpec) -> Result<RunOutput, SandboxError> {
        let (repo, binds) = checked(spec)?;
        let overlay = !self.overlay_unavailable.load(Ordering::Relaxed) && sfs::overlay_safe(&repo);
        if overlay {
            match self.run_view(spec, &repo, &binds, RepoView::Overlay) {
                Err(RunError::OverlayFailed) => {
                    self.overlay_unavailable.store(true, Ordering::Relaxed);
                }
                other => return other.map_err(RunError::into_sandbox),
            }
        }
        self.run_view(spec, &repo, &binds, RepoView::Copy)
            .map_err(RunError::into_sandbox)
    }

    /// Starts the supervisor of a long-lived worker: `spec` is run as a payload that keeps
    /// uid 0 and the capabilities of the run's user namespace (never the host's), with a
    /// request pipe and an answer pipe ([`WorkerProcess`]), and is not waited for. It needs
    /// an overlay view of the repository (a worker stacks one overlay per request on it).
    pub fn start_worker(&self, spec: &RunSpec) -> Result<WorkerProcess, SandboxError> {
        let (repo, binds) = checked(spec)?;
        if self.overlay_unavailable.load(Ordering::Relaxed) || !sfs::overlay_safe(&repo) {
            return Err(SandboxError::InvalidSpec(
                "a warm worker needs an overlay view of the repository".into(),
            ));
        }
        let key = layout_key(&repo, &binds, RepoView::Overlay, &spec.limits);
        let Prepared {
            running,
            cgroup,
            netns,
            host_uid,
            ..
        } = prepare(&self.shared, &key, true).map_err(RunError::into_sandbox)?;
        let root = running.root();
        let repo_fd = open_path(&root.join(repo.strip_prefix("/").unwrap_or(&repo)))?;
        fill_view(spec, repo_fd.as_raw_fd(), host_uid)?;
        let mut plan = exec_plan(spec, &repo, self.shared.cgroups.backend())?;
        plan.privileged = true;
        let mut running = running;
        running.start_payload(&plan)?;
        Ok(WorkerProcess {
            running,
            cgroup,
            _netns: netns,
            host_uid,
            backend: self.shared.cgroups.backend(),
        })
    }
}

/// A started worker's supervisor and what it holds ([`Sandbox::start_worker`]). Dropping it
/// ends the worker. Fields drop in order: the supervisor (and so the worker and its children)
/// is killed and reaped before its cgroups are removed.
#[derive(Debug)]
pub struct WorkerProcess {
    running: spawn::Running,
    cgroup: RunCgroup,
    _netns: Option<NetnsLease>,
    host_uid: u32,
    backend: LimitBackend,
}

impl WorkerProcess {
    /// The write end of the worker's request pipe (its stdin), while it has one.
    pub fn requests(&self) -> Option<RawFd> {
        self.running.requests()
    }

    /// The read end of the worker's answer pipe.
    pub fn answers(&self) -> RawFd {
        self.running.answers()
    }

    /// What the worker's cgroups have counted so far, every request it served included.
    pub fn stats(&self) -> CgroupStats {
        self.cgroup.stats()
    }

    /// The host uid the worker's sandbox user is mapped to.
    pub fn host_uid(&self) -> u32 {
        self.host_uid
    }

    /// How the worker's limits are enforced.
    pub fn backend(&self) -> LimitBackend {
        self.backend
    }
}

/// The repository and binds of a spec, canonical, once the spec is checked.
fn checked(spec: &RunSpec) -> Result<(PathBuf, Vec<PathBuf>), SandboxError> {
    if spec.argv.is_empty() {
        return Err(SandboxError::InvalidSpec("the command is empty".into()));
    }
    sfs::check_relative("working directory", &spec.workdir)?;
    for f in &spec.files {
        sfs::check_relative("file", &f.path)?;
        if f.path.file_name().is_none() {
            return Err(SandboxError::InvalidSpec(format!(
                "file {} has no file name",
                f.path.display()
            )));
        }
    }
    for p in spec.writable_dirs.iter().chain(&spec.collect) {
        sfs::check_relative("path", p)?;
    }
    let repo = spec
        .repo
        .canonicalize()
        .map_err(|e| SandboxError::io("opening the repository", &spec.repo, e))?;
    if !repo.is_dir() || repo == Path::new("/") {
        return Err(SandboxError::InvalidSpec(format!(
            "repository {} is not a directory below /",
            repo.display()
        )));
    }
    let binds = spec
        .binds
        .iter()
        .map(|b| {
            b.canonicalize()
                .map_err(|e| SandboxError::io("binding", b, e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((repo, binds))
}

/// The layout a run of `limits` with this repository, binds and view is built with.
fn layout_key(repo: &Path, binds: &[PathBuf], view: RepoView, limits: &Limits) -> LayoutKey {
    LayoutKey {
        repo: repo.to_path_buf(),
        binds: binds.to_vec(),
        view,
        overlay_bytes: limits.overlay_bytes,
        tmpfs_bytes: limits.tmpfs_bytes,
        memory_bytes: limits.memory_bytes,
        pids: limits.pids,
        // Negative and NaN become 0: no cap, as they mean in `Limits`.
        cpu_millis: (limits.cpus * 1000.0).round() as u64,
    }
}

/// Writes a spec's files into a run's view of the repository (`repo_fd`) and makes its
/// working and writable folders the sandbox user's.
fn fill_view(spec: &RunSpec, fd: RawFd, host_uid: u32) -> Result<(), SandboxError> {
    for f in &spec.files {
        sfs::write_beneath(fd, &f.path, &f.contents, host_uid)
            .map_err(|e| SandboxError::io("writing", &f.path, e))?;
    }
    for d in std::iter::once(&spec.workdir).chain(&spec.writable_dirs) {
        if !d.as_os_str().is_empty() {
            sfs::make_writable(fd, d, host_uid).map_err(|e| SandboxError::io("preparing", d, e))?;
        }
    }
    Ok(())
}

impl Sandbox {
    fn run_view(
        &self,
        spec: &RunSpec,
        repo: &Path,
        binds: &[PathBuf],
        view: RepoView,
    ) -> Result<RunOutput, RunError> {
        let limits = &spec.limits;
        let plan = exec_plan(spec, repo, self.shared.cgroups.backend())?;
        let key = layout_key(repo, binds, view, limits);
        let pooled = self.take_prepared(&key);
        let hit = pooled.is_some();
        let Prepared {
            running,
            cgroup,
            netns,
            host_uid,
            ..
        } = match pooled {
            Some(p) => p,
            None => prepare(&self.shared, &key, false)?,
        };
        let repeat = hit
            || !self
                .seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key.clone());
        if repeat {
            if let Some(tx) = &self.preparer {
                let _ = tx.send(key);
            }
        }
        let root = running.root();
        let repo_inside = root.join(repo.strip_prefix("/").unwrap_or(repo));
        let repo_fd = open_path(&repo_inside)?;
        let tmp_fd = open_path(&root.join("tmp"))?;
        if view == RepoView::Copy {
            sfs::copy_tree(repo, &repo_inside, host_uid)
                .map_err(|e| SandboxError::io("copying the repository into", repo, e))?;
        }
        let fd = repo_fd.as_raw_fd();
        fill_view(spec, fd, host_uid)?;
        let mut fin = running.run(&plan, limits.wall, limits.output_bytes)?;
        // Every process of the run is gone, so the cgroup's counters are final.
        let stats = cgroup.stats();
        let teardown = Teardown {
            _supervisor: fin.exiting.take(),
            _cgroup: cgroup,
            _netns: netns,
        };
        match &self.reaper {
            // A reaper that is gone hands the teardown back; it is then done here.
            Some(tx) => drop(tx.send(teardown)),
            None => drop(teardown),
        }
        if let Some(source) = fin.exec_error {
            return Err(SandboxError::Exec {
                program: spec.argv[0].to_string_lossy().into_owned(),
                source,
            }
            .into());
        }
        let exit = match fin.payload_status {
            Some(st) if libc::WIFEXITED(st) => ExitStatus::Code(libc::WEXITSTATUS(st)),
            Some(st) if libc::WIFSIGNALED(st) => ExitStatus::Signal(libc::WTERMSIG(st)),
            Some(_) => ExitStatus::Signal(libc::SIGKILL),
            None => ExitStatus::Signal(fin.supervisor_signal.unwrap_or(libc::SIGKILL)),
        };
        let disk_full = [fd, tmp_fd.as_raw_fd()].iter().any(|&fd| {
            sfs::fs_space(fd).is_some_and(|(free, size)| free <= (size / 100).max(64 * 1024))
        });
        let limit_hit = decide_limit(fin.timed_out, exit, &stats, fin.cpu_time, limits, disk_full);
        let files = spec
            .collect
            .iter()
            .map(|p| CollectedFile {
                path: p.clone(),
                content: sfs::read_beneath(fd, p, spec.collect_max_bytes),
            })
            .collect();
        Ok(RunOutput {
            exit,
            limit_hit,
            stdout: fin.stdout,
            stderr: fin.stderr,
            duration: fin.duration,
            cpu_time: fin.cpu_time,
            peak_memory_bytes: stats.peak_memory,
            files,
            repo_view: view,
            limit_backend: self.shared.cgroups.backend(),
            host_uid,
            channel: spec.report_channel.then_some(fin.channel),
        })
    }
}

impl Sandbox {
    /// A prepared supervisor for `key`, if one is there and fresh.
    ///
    /// Every stale supervisor goes on the way, whatever its layout: one prepared for a
    /// repository no run comes back to would otherwise hold its process, cgroups and network
    /// namespace until the sandbox is dropped.
    fn take_prepared(&self, key: &LayoutKey) -> Option<Prepared> {
        let mut pool = self.shared.pool.lock().unwrap_or_else(|e| e.into_inner());
        for slot in pool.values_mut() {
            let (fresh, stale) = std::mem::take(slot)
                .into_iter()
                .partition(|p| p.made.elapsed() <= POOL_MAX_AGE);
            *slot = fresh;
            stale.into_iter().for_each(|p| self.discard(p));
        }
        pool.retain(|_, slot| !slot.is_empty());
        pool.get_mut(key)?.pop()
    }

    fn discard(&self, p: Prepared) {
        let t = Teardown {
            _supervisor: Some(p.running),
            _cgroup: p.cgroup,
            _netns: p.netns,
        };
        match &self.reaper {
            Some(tx) => drop(tx.send(t)),
            None => drop(t),
        }
    }
}

/// Clones a supervisor for `key`, puts it in fresh cgroups and lets it build its root.
fn prepare(shared: &Arc<Shared>, key: &LayoutKey, stdin_pipe: bool) -> Result<Prepared, RunError> {
    let seq = RUN_SEQ.fetch_add(1, Ordering::Relaxed);
    let host_uid =
        HOST_UID_BASE + ((u64::from(std::process::id()) * 4099 + seq) % HOST_UID_SPAN) as u32;
    let limits = key.limits();
    let idmapped =
        if key.view == RepoView::Overlay && !shared.idmap_unavailable.load(Ordering::Relaxed) {
            match spawn::idmapped_mount(&key.repo, host_uid) {
                Ok(fd) => Some(fd),
                // The repository is gone (the preparer works ahead of runs that may never
                // come): that says nothing about idmapped mounts.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(SandboxError::io("opening the repository", &key.repo, e).into())
                }
                Err(_) => {
                    shared.idmap_unavailable.store(true, Ordering::Relaxed);
                    None
                }
            }
        } else {
            None
        };
    let netns = NetnsLease::take(shared);
    let RootOps {
        ops,
        repo_op,
        lower_op,
    } = sfs::root_ops(&Layout {
        mount_dir: &shared.mount_dir,
        repo: &key.repo,
        binds: &key.binds,
        view: key.view,
        limits: &limits,
        idmapped_lower: idmapped.as_ref().map(AsRawFd::as_raw_fd),
        own_netns: netns.is_none(),
    })?;
    let plan = ChildPlan {
        ops,
        keep_fd: idmapped.as_ref().map(AsRawFd::as_raw_fd),
    };
    let cgroup = shared
        .cgroups
        .create(seq, &limits)
        .map_err(|e| SandboxError::Sys {
            what: "creating the run's cgroups",
            source: e,
        })?;
    let netns_fd = netns.as_ref().and_then(NetnsLease::raw);
    let running = match spawn::start(&plan, host_uid, netns_fd, stdin_pipe, |pid| {
        cgroup.attach(pid)
    }) {
        Ok(r) => r,
        // The repository went away while the root was built (a preparer's root for a run
        // that does not come): not a verdict on the file system.
        Err(StartError::Op(i, e))
            if e.kind() == std::io::ErrorKind::NotFound
                && (i == repo_op || Some(i) == lower_op) =>
        {
            return Err(SandboxError::io("mounting the repository", &key.repo, e).into())
        }
        Err(StartError::Op(i, _))
            if idmapped.is_some() && (i == repo_op || Some(i) == lower_op) =>
        {
            // This file system takes no idmapped overlay layer: go on without.
            shared.idmap_unavailable.store(true, Ordering::Relaxed);
            drop(cgroup);
            return prepare(shared, key, stdin_pipe);
        }
        Err(StartError::Op(i, _)) if i == repo_op && key.view == RepoView::Overlay => {
            return Err(RunError::OverlayFailed)
        }
        Err(StartError::Op(i, source)) => {
            return Err(SandboxError::Setup {
                step: plan
                    .ops
                    .get(i)
                    .map_or_else(|| "fork the payload".into(), spawn::Op::describe),
                source,
            }
            .into())
        }
        Err(StartError::Other(e)) => return Err(e.into()),
    };
    Ok(Prepared {
        running,
        cgroup,
        netns,
        host_uid,
        made: Instant::now(),
    })
}

#[derive(Debug)]
enum RunError {
    OverlayFailed,
    Other(SandboxError),
}

impl From<SandboxError> for RunError {
    fn from(e: SandboxError) -> Self {
        RunError::Other(e)
    }
}

impl RunError {
    fn into_sandbox(self) -> SandboxError {
        match self {
            RunError::OverlayFailed => SandboxError::Setup {
                step: "mount the repository overlay".into(),
                source: std::io::Error::other("overlayfs is unavailable"),
            },
            RunError::Other(e) => e,
        }
    }
}

fn open_path(p: &Path) -> Result<OwnedFd, SandboxError> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
        .open(p)
        .map(OwnedFd::from)
        .map_err(|e| SandboxError::io("opening", p, e))
}

/// The environment: a fixed clean base, then the caller's additions.
pub(crate) fn environment(extra: &[(OsString, OsString)]) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = [
        ("PATH", DEFAULT_PATH),
        ("HOME", HOME),
        ("TMPDIR", "/tmp"),
        ("USER", "nobody"),
        ("LOGNAME", "nobody"),
        ("TZ", "UTC"),
        ("LC_ALL", "C.UTF-8"),
        ("PYTHONHASHSEED", "0"),
        ("PYTHONDONTWRITEBYTECODE", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.into(), v.into()))
    .collect();
    for (k, v) in extra {
        env.insert(k.clone(), v.clone());
    }
    env
}

fn exec_plan(spec: &RunSpec, repo: &Path, backend: LimitBackend) -> Result<ExecPlan, SandboxError> {
    let mut env = environment(&spec.env);
    if spec.report_channel {
        env.insert(
            REPORT_CHANNEL_ENV.into(),
            REPORT_CHANNEL_FD.to_string().into(),
        );
    }
    let argv0 = spec.argv[0].as_bytes();
    let exec_candidates = if argv0.contains(&b'/') {
        vec![cstring("command", argv0)?]
    } else {
        let path = env
            .get(OsStr::new("PATH"))
            .map_or(b"" as &[u8], |p| p.as_bytes());
        path.split(|b| *b == b':')
            .filter(|d| !d.is_empty())
            .map(|d| {
                let mut p = d.to_vec();
                p.push(b'/');
                p.extend_from_slice(argv0);
                cstring("command", p)
            })
            .collect::<Result<_, _>>()?
    };
    Ok(ExecPlan {
        workdir: cstring(
            "working directory",
            repo.join(&spec.workdir).as_os_str().as_bytes(),
        )?,
        exec_candidates,
        argv: spec
            .argv
            .iter()
            .map(|a| cstring("argument", a.as_bytes()))
            .collect::<Result<_, _>>()?,
        env: env
            .iter()
            .map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                cstring("environment variable", kv)
            })
            .collect::<Result<_, _>>()?,
        rlimits: rlimits(&spec.limits, backend),
        privileged: false,
        report_channel: spec.report_channel,
    })
}

/// The limit that ended a run, judged from how it ended and what the cgroups counted: the
/// sandbox's own rule, for a caller that runs requests in a worker to judge them alike.
pub fn decide_limit(
    timed_out: bool,
    exit: ExitStatus,
    stats: &CgroupStats,
    cpu_time: Duration,
    limits: &Limits,
    disk_full: bool,
) -> Option<LimitHit> {
    if timed_out {
        return Some(LimitHit::WallClock);
    }
    if stats.oom_kills > 0 {
        return Some(LimitHit::Memory);
    }
    match exit {
        ExitStatus::Signal(libc::SIGXCPU) => return Some(LimitHit::CpuTime),
        ExitStatus::Signal(libc::SIGKILL) if cpu_time.as_secs() >= limits.cpu_secs => {
            return Some(LimitHit::CpuTime)
        }
        ExitStatus::Signal(libc::SIGXFSZ) => return Some(LimitHit::FileSize),
        _ => {}
    }
    if exit.success() {
        return None;
    }
    if stats.pids_max_hits > 0 {
        return Some(LimitHit::Pids);
    }
    if disk_full {
        return Some(LimitHit::Disk);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_judged_in_order() {
        let l = Limits::default();
        let none = CgroupStats::default();
        let oom = CgroupStats {
            oom_kills: 1,
            ..CgroupStats::default()
        };
        let z = Duration::ZERO;
        let kill = ExitStatus::Signal(libc::SIGKILL);
        assert_eq!(
            decide_limit(true, kill, &oom, z, &l, false),
            Some(LimitHit::WallClock)
        );
        assert_eq!(
            decide_limit(false, kill, &oom, z, &l, false),
            Some(LimitHit::Memory)
        );
        assert_eq!(
            decide_limit(
                false,
                ExitStatus::Signal(libc::SIGXCPU),
                &none,
                z,
                &l,
                false
            ),
            Some(LimitHit::CpuTime)
        );
        assert_eq!(
            decide_limit(false, ExitStatus::Code(0), &none, z, &l, true),
            None
        );
        assert_eq!(
            decide_limit(false, ExitStatus::Code(1), &none, z, &l, true),
            Some(LimitHit::Disk)
        );
    }

    #[test]
    fn environment_is_clean_and_extendable() {
        let env = environment(&[("FOO".into(), "1".into()), ("TZ".into(), "X".into())]);
        assert_eq!(env.get(OsStr::new("TZ")).unwrap(), "X");
        assert_eq!(env.get(OsStr::new("FOO")).unwrap(), "1");
        assert_eq!(env.get(OsStr::new("PYTHONHASHSEED")).unwrap(), "0");
        assert!(!env.contains_key(OsStr::new("CARGO")));
    }
}
