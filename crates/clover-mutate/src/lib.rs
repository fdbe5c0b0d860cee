//! Mutants of a problem's focal code, for the mutation score: does a test notice when the code
//! is wrong, not only run it?
//!
//! Given the files of a problem's focal code — a Task II target's body ([`target_bodies`]),
//! Task III's unique blocks ([`block_spans`]), a C++ focal source ([`Focus::Whole`]) — each
//! with the regions that may change ([`Focus`]), [`mutants`]
//! finds every mutation site with tree-sitter, in source order, and returns a seeded sample of
//! at most [`Sampling::max_mutants`]. The operators are the usual ones of mutmut, cosmic-ray and
//! Mull ([`Operator`]): arithmetic, comparison and boolean operator replacement, constant
//! replacement, negated conditions, statement deletion, return-value replacement and boundary
//! changes. Each [`Mutant`] is the original text with one span replaced, so formatting, comments
//! and line numbers outside the span survive.
//!
//! Every mutant re-parses: a candidate whose text tree-sitter reads with a syntax error (more
//! errors than the original had, for a file tree-sitter already stumbles on, as C++ with macros
//! can be) is dropped and the next one drawn. Nothing inside a part the parser could not read
//! is mutated.
//!
//! The sample is a pure function of the files, the focus and [`Sampling`]: sites are found in
//! tree order, grouped by operator (in [`Operator::ALL`]'s order), each group shuffled by
//! [`SplitMix64`] from the seed, and the groups drawn round-robin, so each operator that has
//! sites is represented before any has a second mutant. No `HashMap` order, no `rand`: the
//! same seed gives the same bytes on every platform. [`problem_seed`] mixes a run's seed with a
//! problem id.
//!
//! [`keep_killed`] is calibrate's half: it runs the ground truth (a closure) against each
//! mutant and keeps those it kills, with the tests that killed them; [`problem_mutants`] makes
//! the sidecar record of the result (`clover_protocol::ProblemMutants`), [`judge_problem`] does
//! the three in one call, and [`apply`] turns a recorded mutant back into its file's text,
//! refusing a file that changed since.
//!
//! This crate deliberately runs nothing itself and reads no files: running a mutant is the
//! caller's (in the sandbox), and so is reading the focal files. It does not check
//! types, so a C++ mutant may not compile (`+` → `-` on a `std::string`); the runner reports
//! that as [`Verdict::Invalid`] and [`keep_killed`] drops it.

mod calibrate;
mod cpp;
mod equivalent;
mod error;
mod focal;
mod operator;
mod python;
mod record;
mod rng;
mod sample;
mod sites;
mod source;

pub use calibrate::{keep_killed, Calibration, Verdict};
pub use equivalent::{equivalent_python, EQUIVALENT_ID, EQUIVALENT_INSERT};
pub use error::MutateError;
pub use focal::{block_spans, problem_focus, target_bodies};
pub use operator::Operator;
pub use record::{apply, file_hash, judge_problem, problem_mutants};
pub use rng::{problem_seed, Draws, SplitMix64};
pub use sample::{mutants, Mutant, Mutants, Sampling, DEFAULT_MAX_MUTANTS};
pub use source::{Focus, SourceFile};
