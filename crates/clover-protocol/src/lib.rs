//! The wire records of clover and the plumbing every stage shares.
//!
//! Stages are separate programs joined by pipes, so the records are the only contract between
//! them. This crate owns all of them: a serde derive here is a promise to other programs, and a
//! change to a record's meaning bumps [`SCHEMA_VERSION`]. Every record has a `kind`, an `id`
//! and a `schema_version`; wire types use neither `untagged` nor `flatten`, so a record reads
//! back exactly as it was written.
//!
//! Besides the records it holds:
//! - [`RecordReader`]: JSON Lines in, with a line-length cap, and errors that name the input,
//!   the line and the record id (malformed JSON, invalid UTF-8, wrong kind, missing field,
//!   duplicate id, newer schema);
//! - [`RecordWriter`]: JSON Lines out, flushed per record, to stdout or atomically to a file
//!   (`FILE.partial` renamed at the end), with `--resume` repair of a half-written last line;
//! - [`Shard`]: the stable FNV-1a partition behind `--shard K/N`, over each record's
//!   [`Record::shard_key`];
//! - [`ChunkOf`]: where a C++ chunk instance stands among its source's chunks, and the id of
//!   the whole file its answer joins into;
//! - [`judge_only`]: the mark (`scoring.judge_only`) of an instance whose ground truth
//!   calibrate could not run, which is judged but never executed;
//! - [`StageArgs`], [`StageIo`], [`exit`] and [`finish_main`]: the flags, error policy, exit
//!   codes and broken-pipe handling every stage binary shares;
//! - [`diag!`]: a line to stderr that, unlike `eprintln!`, does not panic when stderr is
//!   closed, so a stage whose stderr reader went away still finishes its records.
//!
//! It deliberately knows nothing of how a stage does its work: no parsing of source code, no
//! processes, no sandbox.

mod chunks;
mod diag;
mod digest;
mod jsonl;
mod judge_only;
mod lines;
mod progress;
mod records;
pub mod sample;
mod shard;
mod stage;
mod wire;

pub use chunks::{file_instance_id, ChunkOf, JOIN_APPEND};
pub use diag::write_diag;
pub use digest::sha256_hex;
pub use jsonl::{
    is_special_file, partial_path, write_whole, Location, RecordError, RecordReader, RecordWriter,
    DEFAULT_MAX_LINE_BYTES,
};
pub use judge_only::{judge_only, judge_only_mark, JUDGE_ONLY};
pub use lines::LineRanges;
pub use progress::{count_records, Progress};
pub use records::exclusion_wire;
pub use records::{
    AssertionForm, AssertionSite, CalibratedProblem, Chunk, ContextTier, CppPairing, CppProblem,
    DependencySource, EnvFailure, Environment, Exclusion, ExclusionReason, ExecSpec, FileCoverage,
    FileTier, GTestCase, Generation, Instance, KeptMutant, Language, LimitHit, Message, Mutation,
    Operand, OperatorKills, Outcome, Problem, ProblemMutants, PythonProblem, Record, RecordKind,
    RepoRef, Response, RunResult, ScoreRow, SftExample, Span, SuiteRun, Target, TargetKind, Task,
    TestCase, TestOutcome, TokenUsage, UniqueBlock, Unresolved, SCHEMA_VERSION,
    SKIPPED_OVER_MAX_CONTEXT,
};
pub use shard::{fnv1a64, Shard, SplitMix64};
pub use stage::{
    exit, finish_main, lexically_normal, resolved_path, BadRecords, OnError, StageArgs, StageIo,
    Stopped, Usage,
};
