//! Runs pytest files in clover's sandbox and says what they did: a verdict, each test's
//! outcome, and the lines of the code under test they ran.
//!
//! This is clover's Python runner. It builds the command (pytest with pytest-cov or, warm, with
//! coverage.py started by the worker), binds the interpreter the run needs ([`python_binds`]),
//! asks once whether that interpreter can run anything at all ([`check_python`]), and reads
//! the reports back through `clover-report`. The sandbox below it isolates and limits; the
//! stages above it (calibrate, sandbox-run) decide what to run and score it.
//!
//! # What it guarantees
//!
//! - A verdict is made from the JUnit report, cross-checked with the exit status and with
//!   pytest's own record of its session, which a trusted plugin (`_clover_report.py`) sends
//!   through the run's report channel, a pipe no file of the run is ([`check_session`]): a
//!   crash writes no report and is a crash; a report written by the test is not believed.
//! - A warm run ([`WarmPool`]: pytest, its plugins, coverage.py and the conftests imported
//!   once per repository, one forked child per candidate) gives the verdict, tests and
//!   coverage a cold run gives, or runs cold and says why ([`ColdReason`]).
//! - A mutant batch ([`PytestRun::run_mutants_warm`]) judges each mutant as its own run would.
//!
//! # Example
//!
//! One pytest file, with limits, and its verdict:
//!
//! ```no_run
//! use std::time::Duration;
//! use clover_pytest::PytestRun;
//! use clover_sandbox::{Limits, Sandbox, WriteFile};
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
//!     witness: Vec::new(),
//!     env: Vec::new(),
//!     limits: Limits { wall: Duration::from_secs(30), memory_bytes: 512 << 20, ..Limits::default() },
//! };
//! let verdict = run.run(&Sandbox::new()?)?;
//! println!("{:?}: {} test(s), {} file(s) covered", verdict.outcome, verdict.tests.len(), verdict.coverage.len());
//! # Ok::<(), clover_sandbox::SandboxError>(())
//! ```
//!
//! # What it deliberately does not do
//!
//! It builds no candidate from a model's answer, reads and writes no records, and never runs
//! anything outside the sandbox.

mod interpreter;
mod run;
mod worker;

pub use interpreter::{
    check_python, python_binds, CheckedInterpreters, InterpreterError, PythonTools,
};
pub use run::{check_session, coverage_rc, judge, mutant_limits, PytestResult, PytestRun, OUT_DIR};
pub use worker::{BatchVerdict, BatchVerdicts, ColdReason, WarmPool, WarmRun};
