//! Runs untrusted code — tests that a model wrote, and whatever they start — in Linux
//! namespaces with limits, and says exactly how each run ended.
//!
//! It guarantees that nothing a run does reaches the host (files, processes, network) and that
//! every run ends within its limits; it is the floor under clover's test runners (one crate
//! per language) and knows nothing of any test framework. One [`Sandbox`]
//! per process runs [`RunSpec`]s, concurrently if the caller likes, and returns a
//! [`RunOutput`] for each.
//!
//! # Isolation
//!
//! Each run gets new user, mount, pid, network, IPC, UTS and cgroup namespaces and its own
//! root: a tmpfs with read-only binds of `/usr`, `/lib*`, `/bin`, `/sbin`, a handful of
//! `/etc` files, and whatever the caller binds (a virtual environment, the interpreter prefix
//! it points to, a compiler tree), all at their host paths; a fresh `/proc` that shows only the
//! run's own processes (`hidepid=2`: the supervisor is a clone of the caller), a minimal `/dev`,
//! a sized tmpfs on `/tmp` (which holds `HOME`). The repository appears at its host path as
//! an overlay whose lower layer is the repository itself and whose upper layer is a sized
//! tmpfs thrown away with the run (a copy into a tmpfs where overlayfs is unavailable): the
//! repository is never written. The payload runs as uid/gid 65534 mapped to a private
//! non-zero host uid, with no capabilities, `no_new_privs`, a parent-death signal, no
//! inherited descriptors, its own session, a clean environment (`PATH`, `HOME`, `TZ=UTC`,
//! `LC_ALL=C.UTF-8`, `PYTHONHASHSEED=0`, `PYTHONDONTWRITEBYTECODE=1`, plus the caller's), no
//! network but its own loopback (a namespace lent again only once no socket of the last run is
//! left in it), no way to create further user namespaces, a session keyring of its own, and a
//! seccomp filter that refuses the kernel's key calls.
//!
//! # Limits
//!
//! Wall clock (the whole pid namespace is killed), memory (socket buffers included), process
//! count and CPU share (cgroup v2, v1 where that is what the host has, rlimits otherwise; no
//! CPU share then), CPU time, file size and open files (rlimits), tmpfs and overlay sizes, and
//! output: stdout and stderr are read while the run goes and only their head and tail are
//! kept ([`Captured`]), as are the texts of a report. [`RunOutput::limit_hit`] says
//! which limit ended a run. When the payload exits, whatever it left running is killed.
//!
//! # Reports
//!
//! Files named in [`RunSpec::collect`] are read back from the run's view after every
//! process of the run is gone, without following any symlink, up to a size cap: a test
//! runner's report, a measurement it wrote, a built binary. What they mean is the caller's business;
//! the sandbox neither parses nor trusts them.
//!
//! A collected file is a file of the run's view, which the payload can write like any other.
//! So what vouches for a report travels otherwise: a run with [`RunSpec::report_channel`]
//! gets the write end of a pipe only the host reads ([`RunOutput::channel`]), for a trusted
//! part of the payload (a runner's own plugin) to say what happened where the rest of the
//! payload cannot write it by path.
//!
//! # Long-lived payloads
//!
//! [`Sandbox::start_worker`] starts a payload that is not waited for: it keeps the
//! capabilities of its own user namespace (never the host's), talks to the caller over a
//! request pipe and an answer pipe ([`WorkerProcess`]), and serves many requests, each in a
//! child it isolates further itself. The caller reads the worker's cgroup counters around
//! each request and judges the limit that ended it with [`decide_limit`], as the sandbox
//! judges its own runs.
//!
//! # Embedding it
//!
//! The sandbox is a library of its own: it depends on the wire types alone, and knows no test
//! framework. One command, with limits, and what happened (`examples/run_command.rs` is the
//! same as a program):
//!
//! ```no_run
//! use std::time::Duration;
//! use clover_sandbox::{Limits, RunSpec, Sandbox, WriteFile};
//!
//! let mut spec = RunSpec::new("/srv/project", ["/bin/sh", "-c", "sh ./check.sh > out.txt"]);
//! spec.files.push(WriteFile { path: "check.sh".into(), contents: b"echo hello\n".to_vec() });
//! spec.collect.push("out.txt".into());
//! spec.limits = Limits { wall: Duration::from_secs(10), memory_bytes: 256 << 20, ..Limits::default() };
//! let out = Sandbox::new()?.run(&spec)?;
//! println!("{:?} (limit hit: {:?}), out.txt: {:?}", out.exit, out.limit_hit, out.file("out.txt"));
//! # Ok::<(), clover_sandbox::SandboxError>(())
//! ```
//!
//! # Speed
//!
//! A run's supervisor can build its root before the command is known (the command goes to
//! it through shared memory at the start). So after a layout (repository, binds, sizes) has
//! run twice, a preparer thread keeps up to two supervisors ready for it, and a reaper thread
//! reaps finished supervisors and removes their cgroups: a run's latency is little more than
//! its payload's. Each supervisor still serves exactly one run.
//!
//! # What it deliberately does not do
//!
//! - It needs root on the host (to map host uid 0 for building the root); it never falls back
//!   to running anything unsandboxed.
//! - It does not decide what to run or what a run means: the test runners above it build the
//!   command and read the reports, the stages (`clover-sandbox-run`, calibrate) build the
//!   candidate and score it. It reads and writes no records, and depends
//!   on no runner and no stage.
//! - It does not defend against kernel bugs; it is a namespace sandbox, not a VM.

mod capture;
mod error;
mod fs;
mod limits;
mod once;
mod sandbox;
mod spawn;
mod spec;

pub use capture::{cap_text, Captured, HeadTail};
pub use error::SandboxError;
pub use fs::check_relative;
pub use limits::{cgroup_v1, CgroupStats, V1Hierarchy};
pub use once::OnceMap;
pub use sandbox::{decide_limit, Sandbox, WorkerProcess};
pub use spec::{
    ChannelBytes, Collected, CollectedFile, ExitStatus, LimitBackend, Limits, RepoView, RunOutput,
    RunSpec, WriteFile, REPORT_CHANNEL_ENV, REPORT_CHANNEL_FD, REPORT_CHANNEL_MAX_BYTES,
};
