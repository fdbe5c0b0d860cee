//! The papers' tables from clover's own records (`clover score --tables paper`).
//!
//! CLOVER: Table 2 (per task and setting: unique examples, templates, mean prompt tokens),
//! Tables 3–8 (a model per row, the context settings as columns, then Best and Δ), and §4.1's
//! EM-vs-RER gap; CPP-UT-Bench: Table 1 (pairs per repository, test lines, tokens per pair,
//! chunked files) and Figs. 2–3 (pairs per repository, the distribution of test lengths) as
//! SVG charts. Which CLOVER table holds what is in docs/FIDELITY.md.
//!
//! A number clover does not compute is "—" with a footnote saying why; nothing is estimated.
//! Dataset statistics come from the instances file (`--instances`): run results do not carry
//! prompt lengths or problem ids.

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
    /// `clover-2` … `clover-8`, `clover-gap`, `cpp-1`.
    pub id: String,
    pub title: String,
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

    /// Whether any instance was read (Table 2 needs them).
    pub fn has_instances(&self) -> bool {
        !self.by_setting.is_empty()
    }
}

/// What each CLOVER result table holds: the task, the answer format (`None`: every format,
/// in a column), and the metrics, one line per model and metric.
struct Layout {
    id: &'static str,
    title: &'static str,
    task: Task,
    format: Option<&'static str>,
    metrics: &'static [&'static str],
}

const LAYOUTS: &[Layout] = &[
    Layout {
        id: "clover-3",
        title: "CLOVER Table 3 — Task I (assertion cloze): EM, ER and RER per context setting",
        task: Task::AssertionCloze,
        format: None,
        metrics: &["em", "er", "rer"],
    },
    Layout {
        id: "clover-4",
        title: "CLOVER Table 4 — Task II (targeted test), answer format part",
        task: Task::TargetedTest,
        format: Some("part"),
        metrics: &["execution_rate", "success_rate", "called_rate"],
    },
    Layout {
        id: "clover-5",
        title: "CLOVER Table 5 — Task III (coverage test), answer format full: execution rate",
        task: Task::CoverageTest,
        format: Some("full"),
        metrics: &["execution_rate"],
    },
    Layout {
        id: "clover-6",
        title: "CLOVER Table 6 — Task III (coverage test), answer format full: success rate",
        task: Task::CoverageTest,
        format: Some("full"),
        metrics: &["success_rate"],
    },
    Layout {
        id: "clover-7",
        title: "CLOVER Table 7 — Task II (targeted test), answer format full",
        task: Task::TargetedTest,
        format: Some("full"),
        metrics: &["execution_rate", "success_rate", "called_rate"],
    },
    Layout {
        id: "clover-8",
        title: "CLOVER Table 8 — Task III (coverage test), answer format part",
        task: Task::CoverageTest,
        format: Some("part"),
        metrics: &["execution_rate", "success_rate"],
    },
];

const MISSING_SETTING: &str = "—: the model has no results in that setting (not run, or every result was over its maximum context).";
const BEST_DELTA: &str = "Best is the highest value over all settings, problem-only (PO) included; Δ = Best − PO, as CLOVER reports context utilization. A setting that lost results to the model's maximum context (marked †) is in neither.";
const CALLED: &str = "called_rate is clover's stricter Task II reading (a line of the target beyond its import ran), not a column of the paper.";
const NO_INSTANCES: &str = "—: statistics of the dataset come from the instances file; pass it with --instances (run results carry neither prompt lengths nor problem ids).";

/// Every paper table clover can fill from `report` and, when given, the instances' `stats`.
pub fn paper_tables(report: &Report, stats: Option<&DatasetStats>) -> Vec<PaperTable> {
    let mut out = vec![table_2(stats)];
    for layout in LAYOUTS {
        out.push(result_table(report, layout));
    }
    out.push(gap_table(report));
    out.push(cpp_table_1(stats));
    out
}

fn table_2(stats: Option<&DatasetStats>) -> PaperTable {
    let mut t = PaperTable {
        id: "clover-2".into(),
        title: "CLOVER Table 2 — unique examples, templates and mean prompt tokens per task and setting".into(),
        columns: ["task", "setting", "unique examples", "templates", "instances", "mean prompt tokens"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
        footnotes: vec![
            "unique examples: distinct problems; templates: distinct answer formats (and Task I prompt templates) asked; prompt tokens by clover's tokenizer (pack-context --tokenizer), which need not be the paper's.".into(),
        ],
    };
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
                t.rows.push(vec![
                    Cell::Text(task_name(key.0)),
                    Cell::Text(key.1.clone()),
                    Cell::Count(s.problems.len() as u64),
                    Cell::Count(s.templates.len() as u64),
                    Cell::Count(s.instances),
                    Cell::Number(s.prompt_tokens as f64 / s.instances.max(1) as f64),
                ]);
            }
        }
    }
    t
}

/// A result table: one line per model (and format) and metric, the settings as columns,
/// then Best and Δ.
fn result_table(report: &Report, layout: &Layout) -> PaperTable {
    let rows: Vec<&Row> = report
        .rows
        .iter()
        .filter(|r| {
            r.task == layout.task
                && r.repo == ALL_REPOS
                && layout.format.is_none_or(|f| r.format == f)
        })
        .collect();
    let (settings, models) = settings_and_series(&rows);
    let show_format = layout.format.is_none() && rows.iter().any(|r| !r.format.is_empty());
    let mut columns = vec!["model".to_string()];
    if show_format {
        columns.push("format".into());
    }
    columns.push("metric".into());
    columns.extend(settings.iter().map(|s| s.to_string()));
    columns.extend(["Best".to_string(), "Δ".to_string()]);
    let mut out = Vec::new();
    let mut any_partial = false;
    for (model, format) in &models {
        for metric in layout.metrics {
            let mut line = vec![Cell::Text(model.to_string())];
            if show_format {
                line.push(Cell::Text(format.to_string()));
            }
            line.push(Cell::Text(metric.to_string()));
            let mut best: Option<f64> = None;
            let mut po: Option<f64> = None;
            for setting in &settings {
                let row = rows
                    .iter()
                    .find(|r| r.model == *model && r.format == *format && r.setting == *setting);
                let value = row.and_then(|r| r.metrics.get(*metric).map(|v| (r, *v)));
                match value {
                    None => line.push(Cell::Missing),
                    Some((r, v)) if r.over_max_context > 0 => {
                        any_partial = true;
                        line.push(Cell::Text(format!("{}†", pct(v))));
                    }
                    Some((_, v)) => {
                        if setting.eq_ignore_ascii_case("po") {
                            po = Some(v);
                        }
                        best = Some(best.map_or(v, |b: f64| b.max(v)));
                        line.push(Cell::Rate(v));
                    }
                }
            }
            line.push(best.map_or(Cell::Missing, Cell::Rate));
            line.push(match (best, po) {
                (Some(b), Some(p)) => Cell::Delta(b - p),
                _ => Cell::Missing,
            });
            out.push(line);
        }
    }
    let mut footnotes = vec![BEST_DELTA.to_string()];
    if out.iter().flatten().any(|c| *c == Cell::Missing) {
        footnotes.push(MISSING_SETTING.into());
    }
    if layout.metrics.contains(&"called_rate") {
        footnotes.push(CALLED.into());
    }
    if models.is_empty() {
        footnotes.push(format!(
            "No results of {}{} in the input.",
            task_name(layout.task),
            layout
                .format
                .map(|f| format!(" in answer format {f}"))
                .unwrap_or_default()
        ));
    }
    if any_partial {
        footnotes.push("†: some of the setting's results were over the model's maximum context (generate --max-context); the rate is over the rest.".into());
    }
    PaperTable {
        id: layout.id.into(),
        title: layout.title.into(),
        columns,
        rows: out,
        footnotes,
    }
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
                Cell::Text(g.setting.clone()),
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
        title: "CLOVER §4.1 — the gap between EM and RER in Task I".into(),
        columns,
        rows,
        footnotes: vec![
            "Rates over the results with an answer (API errors aside). RER, not EM: correct by execution and not trivial, yet not the reference's text (EM's underestimate); EM, not RER: the reference's text in a trivial assertion, or a candidate that did not pass.".into(),
            "Lengths in characters of the whitespace-normal form EM compares, over the results from which a prediction could be read; —: no prediction could be read.".into(),
        ],
    }
}

fn cpp_table_1(stats: Option<&DatasetStats>) -> PaperTable {
    let mut t = PaperTable {
        id: "cpp-1".into(),
        title: "CPP-UT-Bench Table 1 — {code, unit test} pairs per repository".into(),
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
            "Lines of the comment-stripped source and test file from extract's problem records (--problems); without them, test lines come from the instances' references. A chunked file is a source split into more than one prompt (pack-context --chunk-lines); prompt tokens per pair sum a pair's chunks in one setting, averaged over pairs and settings, by clover's tokenizer.".into(),
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
        let _ = writeln!(s, "| {} |", t.columns.join(" | "));
        let align: Vec<&str> = (0..t.columns.len())
            .map(|i| {
                if t.rows.iter().any(|r| r.get(i).is_some_and(Cell::numeric)) {
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

/// The tables as JSON: `{"tables":[{"id","title","columns","rows","footnotes"}]}`, a
/// missing number as `null`, rates as fractions.
pub fn paper_json(tables: &[PaperTable], report: &Report) -> Value {
    json!({
        "tables": tables.iter().map(|t| json!({
            "id": t.id,
            "title": t.title,
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

    #[test]
    fn task_i_table_has_settings_best_and_delta() {
        let tables = paper_tables(&fixture(), None);
        let t = table(&tables, "clover-3");
        assert_eq!(
            t.columns,
            ["model", "format", "metric", "po", "8k", "Best", "Δ"]
        );
        assert_eq!(
            texts(t),
            [
                ["m1", "line", "em", "50.0", "100.0", "100.0", "+50.0"],
                ["m1", "line", "er", "50.0", "100.0", "100.0", "+50.0"],
                ["m1", "line", "rer", "50.0", "100.0", "100.0", "+50.0"],
                ["m2", "line", "em", "100.0", "—", "100.0", "+0.0"],
                ["m2", "line", "er", "100.0", "—", "100.0", "+0.0"],
                ["m2", "line", "rer", "100.0", "—", "100.0", "+0.0"],
            ]
        );
        assert!(t.footnotes.iter().any(|f| f.starts_with("—: the model")));
    }

    /// Task II part and full are separate tables; a setting a model lacks is "—", and Best
    /// includes PO (here PO is the best).
    #[test]
    fn task_ii_and_iii_tables_by_answer_format() {
        let tables = paper_tables(&fixture(), None);
        let t4 = table(&tables, "clover-4");
        assert_eq!(t4.columns, ["model", "metric", "po", "16k", "Best", "Δ"]);
        assert_eq!(
            texts(t4)[0],
            ["m1", "execution_rate", "100.0", "0.0", "100.0", "+0.0"]
        );
        assert_eq!(
            texts(t4)[1],
            ["m1", "success_rate", "100.0", "0.0", "100.0", "+0.0"]
        );
        assert!(t4
            .footnotes
            .iter()
            .any(|f| f.contains("called_rate is clover's")));
        let t7 = table(&tables, "clover-7");
        assert_eq!(t7.columns, ["model", "metric", "po", "Best", "Δ"]);
        assert_eq!(
            texts(t7)[0],
            ["m1", "execution_rate", "100.0", "100.0", "+0.0"]
        );
        // Every setting is there: no footnote for "—".
        assert!(!t7.footnotes.iter().any(|f| f.starts_with("—: the model")));
        let t6 = table(&tables, "clover-6");
        assert_eq!(texts(t6), [["m1", "success_rate", "0.0", "0.0", "+0.0"]]);
        // No Task III part results: the table is there, empty, and says why.
        let t8 = table(&tables, "clover-8");
        assert!(t8.rows.is_empty());
        assert!(t8
            .footnotes
            .iter()
            .any(|f| f.contains("No results of coverage_test in answer format part")));
    }

    #[test]
    fn em_rer_gap() {
        let tables = paper_tables(&fixture(), None);
        let t = table(&tables, "clover-gap");
        assert_eq!(
            texts(t)[0],
            [
                "m1", "line", "po", "2", "50.0", "50.0", "+0.0", "50.0", "50.0", "8.5", "5.0",
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
                ["assertion_cloze", "po", "2", "2", "3", "163.3"],
                ["assertion_cloze", "8k", "1", "1", "1", "7000.0"],
            ]
        );
        let cpp = table(&tables, "cpp-1");
        assert_eq!(
            texts(cpp),
            [["snappy", "2", "1", "3", "—", "—", "—", "3.0", "3.0", "3", "1500.0"]]
        );
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
        assert_eq!(json["tables"].as_array().unwrap().len(), 9);
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
        let report = fixture();
        let tables = paper_tables(&report, Some(&stats));
        assert_eq!(
            texts(table(&tables, "cpp-1")),
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
