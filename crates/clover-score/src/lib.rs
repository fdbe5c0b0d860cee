//! `clover score`: from run results to numbers.
//!
//! What the model's code was is decided once, by `clover_answer` (sandbox-run built the
//! candidate with it and recorded the answer in the result); score reads the recorded answer,
//! and for Task I aligns it again with the masked line through the same crate.
//!
//! **Run results → metrics** ([`Scorer`], [`verdict`]):
//!
//! - Task I: **EM** — the prediction equals the reference, whitespace outside string
//!   literals aside (`x in d` is not `x in d.keys()`); **ER** — the candidate passed;
//!   **RER** — passed, and the prediction is not trivial: not a constant in a unary assertion,
//!   not a constant compared with a constant, not an `==` whose prediction repeats the other
//!   side's text ([`trivial_rule`]). A constant is what Python's `ast.Constant` is, as CLOVER
//!   defines it: a number, string or bytes literal (no f-string), `True`, `False`, `None`,
//!   `...`; `--rer-constants clover` ([`ConstantReading::Clover`]) also counts signed numbers
//!   and tuples of constants, which the compiler folds. Both sides are read in the same way.
//! - Task II: **execution rate** — passed; **success** (CLOVER's reading) — passed *and* the
//!   model's own code (not the prefix, nor the setup a `full` prompt gave it) names the target
//!   (an identifier equal to the last part of its name); **called** (clover's stricter one) —
//!   a success that also ran a line of the target's span that an import alone does not run.
//!   Those import lines come from `scoring.target.import_lines` (calibrate finds them in the
//!   source: decorators, headers, a class body's statements); without them only the first
//!   line of the span (the `def`/`class` line) is discounted.
//! - Task III: **execution rate** — passed; **success** — passed and every required line of
//!   every block covered. A block's required lines are `blocks[].lines` when given (the
//!   executable lines the ground truth covered: coverage.py never reports blank lines,
//!   comments or the continuation lines of a statement, so these are what can be asked for),
//!   else every line of `start_line..=end_line`.
//! - C++ (one result per source file: sandbox-run joins the chunks' answers first, see
//!   [`assemble_file`]): **compile rate** (a candidate was compiled: anything but
//!   `compile_error`/`no_code`, and not a file missing a chunk's answer), **pass rate**,
//!   **success rate** — passed *and* covered every line of the focal source that the ground
//!   truth covers (`scoring.focal_coverage`, recorded by pack-context from calibrate), so a
//!   trivial passing test is a pass but not a success — and **focal coverage vs ground
//!   truth**: the share of those lines the candidate covers, averaged.
//! - Tasks II and III with `sandbox-run --mutation`: **mutation score** — of the kept mutants
//!   of the instances' focus (those the ground truth kills, from calibrate), the share the
//!   candidates' tests killed, pooled over the row (`mutation_score`, a column only when the
//!   results carry a pass); a test that fails on the original code kills none, an API error
//!   counts in neither part. The JSON row's `mutation` gives the kept and killed mutants with
//!   the kill rate, in all and per operator family. The oracle scores 100% by construction.
//! - Every task: **no-code rate**, and **error rate**: the share of results whose API call
//!   failed (outcome `api_error`; nothing ran). Those results are left out of the
//!   denominator of every other rate, since a failed call says nothing of the model.
//! - **Context utilization** per model, task and repository, on the headline metric (RER,
//!   success rate): Δmax = max over budgets − PO, Δmin = min over budgets − PO.
//! - Results generate did not ask because their prompt was over the model's maximum context
//!   (outcome `over_max_context`, `generate --max-context`) are in no row and no rate, and a
//!   setting that lost any is left out of Δ: CLOVER evaluates each model up to its own
//!   maximum length (r_maxLen). A legend under the task's table counts them.
//! - Judge-only results (outcome `judge_only`: a C++ pair whose ground truth calibrate could
//!   not run, built with `pack-context --judge-only-excluded`) are in no row and no rate,
//!   since nothing ran; the judge compares their answers as any other, and its rows count
//!   them (`judge_only`), as does a legend under the task's table.
//! - **LLM judge** ([`run_judge`]): pairwise, both orders (a win needs both, a disagreement
//!   is a tie) or, as the paper, one ([`JudgeOrder`]); Wilson 95% intervals; a pair whose
//!   request failed or whose answer could not be read is `undecided`, apart from ties.
//!
//! - **Intervals** ([`Bootstrap`]): every metric of every row gets a 95% percentile bootstrap
//!   interval over the row's instances, seeded (per row, from the seed and the row's id) so
//!   the same input gives the same bytes.
//!
//! Reports: Markdown tables ([`to_markdown`], which read as they are on a terminal, the
//! headline metric's interval in the last column), JSON ([`to_json`]:
//! `{"rows":[{"model","task","setting","repo","n","metrics","ci","mutation"}],"utilization":[…],
//! "judge":[…],"em_rer_gap":[…],"metadata":{…}}`), `ScoreRow` JSON Lines
//! ([`to_score_rows`]) and one self-contained HTML page ([`to_html`]: run metadata
//! ([`RunMeta`]: date, version, inputs, models with their full ids and sampling), a legend of
//! the metrics, a leaderboard, a chart per metric and per repository with intervals, and
//! each row linked to its results as a JSON Lines file beside the page; no script, no
//! external resource).
//!
//! The papers' tables ([`paper_tables`], `--tables paper`): under each paper number what
//! the paper's table of that number holds — CLOVER's Table 2 (dataset statistics, from the
//! instances, [`DatasetStats`]), Table 3 (Task I in problem-only: EM, ER, RER), Table 4
//! (Task I's RER in the context settings, Best, Δmax and Δmin, models by maximum context),
//! Table 5 (Task II and Task III success, `full`), Table 6 (Task III success and execution
//! rate, `full`), Tables 7 and 8 (the same for `part`), CPP-UT-Bench's Table 1 (each
//! codebase's domain, from the manifest) and the data of its Figs. 2–3 — with the paper's
//! caption quoted; a setting the paper does not build the task in is marked ‡, and clover's
//! own tables (the EM-vs-RER gap, Task II's called rate) take no paper number. A number
//! clover does not compute is "—" with a footnote, never an estimate.
//!
//! It deliberately runs nothing but the judge's HTTP requests: the candidates were run by
//! sandbox-run, and everything a metric needs travels in the records.

mod bootstrap;
pub mod cli;
mod judge;
mod meta;
mod metrics;
mod paper;
mod pyexpr;
mod report;
mod setting;

pub use bootstrap::Bootstrap;
pub use clover_extract::ConstantReading;
pub use judge::{
    judge_messages, parse_choice, run_judge, wilson, Choice, Judge, JudgeFailures, JudgeItem,
    JudgeOrder, JudgeRow,
};
pub use meta::{date_from_epoch, ModelMeta, RunMeta};
pub use metrics::{
    covered, covers_blocks, headline_metric, metric_names, trivial_rule, uses_target, verdict,
    verdict_with, ClozeFacts, Tally, TrivialRule, Verdict,
};
pub use paper::{
    paper_html, paper_json, paper_markdown, paper_tables, Cell, DatasetStats, PaperTable,
};
pub use pyexpr::{identifiers, normalize};
pub use report::{
    to_html, to_json, to_markdown, to_score_rows, Gap, Report, Row, Scorer, Utilization, ALL_REPOS,
};
pub use setting::setting_order;
