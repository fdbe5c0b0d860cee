//! The papers' tables from clover's own records (`clover score --tables paper`), each under
//! its number holding what the paper's table of that number holds, its caption quoted:
//!
//! - CLOVER Table 2: per task and setting, unique examples, templates, mean prompt tokens
//!   (from the instances, `--instances`: run results carry no prompt lengths or problem ids).
//! - Table 3: Task I in problem-only, EM, ER and RER per model. Table 4: Task I's RER in PO
//!   and every context setting, Best, and context utilization (Δmax, Δmin). Both list models
//!   in ascending order of their maximum context (`generate --max-context`, from
//!   `--responses`), as the paper orders them by "maximum supported sequence length"; a
//!   model without one goes last, and a footnote says so.
//! - Table 5: the success rate of Task II (`full`) and, in its rightmost columns, of Task III
//!   (`full`). Table 6: Task III's success and execution rate (`full`). Table 7: Task II's
//!   success rate in `part`. Table 8: Task III's success and execution rate in `part`.
//! - CPP-UT-Bench Table 1: the domain of each C++ codebase, from the manifest's `domain`
//!   (`--manifest`); its Figs. 2–3 (pairs per repository, their line lengths) as a table of
//!   their data and, in HTML, as SVG charts.
//!
//! The columns are the paper's settings for the task (Task I: PO, 4k–128k; Task II: PO,
//! 8k–64k; Task III: 64k, 128k) and any other the results hold, marked ‡ as clover's addition
//! (Task III's PO from `pack-context --coverage-po`). clover's own tables (§4.1's EM-vs-RER
//! gap, Task II's called rate) carry no caption and say in their titles that they are not
//! the paper's. docs/FIDELITY.md quotes the sentences each layout follows.
//!
//! A number clover does not compute is "—" with a footnote saying why; nothing is estimated.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use clover_generate::task_name;
use clover_protocol::{Instance, Problem, Task};
use serde_json::{json, Value};

use crate::report::{
    esc, html_head, metadata_html, pct, settings_and_series, Report, Row, ALL_REPOS,
};
use crate::setting::setting_order;

/// One cell of a paper table.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    /// A rate in [0, 1], shown as a percentage.
    Rate(f64),
    /// A difference of rates, shown signed.
    Delta(f64),
    Count(u64),
    /// A mean or other real number, shown with one decimal.
    Number(f64),
    /// A number clover does not have; a footnote says why.
    Missing,
}

impl Cell {
    fn text(&self) -> String {
        match self {
            Cell::Text(t) => t.clone(),
            Cell::Rate(v) => pct(*v),
            Cell::Delta(v) => format!("{:+.1}", v * 100.0),
            Cell::Count(n) => n.to_string(),
            Cell::Number(v) => format!("{v:.1}"),
            Cell::Missing => "—".into(),
        }
    }

    fn json(&self) -> Value {
        let round = |v: f64| json!((v * 1e6).round() / 1e6);
        match self {
            Cell::Text(t) => json!(t),
            Cell::Rate(v) | Cell::Delta(v) | Cell::Number(v) => round(*v),
            Cell::Count(n) => json!(n),
            Cell::Missing => Value::Null,
        }
    }

    fn numeric(&self) -> bool {
        !matches!(self, Cell::Text(_))
    }
}

/// A table as a paper prints it: a number, a title, columns, rows and footnotes.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperTable {
    /// `clover-2` … `clover-8`, `clover-gap`, `clover-called`, `cpp-1`, `cpp-fig-2-3`.
    pub id: String,
    pub title: String,
    /// The paper's caption, quoted, when the table is one of the paper's.
    pub caption: Option<String>,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub footnotes: Vec<String>,
}

/// What the instances say of the dataset, for CLOVER's Table 2 and CPP-UT-Bench's Table 1.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DatasetStats {
    /// Per task and setting.
    by_setting: BTreeMap<(Task, String), SettingStats>,
    /// Per C++ source file (problem id).
    cpp: BTreeMap<String, CppPair>,
    /// Per C++ repository of the manifest, its `domain` there (CPP-UT-Bench's Table 1).
    domains: BTreeMap<String, Option<String>>,
}

#[derive(Debug, Default, Clone, PartialEq)]
struct SettingStats {
    problems: BTreeSet<String>,
    templates: BTreeSet<String>,
    instances: u64,
    prompt_tokens: u64,
}

#[derive(Debug, Default, Clone, PartialEq)]
struct CppPair {
    repo: String,
    chunks: u64,
    test_lines: u64,
    /// Lines of the source, from its problem record (instances carry the source only inside
    /// the prompt text).
    source_lines: Option<u64>,
    /// Prompt tokens of all the pair's chunks, per setting.
    tokens: BTreeMap<String, u64>,
    /// Its instances are judge-only: calibrate could not run its ground truth.
    judge_only: bool,
}

impl DatasetStats {
    pub fn add(&mut self, i: &Instance) {
        let s = self
            .by_setting
            .entry((i.task, i.setting.clone()))
            .or_default();
        s.problems.insert(i.problem_id.clone());
        // A template is the answer format and, for Task I, the prompt template asked.
        let template = match i.scoring.get("template").and_then(Value::as_str) {
            Some(t) => format!("{}/{t}", i.answer_format),
            None => i.answer_format.clone(),
        };
        s.templates.insert(template);
        s.instances += 1;
        s.prompt_tokens += u64::from(i.prompt_tokens);
        if i.task == Task::CppUnitTest {
            let pair = self.cpp.entry(i.problem_id.clone()).or_default();
            // The problem record, when read, says what the pair is; the instance adds tokens.
            if pair.source_lines.is_none() {
                pair.repo = i.repo.clone();
                let chunks = i
                    .scoring
                    .get("chunk_count")
                    .and_then(Value::as_u64)
                    .unwrap_or(1);
                pair.chunks = pair.chunks.max(chunks);
                // Every chunk holds the whole test file as its reference.
                pair.test_lines = i.reference.lines().count() as u64;
            }
            *pair.tokens.entry(i.setting.clone()).or_default() += u64::from(i.prompt_tokens);
            pair.judge_only |= i.judge_only().is_some();
        }
    }

    /// Adds a C++ problem (extract's {code, unit test} pair, CPP-UT-Bench's unit of data);
    /// a Python problem says nothing the tables use.
    pub fn add_problem(&mut self, p: &Problem) {
        let Some(cpp) = &p.cpp else { return };
        let pair = self.cpp.entry(p.id.clone()).or_default();
        pair.repo = p.repo.clone();
        pair.chunks = cpp.chunks.len().max(1) as u64;
        pair.test_lines = cpp.unit_test.lines().count() as u64;
        pair.source_lines = Some(cpp.code.lines().count() as u64);
    }

    /// Notes a C++ repository of the manifest and its `domain`, if the manifest gives one.
    pub fn add_repo_domain(&mut self, repo: &str, domain: Option<&str>) {
        self.domains
            .insert(repo.to_string(), domain.map(str::to_string));
    }

    /// Whether any instance was read (Table 2 needs them).
    pub fn has_instances(&self) -> bool {
        !self.by_setting.is_empty()
    }
}

const NO_INSTANCES: &str = "—: statistics of the dataset come from the instances file; pass it with --instances (run results carry neither prompt lengths nor problem ids).";

/// Every paper table clover can fill from `report` and, when given, the instances' `stats`,
/// in the papers' order, each of clover's own tables after the paper table it extends.
pub fn paper_tables(report: &Report, stats: Option<&DatasetStats>) -> Vec<PaperTable> {
    vec![
        table_2(stats),
        table_3(report),
        gap_table(report),
        table_4(report),
        table_5(report),
        task_iii_table(report, "full"),
        table_7(report),
        called_table(report),
        task_iii_table(report, "part"),
        cpp_table_1(stats),
        cpp_figures_2_3(stats),
    ]
}

fn table_2(stats: Option<&DatasetStats>) -> PaperTable {
    let mut t = PaperTable {
        id: "clover-2".into(),
        title: "CLOVER Table 2 — unique examples, templates and mean prompt tokens per task and setting".into(),
        caption: Some("Table 2: Benchmark statistics. Number of unique ex(amples), number of templates and average number of tokens for different settings. Problem Only setting includes only the task instruction without supplementary context. One unique example will be populated into n examples for various settings.".into()),
        columns: ["task", "setting", "unique examples", "templates", "instances", "mean prompt tokens"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
        footnotes: vec![
            "unique examples: distinct problems; templates: distinct answer formats (and Task I prompt templates) asked; instances: clover's addition, the prompts built (unique examples × templates, less those that did not fit); prompt tokens by clover's tokenizer (pack-context --tokenizer), which need not be the paper's.".into(),
        ],
    };
    let mut not_paper = false;
    match stats.filter(|s| s.has_instances()) {
        None => {
            for task in [Task::AssertionCloze, Task::TargetedTest, Task::CoverageTest] {
                t.rows.push(vec![
                    Cell::Text(task_name(task)),
                    Cell::Missing,
                    Cell::Missing,
                    Cell::Missing,
                    Cell::Missing,
                    Cell::Missing,
                ]);
            }
            t.footnotes.push(NO_INSTANCES.into());
        }
        Some(stats) => {
            let mut keys: Vec<&(Task, String)> = stats
                .by_setting
                .keys()
                .filter(|(task, _)| *task != Task::CppUnitTest)
                .collect();
            keys.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| setting_order(&a.1, &b.1)));
            for key in keys {
                let s = &stats.by_setting[key];
                not_paper |= !is_paper_setting(key.0, &key.1);
                t.rows.push(vec![
                    Cell::Text(task_name(key.0)),
                    Cell::Text(setting_label(key.0, &key.1)),
                    Cell::Count(s.problems.len() as u64),
                    Cell::Count(s.templates.len() as u64),
                    Cell::Count(s.instances),
                    Cell::Number(s.prompt_tokens as f64 / s.instances.max(1) as f64),
                ]);
            }
        }
    }
    if not_paper {
        t.footnotes.push(NOT_PAPER_SETTING.into());
    }
    t
}

/// The settings CLOVER builds each task in, as its text states them: Task I "with context
/// lengths spanning 4k to 128k tokens" and problem-only; Task II "the Problem-Only setting
/// and contextual setting from 8k to 64k"; Task III "only ... the contextual setting", 64k
/// and 128k. A column of another setting is clover's addition and is marked ‡.
fn paper_settings(task: Task) -> &'static [&'static str] {
    match task {
        Task::AssertionCloze => &["po", "4k", "8k", "16k", "32k", "64k", "128k"],
        Task::TargetedTest => &["po", "8k", "16k", "32k", "64k"],
        Task::CoverageTest => &["64k", "128k"],
        Task::CppUnitTest => &["po"],
    }
}

fn is_paper_setting(task: Task, setting: &str) -> bool {
    paper_settings(task)
        .iter()
        .any(|s| s.eq_ignore_ascii_case(setting))
}

/// A setting as a column or cell names it: `PO` as the paper writes it, ‡ when the paper
/// does not build the task in it.
fn setting_label(task: Task, setting: &str) -> String {
    let name = if setting.eq_ignore_ascii_case("po") {
        "PO".to_string()
    } else {
        setting.to_string()
    };
    if is_paper_setting(task, setting) {
        name
    } else {
        format!("{name}‡")
    }
}

const NOT_PAPER_SETTING: &str = "‡: clover's addition, a setting CLOVER does not build this task in (pack-context --coverage-po, or --settings): Task I runs in PO and 4k–128k (\"context lengths spanning 4k to 128k tokens\"), Task II in PO and 8k–64k (\"In Task II, we constructed the Problem-Only setting and contextual setting from 8k to 64k\"), Task III in 64k and 128k only (\"In Task III, we only have the contextual setting since it heavily depends on retrieval files\").";
const MISSING_SETTING: &str = "—: the model has no results in that setting (not run, or every result was over its maximum context).";
const PARTIAL: &str = "†: some of the setting's results were over the model's maximum context (generate --max-context); the rate is over the rest, and the setting is in neither Best nor Ctx Util.";

/// The all-repository rows of a task in one answer format (`None`: every format).
fn task_rows<'a>(report: &'a Report, task: Task, format: Option<&str>) -> Vec<&'a Row> {
    report
        .rows
        .iter()
        .filter(|r| r.task == task && r.repo == ALL_REPOS && format.is_none_or(|f| r.format == f))
        .collect()
}

/// The settings of a table's columns: the paper's for the task, and any other the rows hold,
/// in setting order.
fn column_settings<'a>(task: Task, rows: &[&'a Row]) -> Vec<&'a str> {
    let mut settings: Vec<&str> = paper_settings(task).to_vec();
    for r in rows {
        if !settings.iter().any(|s| s.eq_ignore_ascii_case(&r.setting)) {
            settings.push(r.setting.as_str());
        }
    }
    settings.sort_by(|a, b| setting_order(a, b));
    settings
}

/// The maximum context a model was run with (`generate --max-context`, from the
/// responses): on the table's task, else on any task, since it is the model's window; the
/// largest if runs differ.
fn max_context(report: &Report, model: &str, task: Task) -> Option<u32> {
    let of = |same_task: bool| {
        report
            .meta
            .models
            .iter()
            .filter(|m| m.model == model && (!same_task || m.task == task))
            .filter_map(|m| m.generation.max_context)
            .max()
    };
    of(true).or_else(|| of(false))
}

/// The rows' models and answer formats in CLOVER's order: ascending maximum context (the
/// paper's "maximum supported sequence length"), models without one last, then by name.
fn ordered_series<'a>(report: &Report, task: Task, rows: &[&'a Row]) -> Vec<(&'a str, &'a str)> {
    let (_, mut series) = settings_and_series(rows);
    series.sort_by_key(|(model, format)| {
        let max = max_context(report, model, task);
        (max.is_none(), max, *model, *format)
    });
    series
}

/// What the row order is, and where clover cannot follow the paper's.
fn order_footnote(report: &Report, task: Task, series: &[(&str, &str)], paper: &str) -> String {
    let mut models: Vec<&str> = series.iter().map(|s| s.0).collect();
    models.dedup();
    let known: Vec<String> = models
        .iter()
        .filter_map(|m| max_context(report, m, task).map(|n| format!("{m} {n}")))
        .collect();
    let unknown: Vec<&str> = models
        .iter()
        .copied()
        .filter(|m| max_context(report, m, task).is_none())
        .collect();
    let mut s = format!(
        "Rows: models in ascending order of their maximum context in tokens ({paper}), then by name: clover knows neither a model's size nor whether it is open-source."
    );
    if !known.is_empty() {
        let _ = write!(
            s,
            " Maximum context (generate --max-context): {}.",
            known.join(", ")
        );
    }
    if !unknown.is_empty() {
        let _ = write!(
            s,
            " No maximum context recorded for {}, placed last: pass generate's responses with --responses, from a run with --max-context.",
            unknown.join(", ")
        );
    }
    s
}

/// A rate of a model in a setting: "—" without results, † when some were over the model's
/// maximum context; the value when it may count in Best and Ctx Util.
fn rate_cell(
    rows: &[&Row],
    (model, format): (&str, &str),
    setting: &str,
    metric: &str,
) -> (Cell, Option<f64>) {
    let row = rows.iter().find(|r| {
        r.model == model && r.format == format && r.setting.eq_ignore_ascii_case(setting)
    });
    match row.and_then(|r| r.metrics.get(metric).map(|v| (r, *v))) {
        None => (Cell::Missing, None),
        Some((r, v)) if r.over_max_context > 0 => (Cell::Text(format!("{}†", pct(v))), None),
        Some((_, v)) => (Cell::Rate(v), Some(v)),
    }
}

/// The footnotes every result table shares, as its cells call for them.
fn cell_footnotes(t: &mut PaperTable, tasks: &[(Task, &[&str])]) {
    let cells = || t.rows.iter().flatten();
    let missing = cells().any(|c| *c == Cell::Missing);
    let partial = cells().any(|c| matches!(c, Cell::Text(s) if s.ends_with('†')));
    let not_paper = tasks
        .iter()
        .any(|(task, settings)| settings.iter().any(|s| !is_paper_setting(*task, s)));
    if missing {
        t.footnotes.push(MISSING_SETTING.into());
    }
    if partial {
        t.footnotes.push(PARTIAL.into());
    }
    if not_paper {
        t.footnotes.push(NOT_PAPER_SETTING.into());
    }
}

fn no_results(t: &mut PaperTable, what: &str) {
    if t.rows.is_empty() {
        t.footnotes
            .push(format!("No results of {what} in the input."));
    }
}

/// The model column, and the answer format's when the rows hold more than one (Task I's
/// filled line and answer-only templates).
fn series_columns(series: &[(&str, &str)]) -> (Vec<String>, bool) {
    let mut formats: Vec<&str> = series.iter().map(|s| s.1).collect();
    formats.sort_unstable();
    formats.dedup();
    let show = formats.len() > 1;
    let mut columns = vec!["Model".to_string()];
    if show {
        columns.push("format".into());
    }
    (columns, show)
}

fn series_cells((model, format): (&str, &str), show_format: bool) -> Vec<Cell> {
    let mut line = vec![Cell::Text(model.to_string())];
    if show_format {
        line.push(Cell::Text(format.to_string()));
    }
    line
}

const TABLE_3_CAPTION: &str = "Table 3: Model performance on Task I in the Problem-Only setting. Refined execution rate (RER) is the recommended metric which reflects the models’ ability in completing compilable and non-cheating assertion statements. Open source models are organized in ascending order based on their maximum supported length, followed by their model size.";

/// CLOVER Table 3: Task I in problem-only, EM, ER and RER per model.
fn table_3(report: &Report) -> PaperTable {
    let task = Task::AssertionCloze;
    let rows = task_rows(report, task, None);
    let series = ordered_series(report, task, &rows);
    let (mut columns, show_format) = series_columns(&series);
    columns.extend(["EM", "ER", "RER"].map(String::from));
    let mut t = PaperTable {
        id: "clover-3".into(),
        title: "CLOVER Table 3 — Task I (assertion cloze), problem-only: EM, ER and RER".into(),
        caption: Some(TABLE_3_CAPTION.into()),
        columns,
        rows: Vec::new(),
        footnotes: Vec::new(),
    };
    for s in &series {
        let mut line = series_cells(*s, show_format);
        for metric in ["em", "er", "rer"] {
            line.push(rate_cell(&rows, *s, "po", metric).0);
        }
        t.rows.push(line);
    }
    if !series.is_empty() {
        t.footnotes.push(order_footnote(
            report,
            task,
            &series,
            "the paper: \"in ascending order based on their maximum supported length, followed by their model size\"",
        ));
    }
    cell_footnotes(&mut t, &[]);
    no_results(&mut t, "assertion_cloze");
    t
}

const TABLE_4_CAPTION: &str = "Table 4: Refined execution rate (RER) of models in contextual settings for Task I. The table lists models according to their maximum supported sequence length. The Problem-Only (PO) column indicates the baseline performance of models with average short input lengths (0.9k tokens). ‘Best’ highlights the highest performance achieved across both settings (underscored for each model). Ctx Util measures the maximum and minimum performance change when shifting from baseline to contextual inputs.";

/// CLOVER Table 4: Task I RER in PO and every context setting, Best, and context
/// utilization (Δmax, Δmin).
fn table_4(report: &Report) -> PaperTable {
    let task = Task::AssertionCloze;
    let rows = task_rows(report, task, None);
    let series = ordered_series(report, task, &rows);
    let settings = column_settings(task, &rows);
    let (mut columns, show_format) = series_columns(&series);
    columns.extend(settings.iter().map(|s| setting_label(task, s)));
    columns.extend(["Best", "Ctx Util Δmax", "Ctx Util Δmin"].map(String::from));
    let mut t = PaperTable {
        id: "clover-4".into(),
        title: "CLOVER Table 4 — Task I (assertion cloze): RER in the contextual settings, with context utilization".into(),
        caption: Some(TABLE_4_CAPTION.into()),
        columns,
        rows: Vec::new(),
        footnotes: Vec::new(),
    };
    for s in &series {
        let mut line = series_cells(*s, show_format);
        let mut best: Option<f64> = None;
        for setting in &settings {
            let (cell, value) = rate_cell(&rows, *s, setting, "rer");
            if let Some(v) = value {
                best = Some(best.map_or(v, |b| b.max(v)));
            }
            line.push(cell);
        }
        line.push(best.map_or(Cell::Missing, Cell::Rate));
        let util = report
            .utilization
            .iter()
            .find(|u| u.model == s.0 && u.task == task && u.format == s.1 && u.repo == ALL_REPOS);
        line.push(util.map_or(Cell::Missing, |u| Cell::Delta(u.delta_max)));
        line.push(util.map_or(Cell::Missing, |u| Cell::Delta(u.delta_min)));
        t.rows.push(line);
    }
    if !series.is_empty() {
        t.footnotes.push(order_footnote(
            report,
            task,
            &series,
            "the paper: \"The table lists models according to their maximum supported sequence length\"",
        ));
    }
    t.footnotes.push("Best: the highest RER over PO and the context settings. Ctx Util, CLOVER's context utilization: Δmax = max(r_4k, r_8k, …, r_maxLen) − r_PO and Δmin = min(…) − r_PO over the context settings the model ran; — without PO or any context setting.".into());
    cell_footnotes(&mut t, &[(task, &settings)]);
    no_results(&mut t, "assertion_cloze");
    t
}

const TABLE_5_CAPTION: &str = "Table 5: Success rate on Task II and Task III (rightmost two columns). In Task II, we constructed the Problem-Only setting and contextual setting from 8k to 64k. In Task III, we only have the contextual setting since it heavily depends on retrieval files.";

/// CLOVER Table 5: the success rate of Task II and, in the rightmost columns, of Task III,
/// both in answer format `full` ("We report the Success Rate using prompt_full in Table 5").
fn table_5(report: &Report) -> PaperTable {
    let ii = task_rows(report, Task::TargetedTest, Some("full"));
    let iii = task_rows(report, Task::CoverageTest, Some("full"));
    let ii_settings = column_settings(Task::TargetedTest, &ii);
    let iii_settings = column_settings(Task::CoverageTest, &iii);
    let both: Vec<&Row> = ii.iter().chain(&iii).copied().collect();
    let series = ordered_series(report, Task::TargetedTest, &both);
    let mut columns = vec!["Model".to_string()];
    columns.extend(
        ii_settings
            .iter()
            .map(|s| format!("Task II {}", setting_label(Task::TargetedTest, s))),
    );
    columns.extend(
        iii_settings
            .iter()
            .map(|s| format!("Task III {}", setting_label(Task::CoverageTest, s))),
    );
    let mut t = PaperTable {
        id: "clover-5".into(),
        title: "CLOVER Table 5 — success rate of Task II (targeted test) and Task III (coverage test), answer format full".into(),
        caption: Some(TABLE_5_CAPTION.into()),
        columns,
        rows: Vec::new(),
        footnotes: Vec::new(),
    };
    for s in &series {
        let mut line = vec![Cell::Text(s.0.to_string())];
        for setting in &ii_settings {
            line.push(rate_cell(&ii, *s, setting, "success_rate").0);
        }
        for setting in &iii_settings {
            line.push(rate_cell(&iii, *s, setting, "success_rate").0);
        }
        t.rows.push(line);
    }
    if !series.is_empty() {
        t.footnotes.push(order_footnote(
            report,
            Task::TargetedTest,
            &series,
            "as Tables 3 and 4; the paper's text states none for this table",
        ));
    }
    t.footnotes.push("Task II success: the test passes and the model's own code names the target (\"we check whether the required target was in the generated code\"); Task III success: it passes and covers every required line of every block (\"we only consider it a success if all of the code blocks’ coverage requirements are satisfied\").".into());
    cell_footnotes(
        &mut t,
        &[
            (Task::TargetedTest, &ii_settings),
            (Task::CoverageTest, &iii_settings),
        ],
    );
    no_results(
        &mut t,
        "targeted_test or coverage_test in answer format full",
    );
    t
}

/// CLOVER Tables 6 and 8: Task III's success and execution rate in each setting.
fn task_iii_table(report: &Report, format: &str) -> PaperTable {
    let head = if format == "full" {
        (
            "clover-6",
            "CLOVER Table 6 — Task III (coverage test), answer format full: success and execution rate",
            "Table 6: Success rate and execution rate of models on Task III",
        )
    } else {
        (
            "clover-8",
            "CLOVER Table 8 — Task III (coverage test), answer format part: success and execution rate",
            "Table 8: Success rate and execution rate of Task III with prompt_part",
        )
    };
    settings_table(
        report,
        Task::CoverageTest,
        format,
        head,
        &[("success_rate", " success rate"), ("execution_rate", " execution rate")],
        &["Execution rate: the test passes (\"Any test failures, exceptions and timeout will count as execution failure\"); success rate: it passes and covers every required line of every block. The gap between them is what the coverage requirement costs."],
    )
}

/// CLOVER Table 7: Task II's success rate in answer format `part`.
fn table_7(report: &Report) -> PaperTable {
    settings_table(
        report,
        Task::TargetedTest,
        "part",
        (
            "clover-7",
            "CLOVER Table 7 — Task II (targeted test), answer format part: success rate",
            "Table 7: Success Rate of Task II with prompt_part",
        ),
        &[("success_rate", "")],
        &[],
    )
}

/// A table of one task in answer format `format`: a row per model, for each setting a column
/// per metric (`metrics`: the metric and what its column adds to the setting's label), the
/// models' order and `notes` said under it.
fn settings_table(
    report: &Report,
    task: Task,
    format: &str,
    (id, title, caption): (&str, &str, &str),
    metrics: &[(&str, &str)],
    notes: &[&str],
) -> PaperTable {
    let rows = task_rows(report, task, Some(format));
    let settings = column_settings(task, &rows);
    let series = ordered_series(report, task, &rows);
    let mut columns = vec!["Model".to_string()];
    for s in &settings {
        let label = setting_label(task, s);
        columns.extend(metrics.iter().map(|(_, suffix)| format!("{label}{suffix}")));
    }
    let mut t = PaperTable {
        id: id.into(),
        title: title.into(),
        caption: Some(caption.into()),
        columns,
        rows: Vec::new(),
        footnotes: Vec::new(),
    };
    for s in &series {
        let mut line = vec![Cell::Text(s.0.to_string())];
        for setting in &settings {
            for (metric, _) in metrics {
                line.push(rate_cell(&rows, *s, setting, metric).0);
            }
        }
        t.rows.push(line);
    }
    if !series.is_empty() {
        t.footnotes.push(order_footnote(
            report,
            task,
            &series,
            "as Tables 3 and 4; the paper's text states none for this table",
        ));
    }
    t.footnotes.extend(notes.iter().map(|n| n.to_string()));
    cell_footnotes(&mut t, &[(task, &settings)]);
    no_results(
        &mut t,
        &format!("{} in answer format {format}", task_name(task)),
    );
    t
}

/// clover's own: Task II's called rate, a stricter success than the paper's, in both answer
/// formats. No table of the paper holds it.
fn called_table(report: &Report) -> PaperTable {
    let task = Task::TargetedTest;
    let rows = task_rows(report, task, None);
    let settings = column_settings(task, &rows);
    let series = ordered_series(report, task, &rows);
    let mut columns = vec!["Model".to_string(), "format".to_string()];
    columns.extend(settings.iter().map(|s| setting_label(task, s)));
    let mut t = PaperTable {
        id: "clover-called".into(),
        title: "clover's addition (not a table of the paper) — Task II (targeted test): called rate".into(),
        caption: None,
        columns,
        rows: Vec::new(),
        footnotes: vec!["called rate: a success (the paper's reading) that also ran a line of the target beyond what importing its module runs, so `assert callable(X)` is not one.".into()],
    };
    for s in &series {
        let mut line = series_cells(*s, true);
        for setting in &settings {
            line.push(rate_cell(&rows, *s, setting, "called_rate").0);
        }
        t.rows.push(line);
    }
    cell_footnotes(&mut t, &[(task, &settings)]);
    no_results(&mut t, "targeted_test");
    t
}

/// CLOVER §4.1: EM against RER, and how long predictions are against references.
fn gap_table(report: &Report) -> PaperTable {
    let show_format = report.gap.iter().any(|g| !g.format.is_empty());
    let mut columns = vec!["model".to_string()];
    if show_format {
        columns.push("format".into());
    }
    columns.extend(
        [
            "setting",
            "n",
            "EM",
            "RER",
            "RER − EM",
            "RER, not EM",
            "EM, not RER",
            "prediction chars (mean)",
            "reference chars (mean)",
            "longer than reference",
            "shorter than reference",
        ]
        .map(String::from),
    );
    let mut gap: Vec<&crate::report::Gap> = report.gap.iter().collect();
    gap.sort_by(|a, b| {
        (&a.model, &a.format)
            .cmp(&(&b.model, &b.format))
            .then_with(|| setting_order(&a.setting, &b.setting))
    });
    let rows = gap
        .into_iter()
        .map(|g| {
            let n = g.n.max(1) as f64;
            let p = g.predictions.max(1) as f64;
            let mut line = vec![Cell::Text(g.model.clone())];
            if show_format {
                line.push(Cell::Text(g.format.clone()));
            }
            // A share of the predictions read, or "—" when none could be read.
            let per_prediction = |k: u64, cell: fn(f64) -> Cell| {
                if g.predictions > 0 {
                    cell(k as f64 / p)
                } else {
                    Cell::Missing
                }
            };
            line.extend([
                Cell::Text(setting_label(Task::AssertionCloze, &g.setting)),
                Cell::Count(g.n),
                Cell::Rate(g.em as f64 / n),
                Cell::Rate(g.rer as f64 / n),
                Cell::Delta((g.rer as f64 - g.em as f64) / n),
                Cell::Rate(g.rer_not_em as f64 / n),
                Cell::Rate(g.em_not_rer as f64 / n),
                per_prediction(g.prediction_chars, Cell::Number),
                per_prediction(g.reference_chars, Cell::Number),
                per_prediction(g.longer, Cell::Rate),
                per_prediction(g.shorter, Cell::Rate),
            ]);
            line
        })
        .collect();
    PaperTable {
        id: "clover-gap".into(),
        title: "CLOVER §4.1 (clover's table, not one of the paper's) — the gap between EM and RER in Task I".into(),
        caption: Some("§4.1: \"Gap between EM and (R)ER We analyzed instances where predictions were successful in terms of RER but failed under the exact match (EM) criteria. The model’s predictions averaged 25.8 characters compared to 30.7 characters in ground truth answers, suggesting a tendency toward brevity or shortcuts.\" The paper gives these numbers in its text; the table is clover's.".into()),
        columns,
        rows,
        footnotes: vec![
            "Rates over the results with an answer (API errors aside). RER, not EM: correct by execution and not trivial, yet not the reference's text (EM's underestimate); EM, not RER: the reference's text in a trivial assertion, or a candidate that did not pass.".into(),
            "Lengths in characters of the whitespace-normal form EM compares, over the results from which a prediction could be read; —: no prediction could be read.".into(),
        ],
    }
}

const CPP_TABLE_1_CAPTION: &str = "Table 1: Domain diversity of CPP-UT-Bench.";

/// CPP-UT-Bench Table 1: the domain of each codebase, from the manifest's `domain` fields.
fn cpp_table_1(stats: Option<&DatasetStats>) -> PaperTable {
    let mut t = PaperTable {
        id: "cpp-1".into(),
        title: "CPP-UT-Bench Table 1 — the domain of each C++ codebase".into(),
        caption: Some(CPP_TABLE_1_CAPTION.into()),
        columns: ["Repository", "Domain"].map(String::from).to_vec(),
        rows: Vec::new(),
        footnotes: Vec::new(),
    };
    let mut repos: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    if let Some(stats) = stats {
        for (repo, domain) in &stats.domains {
            repos.insert(repo, domain.as_deref());
        }
        for pair in stats.cpp.values() {
            repos.entry(pair.repo.as_str()).or_insert(None);
        }
    }
    for (repo, domain) in &repos {
        t.rows.push(vec![
            Cell::Text(repo.to_string()),
            domain.map_or(Cell::Missing, |d| Cell::Text(d.to_string())),
        ]);
    }
    if repos.is_empty() {
        t.footnotes.push("No C++ repositories: pass the manifest (--manifest), extract's problems (--problems) or pack-context's instances (--instances).".into());
    }
    if repos.values().any(Option::is_none) {
        t.footnotes.push("—: no domain for the repository: give it one in its [[repo]] table of clover.toml (domain = \"…\") and pass the manifest with --manifest. The paper's text names its nine domains (\"machine learning, data engineering, software testing, telecommunications, key-value storage, server protocol, geolocation, concurrency, and application logging\") but not which codebase has which, so clover does not guess.".into());
    }
    t
}

/// The data of CPP-UT-Bench's Figs. 2–3 as a table: pairs per repository (Fig. 2) and the
/// line lengths of their code and unit tests (Fig. 3), with clover's chunks and tokens.
fn cpp_figures_2_3(stats: Option<&DatasetStats>) -> PaperTable {
    let mut t = PaperTable {
        id: "cpp-fig-2-3".into(),
        title: "CPP-UT-Bench Figs. 2–3 (their data as a table) — {code, unit test} pairs per repository and their line lengths".into(),
        caption: Some("Figure 2: Data distribution of CPP-UT-Bench from 14 different GitHub Repositories. Figure 3: The diversity in {code, unit test} pairs in terms of line lengths across 14 different opensource repositories in CPP-UT-Bench.".into()),
        columns: [
            "repository",
            "pairs",
            "chunked files",
            "chunks",
            "source lines (mean)",
            "source lines (median)",
            "source lines (max)",
            "test lines (mean)",
            "test lines (median)",
            "test lines (max)",
            "prompt tokens per pair (mean)",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
        footnotes: vec![
            "pairs: Fig. 2; source and test lines: Fig. 3; chunked files, chunks and prompt tokens: clover's additions. Lines of the comment-stripped source and test file from extract's problem records (--problems); without them, test lines come from the instances' references. A chunked file is a source split into more than one prompt (pack-context --chunk-lines); prompt tokens per pair sum a pair's chunks in one setting, averaged over pairs and settings, by clover's tokenizer.".into(),
        ],
    };
    let pairs: Vec<&CppPair> = stats.map(|s| s.cpp.values().collect()).unwrap_or_default();
    if pairs.is_empty() {
        t.footnotes.push("No C++ pairs: pass extract's problems (--problems) or pack-context's instances (--instances).".into());
    }
    if pairs.iter().any(|p| p.source_lines.is_none()) {
        t.footnotes.push("source lines: — for pairs known only from instances, which carry the source inside the prompt text (chunked, with context), not as a line count; pass --problems.".into());
    }
    let judge_only = pairs.iter().filter(|p| p.judge_only).count();
    if judge_only > 0 {
        t.footnotes.push(format!(
            "{judge_only} of the pairs are judge-only (pack-context --judge-only-excluded): calibrate could not run their ground truth, so they have prompts and judge scores but no execution metrics. They are counted here, as CPP-UT-Bench samples its pairs with no execution filter."
        ));
    }
    if pairs.iter().any(|p| p.tokens.is_empty()) {
        t.footnotes.push(
            "prompt tokens: over the pairs with instances; — when none has (pass --instances)."
                .into(),
        );
    }
    let mut by_repo: BTreeMap<&str, Vec<&CppPair>> = BTreeMap::new();
    for p in &pairs {
        by_repo.entry(p.repo.as_str()).or_default().push(p);
    }
    let line = |name: &str, group: &[&CppPair]| {
        let tokens: Vec<u64> = group
            .iter()
            .flat_map(|p| p.tokens.values().copied())
            .collect();
        let sources: Vec<u64> = group.iter().filter_map(|p| p.source_lines).collect();
        let tests: Vec<u64> = group.iter().map(|p| p.test_lines).collect();
        let mut row = vec![
            Cell::Text(name.into()),
            Cell::Count(group.len() as u64),
            Cell::Count(group.iter().filter(|p| p.chunks > 1).count() as u64),
            Cell::Count(group.iter().map(|p| p.chunks).sum()),
        ];
        row.extend(summary(sources));
        row.extend(summary(tests));
        row.push(if tokens.is_empty() {
            Cell::Missing
        } else {
            Cell::Number(tokens.iter().sum::<u64>() as f64 / tokens.len() as f64)
        });
        row
    };
    for (repo, group) in &by_repo {
        t.rows.push(line(repo, group));
    }
    if by_repo.len() > 1 {
        t.rows.push(line("all", &pairs));
    }
    t
}

/// Mean, median and maximum of `values`, or three "—" when there are none.
fn summary(mut values: Vec<u64>) -> [Cell; 3] {
    if values.is_empty() {
        return [Cell::Missing, Cell::Missing, Cell::Missing];
    }
    values.sort_unstable();
    [
        Cell::Number(values.iter().sum::<u64>() as f64 / values.len() as f64),
        Cell::Number(median(&values)),
        Cell::Count(*values.last().expect("non-empty")),
    ]
}

fn median(sorted: &[u64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2] as f64,
        n => (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0,
    }
}

/// The tables as Markdown, each with its footnotes.
pub fn paper_markdown(tables: &[PaperTable]) -> String {
    let mut s = String::new();
    for t in tables {
        let _ = writeln!(s, "## {}\n", t.title);
        if let Some(caption) = &t.caption {
            let _ = writeln!(s, "> The paper's caption: {caption}\n");
        }
        let _ = writeln!(s, "| {} |", t.columns.join(" | "));
        let align: Vec<&str> = (0..t.columns.len())
            .map(|i| {
                // "—" says nothing of the column's kind: a column of text with gaps stays
                // left-aligned.
                let numeric = |c: &Cell| c.numeric() && *c != Cell::Missing;
                if t.rows.iter().any(|r| r.get(i).is_some_and(numeric)) {
                    "---:"
                } else {
                    "---"
                }
            })
            .collect();
        let _ = writeln!(s, "|{}|", align.join("|"));
        for r in &t.rows {
            let cells: Vec<String> = r.iter().map(Cell::text).collect();
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        s.push('\n');
        for f in &t.footnotes {
            let _ = writeln!(s, "{f}\n");
        }
    }
    s
}

/// The tables as JSON: `{"tables":[{"id","title","caption","columns","rows","footnotes"}]}`,
/// a missing number as `null` (a caption too, for clover's own tables), rates as fractions.
pub fn paper_json(tables: &[PaperTable], report: &Report) -> Value {
    json!({
        "tables": tables.iter().map(|t| json!({
            "id": t.id,
            "title": t.title,
            "caption": t.caption,
            "columns": t.columns,
            "rows": t.rows.iter()
                .map(|r| r.iter().map(Cell::json).collect::<Vec<_>>())
                .collect::<Vec<_>>(),
            "footnotes": t.footnotes,
        })).collect::<Vec<_>>(),
        "metadata": crate::report::metadata_json(&report.meta),
    })
}

/// The tables as one self-contained HTML page, with CPP-UT-Bench's Figs. 2–3 as SVG charts
/// when the instances hold C++ pairs.
pub fn paper_html(tables: &[PaperTable], report: &Report, stats: Option<&DatasetStats>) -> String {
    let mut s = html_head("clover: the papers' tables");
    s.push_str(&metadata_html(&report.meta));
    for t in tables {
        let _ = writeln!(
            s,
            "<section class=\"paper-table\" id=\"{}\"><h2>{}</h2>\n<table><thead><tr>",
            esc(&t.id),
            esc(&t.title)
        );
        if let Some(caption) = &t.caption {
            let _ = writeln!(
                s,
                "<p class=\"caption\">The paper's caption: {}</p>",
                esc(caption)
            );
        }
        for c in &t.columns {
            let _ = write!(s, "<th>{}</th>", esc(c));
        }
        s.push_str("</tr></thead><tbody>\n");
        for r in &t.rows {
            s.push_str("<tr>");
            for c in r {
                if c.numeric() {
                    let _ = write!(s, "<td class=\"num\">{}</td>", esc(&c.text()));
                } else {
                    let _ = write!(s, "<td>{}</td>", esc(&c.text()));
                }
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody></table>\n");
        for f in &t.footnotes {
            let _ = writeln!(s, "<p class=\"legend\">{}</p>", esc(f));
        }
        s.push_str("</section>\n");
    }
    let pairs: Vec<&CppPair> = stats.map(|s| s.cpp.values().collect()).unwrap_or_default();
    if !pairs.is_empty() {
        let mut per_repo: BTreeMap<&str, u64> = BTreeMap::new();
        for p in &pairs {
            *per_repo.entry(p.repo.as_str()).or_default() += 1;
        }
        let bars: Vec<(String, u64)> = per_repo
            .into_iter()
            .map(|(r, n)| (r.to_string(), n))
            .collect();
        let _ = writeln!(
            s,
            "<section id=\"cpp-figures\"><h2>CPP-UT-Bench Figs. 2–3</h2>\n<figure>{}<figcaption>Fig. 2: {{code, unit test}} pairs per repository.</figcaption></figure>",
            bar_chart("cpp-pairs", "pairs", &bars)
        );
        let sources: Vec<u64> = pairs.iter().filter_map(|p| p.source_lines).collect();
        if sources.is_empty() {
            s.push_str("<p class=\"note\">The distribution of source lengths needs extract's problem records (--problems): instances carry no line count of the source.</p>\n");
        } else {
            let _ = writeln!(
                s,
                "<figure>{}<figcaption>Fig. 3: the distribution of source lengths (lines per source file, comments stripped).</figcaption></figure>",
                bar_chart("cpp-source-lines", "source files", &histogram(&sources))
            );
        }
        let lines: Vec<u64> = pairs.iter().map(|p| p.test_lines).collect();
        let _ = writeln!(
            s,
            "<figure>{}<figcaption>Fig. 3: the distribution of unit-test lengths (lines per test file).</figcaption></figure></section>",
            bar_chart("cpp-test-lines", "test files", &histogram(&lines))
        );
    }
    s.push_str("</body></html>\n");
    s
}

/// Counts of `values` in ten equal bins from 0 past the largest, labelled by their ranges.
fn histogram(values: &[u64]) -> Vec<(String, u64)> {
    let max = values.iter().copied().max().unwrap_or(0);
    // Wide enough that the largest value falls in the last bin, not past it.
    let width = max / 10 + 1;
    let mut bins = vec![0u64; 10];
    for v in values {
        bins[((v / width) as usize).min(9)] += 1;
    }
    bins.into_iter()
        .enumerate()
        .map(|(i, n)| {
            let lo = i as u64 * width;
            (format!("{lo}–{}", lo + width - 1), n)
        })
        .collect()
}

/// An SVG bar chart of labelled counts.
fn bar_chart(id: &str, y_label: &str, bars: &[(String, u64)]) -> String {
    let (w, h) = (640.0, 300.0);
    let (left, right, top, bottom) = (56.0, 20.0, 20.0, 70.0);
    let pw = w - left - right;
    let ph = h - top - bottom;
    let max = bars.iter().map(|b| b.1).max().unwrap_or(0).max(1) as f64;
    let slot = pw / bars.len().max(1) as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="plot bars" id="{id}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{y}">"##,
        id = esc(id),
        y = esc(y_label)
    );
    let _ = write!(
        s,
        r##"<line x1="{left}" x2="{x2}" y1="{y0}" y2="{y0}" stroke="#888"/><text x="{left}" y="{ty}" font-size="11" text-anchor="end">{max}</text><text x="14" y="{my:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {my:.1})">{label}</text>"##,
        x2 = left + pw,
        y0 = top + ph,
        ty = top + 4.0,
        max = max as u64,
        my = top + ph / 2.0,
        label = esc(y_label)
    );
    for (i, (label, n)) in bars.iter().enumerate() {
        let bh = ph * *n as f64 / max;
        let x = left + slot * i as f64 + slot * 0.1;
        let _ = write!(
            s,
            r##"<rect class="bar" data-label="{l}" data-count="{n}" x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{bh:.1}" fill="#1f77b4"/><text x="{cx:.1}" y="{ly:.1}" font-size="10" text-anchor="end" transform="rotate(-40 {cx:.1} {ly:.1})">{l}</text>"##,
            l = esc(label),
            y = top + ph - bh,
            bw = slot * 0.8,
            cx = x + slot * 0.4,
            ly = top + ph + 14.0
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scorer;
    use clover_protocol::{RunResult, SCHEMA_VERSION};

    fn result(
        model: &str,
        task: &str,
        format: &str,
        setting: &str,
        passed: bool,
        scoring: Value,
    ) -> RunResult {
        let mut scoring = scoring;
        scoring["answer_format"] = json!(format);
        serde_json::from_value(json!({
            "kind": "run_result", "schema_version": SCHEMA_VERSION,
            "id": format!("i#{task}#{setting}#{format}@{model}"),
            "instance_id": "i", "model": model, "task": task,
            "setting": setting, "repo": "r",
            "outcome": if passed { "passed" } else { "failed" },
            "tests": [], "coverage": [], "limit_hit": null, "exit_code": 0, "signal": null,
            "candidate": null, "answer": scoring.get("answer").cloned().unwrap_or(Value::Null),
            "message": null, "stdout_tail": "", "stderr_tail": "",
            "scoring": scoring, "duration_secs": 0.0
        }))
        .unwrap()
    }

    fn cloze(model: &str, setting: &str, answer: &str, passed: bool) -> RunResult {
        result(
            model,
            "assertion_cloze",
            "line",
            setting,
            passed,
            json!({
            "reference": "total", "form": "binary", "operator": "==",
            "other_operand": "ledger.total()", "answer": answer}),
        )
    }

    fn instance(
        task: &str,
        problem: &str,
        setting: &str,
        format: &str,
        tokens: u32,
        extra: Value,
    ) -> Instance {
        let mut scoring = json!({"answer_format": format});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                scoring[k] = v;
            }
        }
        serde_json::from_value(json!({
            "kind": "instance", "schema_version": SCHEMA_VERSION,
            "id": format!("{problem}#{setting}#{format}"), "problem_id": problem,
            "repo": if task == "cpp_unit_test" { "snappy" } else { "r" },
            "task": task, "setting": setting, "answer_format": format, "prompt": "p",
            "messages": [], "prompt_tokens": tokens, "context_files": [],
            "reference": "TEST(A, B) {\n  EXPECT_TRUE(x);\n}\n",
            "exec": {"repo": "r", "language": null, "candidate_path": "t.py", "prefix": "",
                "suffix": "", "selectors": []},
            "scoring": scoring
        }))
        .unwrap()
    }

    fn fixture() -> Report {
        let mut scorer = Scorer::new(false);
        // Task I: m1 gets EM at 8k only; at PO it passes with another expression (RER, not EM).
        scorer.add(&cloze("m1", "po", "ledger.sum()", true));
        scorer.add(&cloze("m1", "po", "total", false));
        scorer.add(&cloze("m1", "8k", "total", true));
        scorer.add(&cloze("m1", "8k", "total", true));
        // m2 was run at PO only.
        scorer.add(&cloze("m2", "po", "total", true));
        let target = json!({"target": {"name": "Ledger", "path": "a.py", "start_line": 1, "end_line": 3},
            "answer": "Ledger()"});
        scorer.add(&result(
            "m1",
            "targeted_test",
            "part",
            "po",
            true,
            target.clone(),
        ));
        scorer.add(&result(
            "m1",
            "targeted_test",
            "part",
            "16k",
            false,
            target.clone(),
        ));
        scorer.add(&result("m1", "targeted_test", "full", "po", true, target));
        scorer.add(&result(
            "m1",
            "coverage_test",
            "full",
            "po",
            false,
            json!({"blocks": []}),
        ));
        scorer.report()
    }

    fn table<'a>(tables: &'a [PaperTable], id: &str) -> &'a PaperTable {
        tables.iter().find(|t| t.id == id).unwrap()
    }

    fn texts(t: &PaperTable) -> Vec<Vec<String>> {
        t.rows
            .iter()
            .map(|r| r.iter().map(Cell::text).collect())
            .collect()
    }

    /// Table 3 is Task I in problem-only; Table 4 its RER in every setting, the paper's
    /// columns present even when not run, with Best and context utilization.
    #[test]
    fn task_i_tables_3_and_4() {
        let tables = paper_tables(&fixture(), None);
        let t3 = table(&tables, "clover-3");
        assert_eq!(t3.columns, ["Model", "EM", "ER", "RER"]);
        assert_eq!(
            texts(t3),
            [
                ["m1", "50.0", "50.0", "50.0"],
                ["m2", "100.0", "100.0", "100.0"]
            ]
        );
        assert!(t3
            .caption
            .as_deref()
            .unwrap()
            .starts_with("Table 3: Model performance on Task I in the Problem-Only setting."));
        let t4 = table(&tables, "clover-4");
        assert_eq!(
            t4.columns,
            [
                "Model",
                "PO",
                "4k",
                "8k",
                "16k",
                "32k",
                "64k",
                "128k",
                "Best",
                "Ctx Util Δmax",
                "Ctx Util Δmin"
            ]
        );
        assert_eq!(
            texts(t4),
            [
                [
                    "m1", "50.0", "—", "100.0", "—", "—", "—", "—", "100.0", "+50.0", "+50.0"
                ],
                ["m2", "100.0", "—", "—", "—", "—", "—", "—", "100.0", "—", "—"],
            ]
        );
        assert!(t4.footnotes.iter().any(|f| f.starts_with("—: the model")));
        assert!(t4
            .footnotes
            .iter()
            .any(|f| f.contains("No maximum context recorded for m1, m2")));
    }

    /// Models go in ascending order of the maximum context generate ran them with; a model
    /// without one goes last, and the footnote says which.
    #[test]
    fn rows_follow_the_maximum_context() {
        let mut report = fixture();
        let mut meta = |model: &str, max: Option<u32>| {
            report.meta.models.push(crate::ModelMeta {
                model: model.into(),
                task: Task::AssertionCloze,
                generation: clover_protocol::Generation {
                    max_context: max,
                    ..Default::default()
                },
            })
        };
        meta("m2", Some(8192));
        meta("m1", None);
        let tables = paper_tables(&report, None);
        let t3 = table(&tables, "clover-3");
        assert_eq!(texts(t3)[0][0], "m2");
        assert_eq!(texts(t3)[1][0], "m1");
        let order = &t3.footnotes[0];
        assert!(
            order.contains("m2 8192") && order.contains("No maximum context recorded for m1"),
            "{order}"
        );
    }

    /// Table 5: Task II and III success in `full`; Task III's PO is clover's addition (‡).
    /// Table 6: Task III success and execution rate; Table 7: Task II `part` success;
    /// Table 8: Task III `part`; the called rate is a table of clover's own.
    #[test]
    fn task_ii_and_iii_tables_5_to_8() {
        let tables = paper_tables(&fixture(), None);
        let t5 = table(&tables, "clover-5");
        assert_eq!(
            t5.columns,
            [
                "Model",
                "Task II PO",
                "Task II 8k",
                "Task II 16k",
                "Task II 32k",
                "Task II 64k",
                "Task III PO‡",
                "Task III 64k",
                "Task III 128k"
            ]
        );
        assert_eq!(
            texts(t5),
            [["m1", "100.0", "—", "—", "—", "—", "0.0", "—", "—"]]
        );
        assert!(t5
            .footnotes
            .iter()
            .any(|f| f.starts_with("‡: clover's addition")));
        let t6 = table(&tables, "clover-6");
        assert_eq!(
            t6.columns,
            [
                "Model",
                "PO‡ success rate",
                "PO‡ execution rate",
                "64k success rate",
                "64k execution rate",
                "128k success rate",
                "128k execution rate"
            ]
        );
        assert_eq!(texts(t6), [["m1", "0.0", "0.0", "—", "—", "—", "—"]]);
        let t7 = table(&tables, "clover-7");
        assert_eq!(t7.columns, ["Model", "PO", "8k", "16k", "32k", "64k"]);
        assert_eq!(texts(t7), [["m1", "100.0", "—", "0.0", "—", "—"]]);
        assert!(!t7.footnotes.iter().any(|f| f.starts_with("‡")));
        // No Task III part results: the table is there, empty, and says why.
        let t8 = table(&tables, "clover-8");
        assert!(t8.rows.is_empty());
        assert!(t8
            .footnotes
            .iter()
            .any(|f| f.contains("No results of coverage_test in answer format part")));
        // The called rate is in no paper-numbered table.
        for t in tables.iter().filter(|t| t.caption.is_some()) {
            assert!(!t.columns.iter().any(|c| c.contains("called")), "{}", t.id);
        }
        let called = table(&tables, "clover-called");
        assert!(called.caption.is_none() && called.title.contains("not a table of the paper"));
        // The fixture's results cover no line of the target: passing and naming it is a
        // success, not a call.
        assert_eq!(
            texts(called),
            [
                ["m1", "full", "0.0", "—", "—", "—", "—"],
                ["m1", "part", "0.0", "—", "0.0", "—", "—"]
            ]
        );
    }

    #[test]
    fn em_rer_gap() {
        let tables = paper_tables(&fixture(), None);
        let t = table(&tables, "clover-gap");
        assert_eq!(
            texts(t)[0],
            [
                "m1", "line", "PO", "2", "50.0", "50.0", "+0.0", "50.0", "50.0", "8.5", "5.0",
                "50.0", "0.0"
            ]
        );
    }

    /// Without instances the statistics are "—" with the reason; with them they are counted.
    #[test]
    fn dataset_statistics_from_instances() {
        let report = fixture();
        let tables = paper_tables(&report, None);
        let t2 = table(&tables, "clover-2");
        assert!(texts(t2).iter().all(|r| r[1..].iter().all(|c| c == "—")));
        assert!(t2.footnotes.iter().any(|f| f.contains("--instances")));
        let md = paper_markdown(&tables);
        assert!(
            md.contains("| assertion_cloze | — | — | — | — | — |"),
            "{md}"
        );

        let mut stats = DatasetStats::default();
        for (p, setting, tokens) in [("p1", "po", 100), ("p2", "po", 300), ("p1", "8k", 7000)] {
            stats.add(&instance(
                "assertion_cloze",
                p,
                setting,
                "line",
                tokens,
                json!({"template": "filled"}),
            ));
        }
        stats.add(&instance(
            "assertion_cloze",
            "p1",
            "po",
            "operand",
            90,
            json!({"template": "answer_only"}),
        ));
        for (p, chunk, count) in [("s/a.cc", 0, 2), ("s/a.cc", 1, 2), ("s/b.cc", 0, 1)] {
            let mut scoring = json!({"chunk_index": chunk, "chunk_count": count});
            if p == "s/b.cc" {
                scoring["judge_only"] = json!("failed");
            }
            stats.add(&instance("cpp_unit_test", p, "po", "file", 1000, scoring));
        }
        let tables = paper_tables(&report, Some(&stats));
        assert_eq!(
            texts(table(&tables, "clover-2")),
            [
                ["assertion_cloze", "PO", "2", "2", "3", "163.3"],
                ["assertion_cloze", "8k", "1", "1", "1", "7000.0"],
            ]
        );
        let cpp = table(&tables, "cpp-fig-2-3");
        assert_eq!(
            texts(cpp),
            [["snappy", "2", "1", "3", "—", "—", "—", "3.0", "3.0", "3", "1500.0"]]
        );
        // Without the manifest a repository's domain is "—", and the footnote says why.
        let t1 = table(&tables, "cpp-1");
        assert_eq!(texts(t1), [["snappy", "—"]]);
        assert!(t1.footnotes.iter().any(|f| f.contains("--manifest")));
        assert!(cpp.footnotes.iter().any(|f| f.contains("pass --problems")));
        assert!(
            cpp.footnotes
                .iter()
                .any(|f| f.starts_with("1 of the pairs are judge-only")),
            "{:?}",
            cpp.footnotes
        );
        let html = paper_html(&tables, &report, Some(&stats));
        assert!(html.contains("id=\"cpp-pairs\"") && html.contains("id=\"cpp-test-lines\""));
        assert!(
            html.contains("data-label=\"snappy\" data-count=\"2\""),
            "{html}"
        );
        let json = paper_json(&tables, &report);
        assert_eq!(json["tables"][0]["id"], "clover-2");
        assert_eq!(json["tables"].as_array().unwrap().len(), 11);
    }

    fn cpp_problem(
        id: &str,
        repo: &str,
        code_lines: usize,
        test_lines: usize,
        chunks: u32,
    ) -> Problem {
        let span = json!({"start_line": 1, "end_line": 1, "start_byte": 0, "end_byte": 0});
        serde_json::from_value(json!({
            "kind": "problem", "schema_version": SCHEMA_VERSION, "id": id, "repo": repo,
            "language": "cpp", "python": null,
            "cpp": {"file_name": "a.cc", "file_path": "src/a.cc", "test_path": "t/a_test.cc",
                "header_path": null, "code": "int x;\n".repeat(code_lines),
                "unit_test": "TEST(A, B) {}\n".repeat(test_lines), "tests": [],
                "chunks": (0..chunks).map(|i| json!({"index": i, "span": span, "code": ""}))
                    .collect::<Vec<_>>()}
        }))
        .unwrap()
    }

    /// Extract's problems give CPP-UT-Bench's source and test lengths (the instances, tokens,
    /// and their three-line references do not override the problems' test files): Table 1 per
    /// repository and over all, and Fig. 3's source histogram.
    #[test]
    fn cpp_table_1_from_problems_and_instances() {
        let mut stats = DatasetStats::default();
        stats.add_problem(&cpp_problem("s/a.cc", "snappy", 300, 40, 2));
        stats.add_problem(&cpp_problem("s/b.cc", "snappy", 100, 20, 1));
        stats.add_problem(&cpp_problem("y/c.cc", "yaml", 50, 10, 1));
        stats.add(&instance(
            "cpp_unit_test",
            "s/a.cc",
            "po",
            "file",
            900,
            json!({"chunk_count": 2}),
        ));
        stats.add(&instance(
            "cpp_unit_test",
            "s/a.cc",
            "po",
            "file",
            700,
            json!({"chunk_count": 2}),
        ));
        stats.add_repo_domain("yaml", Some("parsing"));
        let report = fixture();
        let tables = paper_tables(&report, Some(&stats));
        assert_eq!(
            texts(table(&tables, "cpp-1")),
            [["snappy", "—"], ["yaml", "parsing"]]
        );
        assert_eq!(
            texts(table(&tables, "cpp-fig-2-3")),
            [
                [
                    "snappy", "2", "1", "3", "200.0", "200.0", "300", "30.0", "30.0", "40",
                    "1600.0"
                ],
                ["yaml", "1", "0", "1", "50.0", "50.0", "50", "10.0", "10.0", "10", "—"],
                ["all", "3", "1", "4", "150.0", "100.0", "300", "23.3", "20.0", "40", "1600.0"],
            ]
        );
        let html = paper_html(&tables, &report, Some(&stats));
        assert!(html.contains("id=\"cpp-source-lines\""), "{html}");
        assert!(html.contains("data-label=\"yaml\" data-count=\"1\""));
    }

    #[test]
    fn histogram_bins() {
        let h = histogram(&[0, 5, 9, 10, 95, 100]);
        assert_eq!(h.len(), 10);
        assert_eq!(h[0], ("0–10".to_string(), 4));
        assert_eq!(h[8], ("88–98".to_string(), 1));
        assert_eq!(h[9], ("99–109".to_string(), 1));
        assert_eq!(histogram(&[3])[0], ("0–0".to_string(), 0));
    }
}
