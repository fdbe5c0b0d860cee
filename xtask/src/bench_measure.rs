//! What one stage of `cargo xtask bench --corpus` costs: wall time, CPU in user space and
//! in the kernel (with everything it starts, in a cgroup v1 `cpuacct` group of its own), and
//! peak resident memory two ways; and the JSON Lines helpers the measurement reads with.

use std::io::{BufRead, BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clover_protocol::{RecordReader, DEFAULT_MAX_LINE_BYTES};

/// What one stage process cost.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Measured {
    pub(crate) secs: f64,
    /// `ru_maxrss` of `wait4`: the largest process of the tree, in KiB.
    pub(crate) tree_kib: u64,
    /// The stage process alone: its `VmHWM`, sampled, in KiB.
    pub(crate) own_kib: u64,
    /// CPU of the stage and every process it started, sandboxed ones included (`None` where
    /// the machine has no cgroup v1 `cpuacct` hierarchy to count them in).
    pub(crate) cpu: Option<Cpu>,
}

/// CPU seconds, in user space and in the kernel.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cpu {
    pub(crate) user: f64,
    pub(crate) system: f64,
}

/// A cgroup v1 `cpuacct` group made for one measured process, below this process's own: the
/// process enters it before it execs, and whatever it starts stays counted there (the
/// sandbox's cgroups are of other hierarchies, or below this one). `wait4`'s resource usage
/// cannot say this: a sandboxed process is reaped by its own pid 1, not by the stage.
pub(crate) struct CpuGroup {
    pub(crate) dir: PathBuf,
}

impl CpuGroup {
    pub(crate) fn new() -> Option<CpuGroup> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = clover_sandbox::cgroup_v1(&mountinfo, &own, "cpuacct")?
            .own?
            .join(format!("clover-bench-{}-{seq}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        Some(CpuGroup { dir })
    }

    /// Makes `command` enter the group between its fork and its exec.
    pub(crate) fn enter(&self, command: &mut Command) -> Result<()> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;
        let procs = std::ffi::CString::new(self.dir.join("cgroup.procs").as_os_str().as_bytes())?;
        // SAFETY: between fork and exec the closure only makes system calls (open, write,
        // close) on memory allocated before the fork.
        unsafe {
            command.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // "0": the writing process itself.
                let r = libc::write(fd, b"0".as_ptr().cast(), 1);
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                if r == 1 {
                    Ok(())
                } else {
                    Err(e)
                }
            });
        }
        Ok(())
    }

    /// What the group's processes spent so far (nanoseconds in `cpuacct.usage_user` and
    /// `cpuacct.usage_sys`).
    pub(crate) fn read(&self) -> Option<Cpu> {
        let ns = |f: &str| -> Option<f64> {
            let text = std::fs::read_to_string(self.dir.join(f)).ok()?;
            Some(text.trim().parse::<u64>().ok()? as f64 / 1e9)
        };
        Some(Cpu {
            user: ns("cpuacct.usage_user")?,
            system: ns("cpuacct.usage_sys")?,
        })
    }
}

impl Drop for CpuGroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Runs `program args…` (stdout discarded, stderr passed through) and measures it. A stage
/// that reports bad records (exit 3) still counts; any other failure stops the benchmark.
pub(crate) fn measure(program: &Path, args: &[&str]) -> Result<Measured> {
    let group = CpuGroup::new();
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if let Some(g) = &group {
        g.enter(&mut command)?;
    }
    let started = Instant::now();
    let child = command
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let pid = child.id() as libc::pid_t;
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let status = format!("/proc/{pid}/status");
            let mut peak = 0;
            while !stop.load(Ordering::Relaxed) {
                if let Some(kib) = vm_hwm_kib(&status) {
                    peak = peak.max(kib);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        })
    };
    // Wait for the exit without reaping, so that the pid cannot be reused while the sampler
    // still reads it; then reap with the tree's resource usage.
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter; pid is our unreaped child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("waitid");
        }
    }
    let secs = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let own_kib = sampler.join().expect("the sampler does not panic");
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter; pid is our exited, unreaped child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("wait4");
        }
    }
    drop(child);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    if code != 0 && code != 3 {
        bail!("{} failed with exit code {code}", program.display());
    }
    Ok(Measured {
        secs,
        tree_kib: usage.ru_maxrss.max(0) as u64,
        own_kib,
        cpu: group.and_then(|g| g.read()),
    })
}

/// The `VmHWM` line of a `/proc/PID/status` file (absent once the process has exited).
pub(crate) fn vm_hwm_kib(status: &str) -> Option<u64> {
    let text = std::fs::read_to_string(status).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub(crate) fn count_lines(path: &Path) -> Result<usize> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Ok(BufReader::new(f).split(b'\n').count())
}

pub(crate) fn concat(parts: &[String], to: &Path) -> Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(to)?);
    for p in parts {
        std::io::copy(&mut std::fs::File::open(p)?, &mut out)?;
    }
    out.flush()?;
    Ok(())
}

/// Every record of a JSON Lines file, in its order.
pub(crate) fn read_records<T: clover_protocol::Record>(path: &Path) -> Result<Vec<T>> {
    let mut reader = RecordReader::open(Some(path), DEFAULT_MAX_LINE_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = Vec::new();
    while let Some(r) = reader.next_record::<T>() {
        out.push(r?.1);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_stage_counts_the_cpu_of_the_processes_it_starts() {
        let Some(probe) = CpuGroup::new() else {
            eprintln!("no cgroup v1 cpuacct hierarchy here: nothing to count in");
            return;
        };
        drop(probe);
        // The shell leaves a process that spins and that it never reaps (an orphan): `wait4`
        // of the shell does not count it, the group does.
        let m = measure(
            Path::new("/bin/sh"),
            &[
                "-c",
                "(timeout 0.5 sh -c 'while :; do :; done' &); sleep 0.7",
            ],
        )
        .unwrap();
        let cpu = m.cpu.expect("counted in the group");
        assert!(cpu.user + cpu.system > 0.1, "{cpu:?}");
    }
}
