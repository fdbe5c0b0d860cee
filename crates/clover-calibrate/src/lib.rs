//! Runs each problem's ground truth in the sandbox and annotates it with what the task
//! builders need: consistency and flakiness verdicts, per-test coverage (`base`) and the
//! coverage of an empty test at the same place (`empty`), context tiers, unique blocks and
//! targets.
//!
//! # How per-test coverage is had cheaply
//!
//! Problems are calibrated a test file at a time, since a test's peers are the other tests of
//! its file. The fast path writes every problem file of the group, and beside them the
//! *empty variants* (the same setup, with `def test_clover_empty(): assert True` in place of
//! the test; problems with the same setup share one), then runs them all in **one** pytest
//! process. A small plugin of ours, loaded into that process ([`coverage_json::PLUGIN`]),
//! switches coverage.py's dynamic context once per test and writes every test's lines, and
//! those run before the first test, at session end ([`coverage_json`]). The group
//! runs `runs` times (default 3); a problem is flaky when its outcome, or what the benchmark
//! takes from it (its tiers, unique blocks and targets), changes between runs; lines that vary
//! elsewhere (a background thread reaching an unrelated file) are noted, not fatal. The
//! empty test takes `**parameters`, so that it collects under a class-level `parametrize`.
//! Coverage is configured by one settings file shared with sandbox-run
//! ([`clover_pytest::coverage_rc`]) that names files from the repository root, so
//! two modules of one name in two source folders never mix. The slow path (`--per-test`) runs each problem with its empty variant in a process
//! of its own; it exists to cross-check the fast one, and the fast path falls back to it for
//! a group whose shared run timed out or crashed. A problem file that does not collect
//! excludes its own problems (`collection_error`), as does a class in it that does not
//! collect; the rest of its group runs without it. A test whose every case was skipped is
//! `no_tests`. Exclusion details are steadied ([`steady_text`]: addresses, temporary paths,
//! dates with times, durations; before a long one is cut), so that two calibrations write the same bytes.
//!
//! Lines run at import or collection time are attributed to no test (they belong to
//! coverage.py's empty context) in both paths alike; `base` and `empty` are the lines run
//! while the test's setup, call and teardown ran. Since any process that imports the same
//! modules runs them (sandbox-run's run of an `assert True` candidate does), they are no
//! unique block's and no target's body, whether the source text shows them (module level,
//! class bodies, decorators) or only the run does (a function called while importing).
//!
//! Unique blocks count executable lines only: coverage.py's statements for Python, gcovr's
//! instrumented lines for C++. A C++ ground truth is compiled once and its binary run as a
//! whole and then `TEST` by `TEST`, each run in a fresh view with fresh counters.
//!
//! # Mutants (`--mutants K`)
//!
//! For the mutation score, [`mutation`] runs each kept Python problem's ground truth, alone, in
//! a pytest run (warm unless `--cold`) against each of at most K seeded mutants of its focal
//! code (every target's body and the unique blocks, on the lines the ground truth reached),
//! each within `mutant_limits` of a control run on the original made first; the mutants it
//! kills go to the sidecar `OUTPUT.mutants.jsonl`.
//! A C++ problem's ground truth (its test file, whole) runs against mutants of its focal
//! source, on the lines it covered: compiled once per problem, then per mutant only the focal
//! source is compiled again and linked (a header: the test file too, and every library source
//! that includes it), and the binary stops at its first failing test; a mutant that does not
//! compile is `invalid`.
//!
//! # What it deliberately does not do
//!
//! It does not parse tests (extract did) and does not build prompts (pack-context does). It
//! never runs code outside the sandbox.

pub mod analysis;
pub mod cli;
pub mod coverage_json;
mod cpp;
pub mod mutation;
mod python;
mod steady;

pub use coverage_json::KnownStatements;
pub use cpp::{calibrate_cpp, gtest_filter, CppCalibration, EmptyRuns};
pub use python::{
    calibrate_group, calibrate_group_noted, empty_variant, node_of_case, CalibrateOptions,
    EmptyVariant, GroupCalibration, GroupError, Note,
};
pub use steady::steady_text;
