//! Runs untrusted test code — tests that a model wrote — and reports exactly what happened.
//!
//! This is the runner behind `clover sandbox-run`, and the library other stages (calibrate)
//! call to run ground truths. One [`Sandbox`] per process runs [`RunSpec`]s, concurrently if
//! the caller likes, and returns a [`RunOutput`] for each.
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
//! process of the run is gone, without following any symlink, up to a size cap. [`report`]
//! parses them: JUnit XML as pytest (xunit1 and xunit2), GoogleTest and ctest write it, and
//! Cobertura XML as coverage.py and gcovr write it. [`pytest`] and [`gtest`] put it together
//! for the two kinds of repository clover knows, including the cross-check of exit code and
//! report (a crash writes no XML and is a crash, not "0 tests, passed"). [`gtest`] also
//! compiles: the library under test once per repository (cached by a hash of its sources and
//! flags), each candidate against it, all inside the sandbox.
//!
//! A report file is a file of the run's view, which the payload can write like any other. So
//! what vouches for a report travels otherwise: a run with [`RunSpec::report_channel`] gets
//! the write end of a pipe only the host reads ([`RunOutput::channel`]), and a pytest run's
//! trusted plugin sends pytest's own record of its session there (exit status, tests by
//! outcome, a hash of each report); a run is believed only when the channel holds exactly that
//! one record and it agrees with the reports and the exit code ([`pytest::check_session`]).
//!
//! # Embedding it
//!
//! The runner is a library of its own: it depends on the wire types and the manifest, on no
//! stage. One pytest file, with limits, and its verdict:
//!
//! ```no_run
//! use std::time::Duration;
//! use clover_sandbox::{pytest::PytestRun, Limits, Sandbox, WriteFile};
//!
//! let test = "from pkg import add\n\ndef test_add():\n    assert add(2, 2) == 4\n";
//! let run = PytestRun {
//!     repo: "/srv/pkg".into(),
//!     python: "/srv/pkg/.venv/bin/python".into(),
//!     targets: vec!["tests/test_candidate.py".into()],
//!     files: vec![WriteFile { path: "tests/test_candidate.py".into(), contents: test.into() }],
//!     cov_sources: vec!["src/pkg".into()],
//!     cov_only: None,
//!     cov_contexts: false,
//!     env: Vec::new(),
//!     limits: Limits { wall: Duration::from_secs(30), memory_bytes: 512 << 20, ..Limits::default() },
//! };
//! let verdict = run.run(&Sandbox::new()?)?;
//! println!("{:?}: {} test(s), {} file(s) covered", verdict.outcome, verdict.tests.len(), verdict.coverage.len());
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
//! - It does not decide what to run: building the candidate from a model's answer, choosing
//!   node ids and scoring belong to the callers (the `clover-sandbox-run` stage crate,
//!   calibrate). It reads and writes no records and depends on no stage crate.
//! - It does not scrape logs for results: outcomes come from reports and exit statuses only.
//! - It does not defend against kernel bugs; it is a namespace sandbox, not a VM.

mod capture;
mod error;
mod fs;
pub mod gtest;
mod interpreter;
mod limits;
mod once;
pub mod pytest;
pub mod report;
mod sandbox;
mod spawn;
mod spec;
mod worker;

pub use capture::Captured;
pub use error::SandboxError;
pub use fs::check_relative;
pub use interpreter::{check_python, CheckedInterpreters, InterpreterError, PythonTools};
pub use limits::{cgroup_v1, V1Hierarchy};
pub use once::OnceMap;
pub use sandbox::Sandbox;
pub use spec::{
    ChannelBytes, Collected, CollectedFile, ExitStatus, LimitBackend, Limits, RepoView, RunOutput,
    RunSpec, WriteFile, REPORT_CHANNEL_ENV, REPORT_CHANNEL_FD, REPORT_CHANNEL_MAX_BYTES,
};
pub use worker::{BatchVerdict, BatchVerdicts, ColdReason, WarmPool, WarmRun};
