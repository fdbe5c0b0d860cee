//! GoogleTest runs: the library under test built once per repository (with `--coverage`,
//! cached), a candidate test compiled and linked against it and run with
//! `--gtest_output=xml:`, coverage read from gcov's output (or gcovr's Cobertura report),
//! and the verdict cross-checked between exit status and report.
//!
//! Every compiler run happens inside the sandbox — the library's own sources too, though
//! they are not model-written — and so does gcov, which parses counters a candidate wrote.
//! One candidate takes three runs, each in its own throwaway view of the repository:
//!
//! 1. (once per repository and cache key) compile every library source, several at once,
//!    into `.clover-build/lib/<stem>.o` + `.gcno`; both are read back and kept on the host in
//!    a folder keyed by what went into the build: compiler, command lines, and the contents
//!    of the files the compiler read ([`LibraryCache`]).
//! 2. write the cached objects and the candidate into a fresh view, compile it (instrumented
//!    too: a header-only class is compiled only there) and link it, with `gtest_main` when it
//!    has no `main` of its own (diagnostics to `.clover-out/compile.txt`), then `exec` the
//!    test binary, so the run's exit status is the binary's own; read back the report and the
//!    `.gcda` files.
//! 3. write `.gcno` + `.gcda` into another fresh view and run gcov there, once per object
//!    (`gcov`: read by gcovr's rules), or `gcovr --cobertura`; either gives the covered lines
//!    and the executable (instrumented) ones of the library's files, wherever they were
//!    compiled.
//!
//! A test file that runs many times (calibration: the ground truth as a whole, then each
//! `TEST` alone) is built once instead: [`GtestRun::build`] compiles and links it in step 2's
//! view and reads the binary back, and every [`TestBinary::run`] writes it into a fresh view
//! and `exec`s it there.
//!
//! For the mutation score, [`GtestRun::mutant_harness`] compiles a test file once into an
//! object, and every [`MutantHarness::run`] compiles only the mutated translation unit of the
//! library (with the library's own command line), links it in place of its cached object, and
//! runs the binary with `--gtest_fail_fast`, in a fresh view, without coverage; a mutant that
//! does not compile is `compile_error`. A mutated header is compiled into the test object
//! again and into each library object whose compile read it (the build's dependency files,
//! kept per object in the cache). [`GtestRun::run_keeping_object`] is a candidate's run that
//! keeps its test object for such a harness, so a passing candidate is compiled once.
//!
//! `.gcda` counters exist only in the view of the run that wrote them and in the one that
//! reads them, so no run ever counts into another's coverage.
//!
//! Step 2 is most of a candidate's time, and most of that is the compiler reading
//! GoogleTest's headers again. [`FastBuild`] (all on by default, off for comparison) makes it
//! cheaper without changing what is compiled: the candidate's leading `#include` lines are
//! precompiled once per repository, compiler, flags and include list (`pch`), the candidate
//! is instrumented only where coverage is read (the repository's files, not the test file
//! itself), it is linked with `mold` when that is installed, and step 3 reads gcov's output
//! here rather than start gcovr.
//!
//! # What it guarantees
//!
//! A verdict comes from the test binary's exit status and GoogleTest's XML report together,
//! never from its output: a binary that exits 0 without a report, or whose report disagrees
//! with its status, is not `passed`. Covered lines are the library's own files' lines only,
//! read from the counters of this run.
//!
//! # Example
//!
//! ```no_run
//! use std::path::Path;
//! use clover_gtest::{CppProject, GtestRun, LibraryCache};
//! use clover_sandbox::{Limits, Sandbox, WriteFile};
//!
//! let cfg = clover_manifest::RepoConfig::resolve(None, None, Some(Path::new("repo")))
//!     .unwrap()
//!     .remove(0);
//! let project = CppProject::from_config(&cfg);
//! let cache = LibraryCache::new(Path::new("target/gtest-cache")).unwrap();
//! let run = GtestRun {
//!     project: &project,
//!     test_file: WriteFile {
//!         path: "tests/calc_test.cc".into(),
//!         contents: std::fs::read("calc_test.cc").unwrap(),
//!     },
//!     filter: vec![],
//!     limits: Limits::default(),
//! };
//! let result = run.run(&Sandbox::new().unwrap(), &cache).unwrap();
//! println!("{:?}: {} covered files", result.outcome, result.coverage.len());
//! ```

mod compile;
mod gcov;
mod mutant;
mod pch;
mod record;
mod run;

pub use compile::first_errors;
pub use mutant::{mutant_cpu_secs, mutant_limits, MutantHarness, Replacement};
pub use run::{
    is_translation_unit, judge, CppProject, FastBuild, GtestResult, GtestRun, LibraryBuild,
    LibraryCache, LibraryError, TestBinary,
};
