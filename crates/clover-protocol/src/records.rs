//! The records that flow between stages, one JSON object per line.
//!
//! Every record carries `kind`, `id` and `schema_version`. A field added, removed or changed in
//! meaning bumps [`SCHEMA_VERSION`]; readers reject records from a newer version than they know.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::lines::LineRanges;
use crate::wire;

/// The schema version this build writes and the newest it reads.
///
/// Version 2 writes no JSON `null` and `scoring` as the text of its object; version 3 also
/// writes every list that can be empty in a whole file, and a problem's language part, as
/// their JSON text (see `wire`), so files load together where column types are inferred.
/// Records of versions 1 and 2 still read.
pub const SCHEMA_VERSION: u32 = 3;

/// What a record is. Serialized as the `kind` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    Problem,
    CalibratedProblem,
    Instance,
    Response,
    RunResult,
    ScoreRow,
    SftExample,
    ProblemMutants,
    Environment,
}

impl RecordKind {
    /// The name written in the `kind` field.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Problem => "problem",
            RecordKind::CalibratedProblem => "calibrated_problem",
            RecordKind::Instance => "instance",
            RecordKind::Response => "response",
            RecordKind::RunResult => "run_result",
            RecordKind::ScoreRow => "score_row",
            RecordKind::SftExample => "sft_example",
            RecordKind::ProblemMutants => "problem_mutants",
            RecordKind::Environment => "environment",
        }
    }
}

impl std::fmt::Display for RecordKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A wire record: something with a kind, an id and a schema version.
pub trait Record: Serialize + for<'de> Deserialize<'de> {
    /// The `kind` every record of this type carries.
    const KIND: RecordKind;
    /// The stable id, unique within one stream.
    fn id(&self) -> &str;
    /// The `kind` field as read from the wire.
    fn kind(&self) -> RecordKind;
    /// The `schema_version` field as read from the wire.
    fn schema_version(&self) -> u32;
    /// What `--shard` hashes: the id, except that the chunk instances of one C++ source and
    /// their responses hash the id of their whole file ([`Instance::file_instance_id`],
    /// [`Response::file_response_id`]), so a shard holds every chunk of the files it holds.
    fn shard_key(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.id())
    }
}

macro_rules! record {
    ($ty:ty, $kind:expr) => {
        record!($ty, $kind, {});
    };
    ($ty:ty, $kind:expr, { $($extra:item)* }) => {
        impl Record for $ty {
            const KIND: RecordKind = $kind;
            fn id(&self) -> &str {
                &self.id
            }
            fn kind(&self) -> RecordKind {
                self.kind
            }
            fn schema_version(&self) -> u32 {
                self.schema_version
            }
            $($extra)*
        }
    };
}

record!(Problem, RecordKind::Problem);
record!(CalibratedProblem, RecordKind::CalibratedProblem);
record!(Instance, RecordKind::Instance, {
    fn shard_key(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.file_instance_id())
    }
});
record!(Response, RecordKind::Response, {
    fn shard_key(&self) -> Cow<'_, str> {
        self.file_response_id()
    }
});
record!(RunResult, RecordKind::RunResult);
record!(ScoreRow, RecordKind::ScoreRow);
record!(SftExample, RecordKind::SftExample);
record!(ProblemMutants, RecordKind::ProblemMutants);
record!(Environment, RecordKind::Environment);

/// The language of a repository and of its problems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    Python,
    Cpp,
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Language::Python => "python",
            Language::Cpp => "cpp",
        })
    }
}

/// A region of a file: 1-based inclusive lines and 0-based byte offsets (end exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Span {
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: u32,
    pub end_byte: u32,
}

// ---------------------------------------------------------------------------------------------
// extract

/// One benchmark problem: a Python test function or a C++ source/test pair.
///
/// Exactly one of `python` and `cpp` is set, matching `language`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    pub kind: RecordKind,
    pub schema_version: u32,
    /// `repo/path::Class::name` for Python, `repo/path/to/source` for C++.
    pub id: String,
    pub repo: String,
    pub language: Language,
    /// Written as the JSON text of the part (absent: `""`), so Python and C++ problems load
    /// together (see `wire`).
    #[serde(default, with = "wire::json_text_or_empty")]
    pub python: Option<PythonProblem>,
    #[serde(default, with = "wire::json_text_or_empty")]
    pub cpp: Option<CppProblem>,
}

/// A Python test function, isolated into its own problem file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonProblem {
    /// The original test file, relative to the repository root.
    pub test_file: String,
    /// The enclosing `Test*` or `TestCase` class, if the test is a method (else `""`).
    #[serde(default, with = "wire::empty")]
    pub class: Option<String>,
    pub name: String,
    /// Where the test function (with its decorators) stands in the original file.
    pub span: Span,
    /// The problem file written next to the original, relative to the repository root.
    pub problem_file: String,
    /// The node id that runs the test inside the problem file, e.g.
    /// `tests/tmp_test_test_core_3.py::TestX::test_y` (the whole stem of `test_core.py`).
    pub node_id: String,
    /// The whole problem file.
    pub problem_text: String,
    /// Everything in the problem file before the test (imports, helpers, class header).
    pub setup_code: String,
    /// The decorators and the `def` line(s), as they stand in the file (indented), up to and
    /// including the newline after the colon.
    pub declaration: String,
    /// The lines of the function's block, as they stand in the file (indented), each ending
    /// with a newline.
    pub body: String,
    /// 1-based line in `problem_text` where `declaration` starts. The text from that line on
    /// begins with `declaration` followed directly by `body`; whatever follows (a class's
    /// teardown methods) stays in place when the test is replaced.
    pub problem_declaration_line: u32,
    pub assertions: Vec<AssertionSite>,
    /// Names the test uses that resolve to the repository's own modules.
    pub repo_refs: Vec<RepoRef>,
}

/// An `assert` statement in a test body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssertionSite {
    /// The span in the original test file.
    pub span: Span,
    /// The span relative to the problem file's text.
    pub problem_span: Span,
    pub text: String,
    pub form: AssertionForm,
    /// The comparison operator of a binary assertion (`==`, `in`, `is not`, …); `""` for a
    /// unary one.
    #[serde(default, with = "wire::empty")]
    pub operator: Option<String>,
    /// One operand for a unary assertion, left then right for a binary one.
    pub operands: Vec<Operand>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssertionForm {
    Unary,
    Binary,
}

/// One side of an assertion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operand {
    pub text: String,
    /// Span in the problem file's text.
    pub problem_span: Span,
    /// A constant in Python's AST sense (`ast.Constant`): a number, string or bytes literal,
    /// True/False/None or Ellipsis. Not `-3` (a `UnaryOp`) nor `(1, 2)` (a `Tuple`).
    pub is_constant: bool,
}

/// A name a test uses that resolves to the repository's own code.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RepoRef {
    /// The name as the test writes it (`Ledger`, `parse_amount`).
    pub name: String,
    /// The module it comes from (`ledger.core`).
    pub module: String,
    /// The source file that defines the module, relative to the repository root, when known
    /// (else `""`).
    #[serde(default, with = "wire::empty")]
    pub file: Option<String>,
}

/// A C++ source file paired with its GoogleTest file, with CPP-UT-Bench's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CppProblem {
    pub file_name: String,
    /// The source, relative to the repository root.
    pub file_path: String,
    /// The test file, relative to the repository root.
    pub test_path: String,
    #[serde(default, with = "wire::empty")]
    pub header_path: Option<String>,
    /// The source with comments stripped.
    pub code: String,
    /// The ground-truth test file with comments stripped.
    pub unit_test: String,
    pub tests: Vec<GTestCase>,
    /// Pieces of `code` of at most the chunk limit, cut along top-level syntax nodes; one chunk
    /// holding the whole file when it is short.
    pub chunks: Vec<Chunk>,
    /// The rule that paired the test with the source; absent means CPP-UT-Bench's base name.
    #[serde(default, skip_serializing_if = "CppPairing::is_base_name")]
    pub pairing: CppPairing,
}

/// How a C++ test file was paired with its source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CppPairing {
    /// CPP-UT-Bench's rule: `foo_test.cc` (or `foo_unittest.cc`) tests `foo.cc` (or `foo.h`).
    #[default]
    BaseName,
    /// clover's extension, for a test no base name pairs: the test `#include`s the source's
    /// header (`log_test.cc` includes `db/log_reader.h`, so it tests `db/log_reader.cc`).
    Includes,
}

impl CppPairing {
    pub fn is_base_name(&self) -> bool {
        *self == CppPairing::BaseName
    }
}

/// A `TEST`, `TEST_F`, `TEST_P` or `TYPED_TEST` in a test file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GTestCase {
    /// The macro (`TEST`, `TEST_F`, …).
    pub macro_name: String,
    pub suite: String,
    pub name: String,
    pub span: Span,
}

/// A piece of a C++ source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    pub index: u32,
    /// Lines of the comment-stripped code.
    pub span: Span,
    pub code: String,
}

// ---------------------------------------------------------------------------------------------
// calibrate

/// A problem with the facts its ground truth showed when it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibratedProblem {
    pub kind: RecordKind,
    pub schema_version: u32,
    pub id: String,
    pub repo: String,
    pub problem: Problem,
    /// `None` when the problem is kept for the task builders (written with an empty reason).
    #[serde(default, with = "exclusion_wire")]
    pub exclusion: Option<Exclusion>,
    /// Lines each source file had covered by the test. This list and the ones below are
    /// written as their JSON text (see `wire`): a C++ problem, or an excluded one, has none.
    #[serde(with = "wire::json_text")]
    pub base: Vec<FileCoverage>,
    /// Lines covered by an empty test deployed at the same place.
    #[serde(with = "wire::json_text")]
    pub empty: Vec<FileCoverage>,
    #[serde(with = "wire::json_text")]
    pub tiers: Vec<FileTier>,
    #[serde(with = "wire::json_text")]
    pub unique_blocks: Vec<UniqueBlock>,
    #[serde(with = "wire::json_text")]
    pub targets: Vec<Target>,
    /// Outcomes of each ground-truth run, in order.
    #[serde(with = "wire::json_text")]
    pub runs: Vec<Outcome>,
}

/// Why a problem was kept out of the later stages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exclusion {
    pub reason: ExclusionReason,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExclusionReason {
    Failed,
    Error,
    Timeout,
    CollectionError,
    CompileError,
    Flaky,
    NoTests,
}

/// Covered lines of one source file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FileCoverage {
    /// Relative to the repository root.
    pub path: String,
    pub lines: LineRanges,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextTier {
    /// The file has a line covered by this test and by no peer.
    Peer,
    /// Covered beyond the empty test, but not uniquely.
    Other,
    /// Coverage equals what an empty test gets (imports, module level).
    Repo,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileTier {
    pub path: String,
    pub tier: ContextTier,
}

/// A run of lines covered by one test and by none of its peers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UniqueBlock {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub code: String,
    /// The block's executable lines, which the test covers: what a coverage test must run
    /// (blank lines, comments, `else:` and continuation lines inside the span are not among
    /// them, and no test can cover those). Empty in older records.
    #[serde(default, skip_serializing_if = "LineRanges::is_empty")]
    pub lines: LineRanges,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    Class,
    Function,
}

/// A repository class or function a test references and executes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub name: String,
    pub kind: TargetKind,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    /// The lines of the span that run when the module is imported (decorators, `def` and
    /// `class` headers, a class body's statements): running them is not calling the target.
    /// Absent when there are none, and in older records.
    #[serde(default, skip_serializing_if = "LineRanges::is_empty")]
    pub import_lines: LineRanges,
}

/// The mutants of one problem's focal code that its ground truth kills: the bar of the mutation
/// score. Calibrate's sidecar, `OUTPUT.mutants.jsonl`, holds one per kept problem, under the
/// problem's id, so scoring never re-derives them (made and judged by `clover-mutate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemMutants {
    pub kind: RecordKind,
    pub schema_version: u32,
    /// The problem id.
    pub id: String,
    /// The seed the sample was drawn with (the run's seed mixed with the problem id).
    pub seed: u64,
    /// K: the sample holds at most this many mutants.
    pub max_mutants: u32,
    /// The mutation sites of the focal code the sample was drawn from.
    pub candidates: u32,
    /// The sampled mutants the ground truth kills, in source order. This list and the two
    /// below are written as their JSON text (see `wire`).
    #[serde(with = "wire::json_text")]
    pub kept: Vec<KeptMutant>,
    /// The ids of sampled mutants every ground-truth test passed on (likely equivalent).
    #[serde(with = "wire::json_text")]
    pub survived: Vec<String>,
    /// The ids of sampled mutants that could not run at all (a C++ mutant that does not
    /// compile): neither killed nor survived.
    #[serde(with = "wire::json_text")]
    pub invalid: Vec<String>,
}

/// A mutant the ground truth kills: one span of one file replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptMutant {
    /// `path:line:column:operator:n`, unique within the problem.
    pub id: String,
    /// The mutated file, relative to the repository root.
    pub path: String,
    /// The operator family (`arithmetic`, `boundary`, …), for per-operator kill rates.
    pub operator: String,
    /// 1-based line of the replaced span.
    pub line: u32,
    /// The replaced span of the original file, 0-based bytes, end exclusive.
    pub start_byte: u32,
    pub end_byte: u32,
    pub original: String,
    pub replacement: String,
    /// FNV-1a ([`crate::fnv1a64`]) of the whole original file, in hex: a runner checks it
    /// before applying the mutant, so a file changed since calibration is an error rather than
    /// a different mutant.
    pub file_hash: String,
    /// The ground-truth tests that failed on the mutant (empty when the runner could not tell
    /// which: a crash, a timeout, a build that stopped).
    pub killed_by: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// pack-context and generate

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// Task I: fill the masked operand of an assertion.
    AssertionCloze,
    /// Task II: write a test that uses a given class or function.
    TargetedTest,
    /// Task III: write a test that covers given blocks.
    CoverageTest,
    /// CPP-UT-Bench: write GoogleTest tests for a source chunk.
    CppUnitTest,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

/// How sandbox-run turns an answer into a test file and what it runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ExecSpec {
    pub repo: String,
    #[serde(default, with = "wire::empty")]
    pub language: Option<Language>,
    /// Where the candidate file goes, relative to the repository root.
    pub candidate_path: String,
    /// Text placed before the answer's code.
    pub prefix: String,
    /// Text placed after the answer's code.
    pub suffix: String,
    /// pytest node ids or GoogleTest filters; empty runs the whole candidate file. Written as
    /// its JSON text (see `wire`): a C++ instance has none.
    #[serde(default, with = "wire::json_text")]
    pub selectors: Vec<String>,
}

/// One task instance with its prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    pub kind: RecordKind,
    pub schema_version: u32,
    pub id: String,
    pub problem_id: String,
    pub repo: String,
    pub task: Task,
    /// `po` or a budget such as `8k`.
    pub setting: String,
    pub answer_format: String,
    pub prompt: String,
    pub messages: Vec<Message>,
    pub prompt_tokens: u32,
    /// Written as its JSON text (see `wire`): a problem-only instance has none.
    #[serde(with = "wire::json_text")]
    pub context_files: Vec<String>,
    /// The ground-truth answer.
    pub reference: String,
    pub exec: ExecSpec,
    /// Task-specific facts the scorer needs, as plain JSON values keyed by name; written as the
    /// text of a JSON object (its keys differ by task).
    #[serde(with = "wire::scoring")]
    pub scoring: BTreeMap<String, serde_json::Value>,
}

/// A supervised fine-tuning pair: an instance's chat messages with the ground truth as the
/// assistant turn, and the split its repository falls in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SftExample {
    pub kind: RecordKind,
    pub schema_version: u32,
    /// The instance id.
    pub id: String,
    pub repo: String,
    /// `train`, `eval` or `test`.
    pub split: String,
    pub task: Task,
    pub setting: String,
    pub messages: Vec<Message>,
}

/// A model's answer to one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub kind: RecordKind,
    pub schema_version: u32,
    /// `<instance id>@<model>`.
    pub id: String,
    pub instance_id: String,
    pub model: String,
    pub task: Task,
    pub setting: String,
    pub repo: String,
    /// The model's raw text.
    pub text: String,
    /// Set when no answer could be had (the text is then empty): the server or the command
    /// failed, which says nothing of the model's skill.
    #[serde(default, with = "wire::empty")]
    pub error: Option<String>,
    /// What produced the answer, and how it went. Absent in older records, which read as the
    /// default (an empty `adapter`).
    #[serde(default)]
    pub generation: Generation,
    pub exec: ExecSpec,
    #[serde(with = "wire::scoring")]
    pub scoring: BTreeMap<String, serde_json::Value>,
}

/// What produced a [`Response`]: the settings a resumed run must share, and what the call
/// reported. Fields that do not apply to the adapter are `None`, written as `wire` says
/// (`""`, `-1`; `-9` for a penalty).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Generation {
    /// `oracle`, `copy_operand`, `assert_true`, `openai` or `cmd`.
    pub adapter: String,
    /// The model name sent to the server, in full (`meta-llama/Llama-3.1-8B-Instruct`).
    #[serde(default, with = "wire::empty")]
    pub model_name: Option<String>,
    /// The API root the request went to.
    #[serde(default, with = "wire::empty")]
    pub base_url: Option<String>,
    #[serde(default, with = "wire::minus_one_f64")]
    pub temperature: Option<f64>,
    #[serde(default, with = "wire::minus_one_f64")]
    pub top_p: Option<f64>,
    #[serde(default, with = "wire::minus_one")]
    pub max_tokens: Option<u32>,
    #[serde(default, with = "wire::minus_one")]
    pub seed: Option<u64>,
    /// Sampling a request carries only when set (not every server knows these fields).
    #[serde(default, with = "wire::penalty")]
    pub frequency_penalty: Option<f64>,
    #[serde(default, with = "wire::penalty")]
    pub presence_penalty: Option<f64>,
    /// Sequences at which the server stops generating.
    #[serde(default, with = "wire::empty_list")]
    pub stop: Option<Vec<String>>,
    /// The model's maximum context in tokens (`--max-context`): an instance whose prompt and
    /// answer reserve do not fit is not sent ([`Generation::skipped`]).
    #[serde(default, with = "wire::minus_one")]
    pub max_context: Option<u32>,
    /// Why no request was made for this instance, on purpose: [`SKIPPED_OVER_MAX_CONTEXT`].
    /// The text is then empty and `error` unset — a model not asked is neither a failed call
    /// nor a wrong answer.
    #[serde(default, with = "wire::empty")]
    pub skipped: Option<String>,
    /// The server's `finish_reason` (`stop`, `length`, …).
    #[serde(default, with = "wire::empty")]
    pub finish_reason: Option<String>,
    /// Written with both counts `-1` when absent.
    #[serde(default, with = "usage_wire")]
    pub usage: Option<TokenUsage>,
    /// Requests sent for this answer, retries included; 0 when no request is made.
    pub attempts: u32,
    /// The HTTP status of the last attempt, when a server answered.
    #[serde(default, with = "wire::minus_one")]
    pub http_status: Option<u16>,
    /// Timing: excluded by name when outputs are compared.
    pub duration_secs: f64,
}

/// [`Generation::skipped`] of an instance whose prompt, with the task's answer reserve, is
/// longer than the model's maximum context: CLOVER runs each model only up to its own maximum
/// length (r_maxLen), so such an instance is not asked and not scored.
pub const SKIPPED_OVER_MAX_CONTEXT: &str = "over_max_context";

/// Tokens a server counted for one completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

// ---------------------------------------------------------------------------------------------
// sandbox-run

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
    Error,
    Timeout,
    Oom,
    Killed,
    NoCode,
    CompileError,
    /// The run ended well but no test ran: every test was skipped or xfailed. Not a pass.
    NoTestsRun,
    /// Nothing ran: the response holds no answer because the call for it failed (the server,
    /// the command; `Response::error`). Not the model's doing, so score keeps it out of the
    /// model's metrics and counts it apart.
    ApiError,
    /// Nothing ran: the screen for reward hacking found in the model's code a construct no
    /// honest unit test needs (its message names the construct and line). The model's doing:
    /// a failed execution in every metric, and counted apart as `rejected_rate`.
    Rejected,
    /// Nothing ran: generate did not send the prompt, which is longer than the model's maximum
    /// context ([`SKIPPED_OVER_MAX_CONTEXT`]). Score leaves it out of every table and of
    /// context utilization, as CLOVER evaluates each model up to its own maximum length.
    OverMaxContext,
    /// Nothing ran: the instance is judge-only (`scoring.judge_only`, [`crate::judge_only`]):
    /// calibrate could not run its ground truth, so there is no execution to measure the
    /// answer against. Not a failure and not `no_code`: score leaves it out of every
    /// execution metric and puts the answer (taken out as for a run) to the LLM judge.
    JudgeOnly,
    /// The run ran, and what it reported is not what happened: the runner's own record of
    /// the run (sent through the report channel as each test ended) disagrees with the report
    /// files the run left. The model's doing: a failed execution in every metric, with no
    /// tests, no covered lines and no killed mutants, and counted apart as `forged_rate`. Its
    /// message says what disagreed.
    Forged,
}

/// The limit that ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitHit {
    WallClock,
    CpuTime,
    Memory,
    Pids,
    FileSize,
    OpenFiles,
    Disk,
}

impl std::fmt::Display for LimitHit {
    /// The limit in words, for messages: `wall-clock`, `memory`, …
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LimitHit::WallClock => "wall-clock",
            LimitHit::CpuTime => "CPU-time",
            LimitHit::Memory => "memory",
            LimitHit::Pids => "process-count",
            LimitHit::FileSize => "file-size",
            LimitHit::OpenFiles => "open-files",
            LimitHit::Disk => "disk",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestOutcome {
    Passed,
    Failed,
    Error,
    Skipped,
}

/// One test case as a report (JUnit XML) tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestCase {
    pub name: String,
    pub classname: String,
    pub outcome: TestOutcome,
    #[serde(default, with = "wire::empty")]
    pub message: Option<String>,
    pub duration_secs: f64,
}

/// What running one response's candidate test showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub kind: RecordKind,
    pub schema_version: u32,
    /// The response id.
    pub id: String,
    pub instance_id: String,
    pub model: String,
    #[serde(default, with = "wire::empty")]
    pub task: Option<Task>,
    pub setting: String,
    pub repo: String,
    pub outcome: Outcome,
    /// Written as its JSON text, like `coverage` (see `wire`): a run that never started has
    /// no tests, and Task I is run without coverage.
    #[serde(with = "wire::json_text")]
    pub tests: Vec<TestCase>,
    #[serde(with = "wire::json_text")]
    pub coverage: Vec<FileCoverage>,
    #[serde(default, with = "wire::empty")]
    pub limit_hit: Option<LimitHit>,
    /// `-1` when the process did not exit by itself (a signal) or nothing ran.
    #[serde(default, with = "wire::minus_one")]
    pub exit_code: Option<i32>,
    /// `-1` when no signal ended the process.
    #[serde(default, with = "wire::minus_one")]
    pub signal: Option<i32>,
    /// The code that was run (the answer's code with its prefix and suffix), if any.
    #[serde(default, with = "wire::empty")]
    pub candidate: Option<String>,
    /// The code taken from the model's answer: for Task I the predicted operand, otherwise the
    /// code as placed between the prefix and the suffix; `None` when no code was found. Written by
    /// `clover_answer::assemble_candidate`; the scorer reads it to tell what the model wrote
    /// from what the prefix already held. Absent in older records, which read as `None`.
    #[serde(default, with = "wire::empty")]
    pub answer: Option<String>,
    #[serde(default, with = "wire::empty")]
    pub message: Option<String>,
    pub stdout_tail: String,
    pub stderr_tail: String,
    #[serde(with = "wire::scoring")]
    pub scoring: BTreeMap<String, serde_json::Value>,
    /// Timing: excluded by name when outputs are compared.
    pub duration_secs: f64,
    /// What the candidate's tests did to the kept mutants of its instance's focus
    /// (`sandbox-run --mutation`). Absent in older records and when no pass applies, which
    /// read and write as [`Mutation::default`] (`kept` -1).
    #[serde(default)]
    pub mutation: Mutation,
}

/// A result's mutation pass: the kept mutants of the instance's focus (calibrate's sidecar,
/// [`ProblemMutants`]) each written over its original file beside the candidate and run until
/// the first failing test. A candidate that did not pass on the original code runs none and
/// kills none: its `kept` still counts in the score's denominator.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Mutation {
    /// The kept mutants inside the instance's focus (Task II: its target's body; Task III: its
    /// blocks); `None` (written -1) when no pass applies: no `--mutation`, no record for the
    /// problem, Task I, C++.
    #[serde(default, with = "wire::minus_one")]
    pub kept: Option<u32>,
    /// Mutants run: all of `kept` when the candidate passed on the original code, else 0.
    pub run: u32,
    /// Mutants on which the candidate's run did not pass (a failed test, an error, a limit).
    pub killed: u32,
    /// The same counts by operator family, in name order. Written as its JSON text, like
    /// `survived` (see `wire`).
    #[serde(default, with = "wire::json_text")]
    pub operators: Vec<OperatorKills>,
    /// The ids of the mutants run that the candidate let live, in the sidecar's order.
    #[serde(default, with = "wire::json_text")]
    pub survived: Vec<String>,
    /// Mutant runs that fell back to a fresh interpreter because no warm worker could serve
    /// them (not those of `--cold`, where every run is).
    pub cold: u32,
    /// Timing of all mutant runs: excluded by name when outputs are compared.
    pub duration_secs: f64,
}

/// One operator family's share of a [`Mutation`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorKills {
    /// `arithmetic`, `boundary`, … (`KeptMutant::operator`).
    pub operator: String,
    pub kept: u32,
    pub killed: u32,
}

// ---------------------------------------------------------------------------------------------
// score

/// One row of a score table: a model on a task in a setting (and optionally one repository).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRow {
    pub kind: RecordKind,
    pub schema_version: u32,
    /// `<model>/<task>/<setting>/<repo>`, or `<model>/<task>/<answer format>/<setting>/<repo>`
    /// for a task asked in several answer formats.
    pub id: String,
    pub model: String,
    pub task: Task,
    /// The answer format the row's results were asked in (`part`, `full`); empty for a task
    /// with one format. Absent in older records.
    #[serde(default)]
    pub answer_format: String,
    pub setting: String,
    /// `*` when the row covers every repository.
    pub repo: String,
    pub n: u64,
    pub metrics: BTreeMap<String, f64>,
}

/// [`CalibratedProblem::exclusion`] on the wire: a kept problem's is an empty reason and detail
/// rather than `null` (see `wire`). Public for a reader that takes a few fields of a calibrated
/// problem without the rest (`#[serde(deserialize_with = "exclusion_wire::deserialize")]`).
pub mod exclusion_wire {
    use super::*;
    use serde::{Deserializer, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Wire {
        #[serde(default, with = "wire::empty")]
        reason: Option<ExclusionReason>,
        detail: String,
    }

    pub fn serialize<S: Serializer>(v: &Option<Exclusion>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(e) => Wire {
                reason: Some(e.reason),
                detail: e.detail.clone(),
            },
            None => Wire {
                reason: None,
                detail: String::new(),
            },
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Exclusion>, D::Error> {
        Ok(Option::<Wire>::deserialize(d)?.and_then(|w| {
            w.reason.map(|reason| Exclusion {
                reason,
                detail: w.detail,
            })
        }))
    }
}

/// [`Generation::usage`] on the wire: both counts `-1` when the server reported none.
mod usage_wire {
    use super::*;
    use serde::{Deserializer, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Wire {
        #[serde(default, with = "wire::minus_one")]
        prompt_tokens: Option<u64>,
        #[serde(default, with = "wire::minus_one")]
        completion_tokens: Option<u64>,
    }

    pub fn serialize<S: Serializer>(v: &Option<TokenUsage>, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            prompt_tokens: v.map(|u| u.prompt_tokens),
            completion_tokens: v.map(|u| u.completion_tokens),
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TokenUsage>, D::Error> {
        Ok(Option::<Wire>::deserialize(d)?.and_then(|w| {
            Some(TokenUsage {
                prompt_tokens: w.prompt_tokens?,
                completion_tokens: w.completion_tokens?,
            })
        }))
    }
}

// ---------------------------------------------------------------------------------------------
// env

/// What `clover env` made of one repository: the interpreter every later stage runs its
/// tests with, what went into it and from where, and how the repository's suite did in it.
/// The id is the repository's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub kind: RecordKind,
    pub schema_version: u32,
    pub id: String,
    /// The repository folder, absolute.
    pub repo: String,
    /// The environment's interpreter, absolute: what a manifest's `python` names.
    pub python: String,
    /// `MAJOR.MINOR.PATCH` of that interpreter.
    pub python_version: String,
    /// The digest of everything the environment was made from (interpreter, dependency
    /// files, recipe entry, installer, cutoff): the same key is the same environment.
    pub key: String,
    /// Whether this run found the environment already made from the same inputs and did
    /// nothing.
    pub cached: bool,
    /// The installer and its version (`uv 0.13.9`).
    pub installer: String,
    /// Only packages uploaded before this instant were considered (RFC 3339), when set.
    #[serde(default, with = "wire::empty")]
    pub exclude_newer: Option<String>,
    /// Each place dependencies were taken from, in the order they were installed.
    pub sources: Vec<DependencySource>,
    /// Requirements that could not be installed, each with why.
    pub unresolved: Vec<Unresolved>,
    /// What the environment holds, `name==version`, sorted: its pins.
    pub installed: Vec<String>,
    /// The one run of the suite, unless it was not asked for or the environment failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<SuiteRun>,
    /// Why no environment was made: the step and the package, when one is to blame. A failed
    /// environment leaves nothing behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<EnvFailure>,
}

/// One place dependencies were read from: a requirements file, an extra of the project, a
/// dependency group, a tox or nox environment's deps, the recipe, or the project itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DependencySource {
    /// `requirements`, `extra`, `group`, `tox`, `nox`, `recipe`, `project`, `test_tools`.
    pub origin: String,
    /// The file and, for an extra, group or tox environment, its name (`pyproject.toml[test]`).
    pub name: String,
    /// The requirements it named, as written.
    pub requirements: Vec<String>,
    /// Whether all of them installed.
    pub installed: bool,
}

/// A requirement the installer could not satisfy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unresolved {
    pub requirement: String,
    /// The [`DependencySource::name`] that asked for it.
    pub source: String,
    /// The installer's own words, its last error line.
    pub why: String,
}

/// The suite's one run in the sandbox, counted from its JUnit report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteRun {
    pub passed: u64,
    pub failed: u64,
    pub errors: u64,
    pub skipped: u64,
    pub seconds: f64,
    /// The run's outcome as a verdict would read it (`failed` when any test failed).
    pub outcome: Outcome,
    /// Why the outcome is what it is when the counts alone do not say it.
    #[serde(default, with = "wire::empty")]
    pub message: Option<String>,
    /// Why the run stopped before the end of the suite (its time budget), when it did.
    #[serde(default, with = "wire::empty")]
    pub stopped: Option<String>,
    /// Whether the environment is usable: at least one test passed and at least half of those
    /// that ran did not fail or error (the paper's §2.2, "a significant number of passed test
    /// cases").
    pub usable: bool,
}

/// Why an environment could not be made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvFailure {
    /// `interpreter`, `venv`, `install`, `freeze`, `suite`, `fetch`.
    pub step: String,
    /// The package or file to blame, when one is.
    #[serde(default, with = "wire::empty")]
    pub package: Option<String>,
    pub message: String,
}
