//! Memory, process and CPU limits through cgroups (v2, else v1), rlimits for the rest, and
//! the clean-up of cgroups left by crashed runs.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::spec::{LimitBackend, Limits};

/// Every cgroup this crate creates is named `<PREFIX><pid>-<seq>`, so one left behind by a
/// crashed process can be recognized and removed.
const PREFIX: &str = "clover-sbx-";

/// Where per-run cgroups are created, found once per [`crate::Sandbox`].
#[derive(Debug, Clone)]
pub(crate) enum Cgroups {
    V2 {
        base: PathBuf,
    },
    /// `cpu` is absent where the host mounts no v1 `cpu` controller: runs then have no CPU cap.
    V1 {
        memory: PathBuf,
        pids: PathBuf,
        cpu: Option<PathBuf>,
    },
    None,
}

impl Cgroups {
    pub(crate) fn backend(&self) -> LimitBackend {
        match self {
            Cgroups::V2 { .. } => LimitBackend::CgroupV2,
            Cgroups::V1 { .. } => LimitBackend::CgroupV1,
            Cgroups::None => LimitBackend::Rlimits,
        }
    }

    /// Finds a writable place for per-run cgroups: below our own cgroup when we may create
    /// children there, else below the hierarchy's root.
    pub(crate) fn detect() -> Cgroups {
        let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        if let Some(base) = detect_v2(&mounts, &own) {
            return Cgroups::V2 { base };
        }
        let memory = v1_base(&mounts, &own, "memory");
        let pids = v1_base(&mounts, &own, "pids");
        match (memory, pids) {
            (Some(memory), Some(pids)) => Cgroups::V1 {
                memory,
                pids,
                cpu: v1_base(&mounts, &own, "cpu"),
            },
            _ => Cgroups::None,
        }
    }

    /// The directories per-run cgroups are created in.
    fn bases(&self) -> Vec<&Path> {
        match self {
            Cgroups::V2 { base } => vec![base],
            Cgroups::V1 { memory, pids, cpu } => {
                let mut v = vec![memory.as_path(), pids.as_path()];
                v.extend(cpu.as_deref());
                v
            }
            Cgroups::None => vec![],
        }
    }

    /// Removes cgroups whose creating process is gone (killing what is still in them).
    pub(crate) fn remove_stale(&self) {
        for base in self.bases() {
            let Ok(entries) = fs::read_dir(base) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
                    continue;
                };
                let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
                    continue;
                };
                if Path::new(&format!("/proc/{pid}")).exists() {
                    continue;
                }
                let dir = entry.path();
                kill_all(&dir);
                let _ = remove_dir_retrying(&dir);
            }
        }
    }

    /// Creates the cgroups of one run and writes its limits into them.
    pub(crate) fn create(&self, seq: u64, limits: &Limits) -> io::Result<RunCgroup> {
        let name = format!("{PREFIX}{}-{seq}", std::process::id());
        let mut run = RunCgroup {
            kind: self.clone(),
            dirs: Vec::new(),
        };
        for base in self.bases() {
            let dir = base.join(&name);
            fs::create_dir(&dir)?;
            run.dirs.push(dir);
        }
        let mem = limits.memory_bytes.to_string();
        let pids = limits.pids.to_string();
        let quota = cpu_quota_us(limits.cpus);
        match self {
            Cgroups::V2 { .. } => {
                let d = &run.dirs[0];
                fs::write(d.join("memory.max"), &mem)?;
                // Swap would let a run exceed its memory limit unseen.
                let _ = fs::write(d.join("memory.swap.max"), "0");
                fs::write(d.join("pids.max"), &pids)?;
                // Present when our cgroup delegates the `cpu` controller.
                let max = d.join("cpu.max");
                if max.exists() {
                    let quota = quota.map_or("max".into(), |q| q.to_string());
                    fs::write(max, format!("{quota} {CPU_PERIOD_US}"))?;
                }
            }
            Cgroups::V1 { .. } => {
                let m = &run.dirs[0];
                fs::write(m.join("memory.limit_in_bytes"), &mem)?;
                let memsw = m.join("memory.memsw.limit_in_bytes");
                if memsw.exists() {
                    fs::write(memsw, &mem)?;
                }
                // v1 charges socket buffers to a counter of their own, and only once it has a
                // limit: without one a run pins loopback TCP buffers past its memory limit
                // (v2 charges them to `memory.current`, so `memory.max` holds them already).
                let tcp = m.join("memory.kmem.tcp.limit_in_bytes");
                if tcp.exists() {
                    fs::write(tcp, &mem)?;
                }
                fs::write(run.dirs[1].join("pids.max"), &pids)?;
                if let (Some(c), Some(quota)) = (run.dirs.get(2), quota) {
                    fs::write(c.join("cpu.cfs_period_us"), CPU_PERIOD_US.to_string())?;
                    fs::write(c.join("cpu.cfs_quota_us"), quota.to_string())?;
                }
            }
            Cgroups::None => {}
        }
        Ok(run)
    }
}

/// The CFS period of the CPU cap: a run over its quota waits for the next period, so a short
/// one keeps a throttled run's latency low.
const CPU_PERIOD_US: u64 = 100_000;

/// The CPU time per period of a run that may keep `cpus` cores busy; `None` for no cap.
fn cpu_quota_us(cpus: f64) -> Option<u64> {
    // The kernel takes no quota under 1 ms; a cap above any machine's cores is none.
    (cpus > 0.0 && cpus <= 4096.0).then(|| ((cpus * CPU_PERIOD_US as f64) as u64).max(1000))
}

fn detect_v2(mounts: &str, own: &str) -> Option<PathBuf> {
    let mount = mounts.lines().find_map(|l| {
        let (_, post) = l.split_once(" - ")?;
        let fstype = post.split_whitespace().next()?;
        (fstype == "cgroup2").then(|| l.split_whitespace().nth(4).map(PathBuf::from))?
    })?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let base = mount.join(path.trim_start_matches('/'));
    let controllers = fs::read_to_string(base.join("cgroup.subtree_control")).ok()?;
    let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
    (has("memory") && has("pids")).then_some(base)
}

fn v1_base(mounts: &str, own: &str, controller: &str) -> Option<PathBuf> {
    let h = cgroup_v1(mounts, own, controller)?;
    // Prefer a child of our own cgroup (it counts against our own limits and is cleaned up
    // with it); fall back to the hierarchy's root.
    h.own
        .into_iter()
        .chain([h.mount])
        .find(|d| probe_writable(d))
}

/// A cgroup v1 hierarchy that holds one controller: where it is mounted, and this process's
/// cgroup in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V1Hierarchy {
    pub mount: PathBuf,
    /// `None` when the mount shows a folder of the hierarchy that does not hold it.
    pub own: Option<PathBuf>,
}

/// The cgroup v1 hierarchy of `controller`, from `/proc/self/mountinfo` (`mounts`) and
/// `/proc/self/cgroup` (`own`); `None` when no such hierarchy is mounted or this process is
/// in none of its cgroups.
pub fn cgroup_v1(mounts: &str, own: &str, controller: &str) -> Option<V1Hierarchy> {
    let (root, mount) = mounts.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        let mut it = post.split_whitespace();
        if it.next()? != "cgroup" {
            return None;
        }
        let super_opts = it.nth(1)?;
        if !super_opts.split(',').any(|o| o == controller) {
            return None;
        }
        let mut fields = pre.split_whitespace().skip(3);
        Some((fields.next()?, PathBuf::from(fields.next()?)))
    })?;
    let path = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let _id = parts.next()?;
        let ctrls = parts.next()?;
        let path = parts.next()?;
        ctrls.split(',').any(|c| c == controller).then_some(path)
    })?;
    // The path is from the hierarchy's root; the mount may show a folder of it (a cgroup
    // namespace's view).
    let below = if root == "/" {
        Some(path)
    } else {
        path.strip_prefix(root)
    };
    let own = below.map(|b| mount.join(b.trim_start_matches('/')));
    Some(V1Hierarchy { mount, own })
}

fn probe_writable(dir: &Path) -> bool {
    let probe = dir.join(format!("{PREFIX}{}-probe", std::process::id()));
    match fs::create_dir(&probe) {
        Ok(()) => fs::remove_dir(&probe).is_ok(),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => true,
        Err(_) => false,
    }
}

fn kill_all(dir: &Path) {
    if let Ok(procs) = fs::read_to_string(dir.join("cgroup.procs")) {
        for pid in procs.lines().filter_map(|p| p.trim().parse::<i32>().ok()) {
            // SAFETY: kill has no memory effects.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

fn remove_dir_retrying(dir: &Path) -> io::Result<()> {
    // A cgroup is busy until the kernel has released its last exited task, which lags the
    // reaping of the process by a little.
    let mut last = Ok(());
    for i in 0..200 {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => last = Err(e),
        }
        std::thread::sleep(Duration::from_micros(200 * (i + 1).min(10)));
    }
    last
}

/// The cgroups of one run; removed on drop.
#[derive(Debug)]
pub(crate) struct RunCgroup {
    kind: Cgroups,
    dirs: Vec<PathBuf>,
}

/// What the cgroups counted during a run.
#[derive(Debug, Default, Clone, Copy)]
pub struct CgroupStats {
    /// Processes the memory limit killed.
    pub oom_kills: u64,
    /// Forks the process limit refused.
    pub pids_max_hits: u64,
    /// The most memory the run's cgroup held, where the kernel reports it.
    pub peak_memory: Option<u64>,
}

impl RunCgroup {
    /// Moves `pid` (and so everything it starts) into the run's cgroups.
    pub(crate) fn attach(&self, pid: i32) -> io::Result<()> {
        for d in &self.dirs {
            fs::write(d.join("cgroup.procs"), pid.to_string())?;
        }
        Ok(())
    }

    pub(crate) fn stats(&self) -> CgroupStats {
        let read = |p: PathBuf| fs::read_to_string(p).unwrap_or_default();
        let field = |text: &str, key: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or(0)
        };
        match &self.kind {
            Cgroups::V2 { .. } => {
                let d = &self.dirs[0];
                CgroupStats {
                    oom_kills: field(&read(d.join("memory.events")), "oom_kill "),
                    pids_max_hits: field(&read(d.join("pids.events")), "max "),
                    peak_memory: read(d.join("memory.peak")).trim().parse().ok(),
                }
            }
            Cgroups::V1 { .. } => {
                let m = &self.dirs[0];
                let oom = read(m.join("memory.oom_control"));
                CgroupStats {
                    oom_kills: field(&oom, "oom_kill "),
                    pids_max_hits: field(&read(self.dirs[1].join("pids.events")), "max "),
                    peak_memory: read(m.join("memory.max_usage_in_bytes"))
                        .trim()
                        .parse()
                        .ok(),
                }
            }
            Cgroups::None => CgroupStats::default(),
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        for d in &self.dirs {
            kill_all(d);
            let _ = remove_dir_retrying(d);
        }
    }
}

/// The rlimits of the payload: the per-process limits always, plus memory and process count
/// when no cgroup enforces them.
pub(crate) fn rlimits(
    limits: &Limits,
    backend: LimitBackend,
) -> Vec<(libc::__rlimit_resource_t, u64, u64)> {
    let mut v = vec![
        (libc::RLIMIT_CPU, limits.cpu_secs, limits.cpu_secs + 1),
        (
            libc::RLIMIT_FSIZE,
            limits.file_size_bytes,
            limits.file_size_bytes,
        ),
        (libc::RLIMIT_NOFILE, limits.open_files, limits.open_files),
        (libc::RLIMIT_CORE, 0, 0),
        // Each run has its own host uid, so this counts the run's processes only.
        (libc::RLIMIT_NPROC, limits.pids, limits.pids),
    ];
    if backend == LimitBackend::Rlimits {
        v.push((libc::RLIMIT_AS, limits.memory_bytes, limits.memory_bytes));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/pids rw,relatime shared:10 - cgroup cgroup rw,pids
32 25 0:28 / /sys/fs/cgroup/unified rw,relatime shared:11 - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_mount_and_own_path_are_found() {
        let own = "8:pids:/\n4:memory:/process_api/abc\n0::/\n";
        // The probe fails outside a real hierarchy, so only the parsing is checked here.
        let m = MOUNTS.lines().find(|l| l.contains("memory")).unwrap();
        assert!(m.split_once(" - ").unwrap().1.contains("memory"));
        assert_eq!(
            own.lines().find_map(|l| l.strip_prefix("4:memory:")),
            Some("/process_api/abc")
        );
        assert!(v1_base("", own, "memory").is_none());
    }

    #[test]
    fn a_v1_hierarchy_is_found_with_this_process_s_cgroup_below_its_mount() {
        let mountinfo = "\
25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
33 25 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:12 - cgroup cgroup rw,cpu,cpuacct
34 25 0:30 / /sys/fs/cgroup/unified rw,relatime shared:13 - cgroup2 cgroup2 rw
";
        let own = "4:memory:/x\n3:cpu,cpuacct:/user.slice/s\n0::/user.slice/s\n";
        let own_dir = |m: &str| cgroup_v1(m, own, "cpuacct").and_then(|h| h.own);
        assert_eq!(
            cgroup_v1(mountinfo, own, "cpuacct"),
            Some(V1Hierarchy {
                mount: PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"),
                own: Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/user.slice/s")),
            })
        );
        // A mount that shows a folder of the hierarchy (a cgroup namespace's view).
        let shown = mountinfo.replace("0:29 / /sys", "0:29 /user.slice /sys");
        assert_eq!(
            own_dir(&shown),
            Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/s"))
        );
        // cgroup v2 alone, or `cpu` without `cpuacct`: no such hierarchy.
        let v2 = "34 25 0:30 / /sys/fs/cgroup rw,relatime shared:13 - cgroup2 cgroup2 rw\n";
        assert_eq!(cgroup_v1(v2, "0::/user.slice\n", "cpuacct"), None);
        let cpu_only = mountinfo.replace("rw,cpu,cpuacct", "rw,cpu");
        assert_eq!(own_dir(&cpu_only), None);
    }

    #[test]
    fn cpu_quota_is_cores_times_the_period() {
        assert_eq!(cpu_quota_us(1.0), Some(100_000));
        assert_eq!(cpu_quota_us(2.5), Some(250_000));
        assert_eq!(cpu_quota_us(0.001), Some(1000));
        assert_eq!(cpu_quota_us(0.0), None);
        assert_eq!(cpu_quota_us(f64::NAN), None);
        assert_eq!(cpu_quota_us(f64::INFINITY), None);
    }
}
