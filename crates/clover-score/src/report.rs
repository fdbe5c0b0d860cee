//! Groups of verdicts into rows, context utilization, and the report's formats.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::rc::Rc;

use clover_generate::task_name;
use clover_protocol::{Outcome, RecordKind, RunResult, ScoreRow, Task, SCHEMA_VERSION};
use serde_json::{json, Value};

use crate::judge::JudgeRow;
use clover_extract::ConstantReading;

use crate::bootstrap::Bootstrap;
use crate::meta::RunMeta;
use crate::metrics::{headline_metric, metric_names, verdict_with, Tally, Verdict, MUTATION_SCORE};
use crate::setting::{is_budget, setting_order};

/// The repository of a row that covers all of them.
pub const ALL_REPOS: &str = "*";

/// One row: a model on a task in a setting (and a repository, or all).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub model: String,
    pub task: Task,
    /// The answer format (`part`, `full`, …) from `scoring.answer_format`; empty for a task
    /// with one format. The papers report each format in its own table, so it is part of
    /// every group's key.
    pub format: String,
    pub setting: String,
    pub repo: String,
    pub n: u64,
    pub metrics: BTreeMap<String, f64>,
    /// Each metric's 95% bootstrap interval over the row's results (empty without a
    /// bootstrap).
    pub ci: BTreeMap<String, (f64, f64)>,
    /// Results of this group left out because generate did not ask them (outcome
    /// `over_max_context`): in neither `n` nor any rate. A row that lost any is out of Δ.
    pub over_max_context: u64,
    /// The row's results as a JSON Lines file, by its path relative to the report (a key of
    /// [`Report::samples`]), when samples were kept.
    pub samples: Option<String>,
    /// The mutation pass by operator family: kept and killed mutants summed over the row's
    /// results (empty without `sandbox-run --mutation`).
    pub mutation_operators: BTreeMap<String, (u64, u64)>,
}

/// Context utilization of a model on a task: the headline metric under context budgets
/// against problem-only (PO).
#[derive(Debug, Clone, PartialEq)]
pub struct Utilization {
    pub model: String,
    pub task: Task,
    pub format: String,
    pub repo: String,
    pub metric: &'static str,
    pub po: f64,
    /// max over budgets − PO.
    pub delta_max: f64,
    /// min over budgets − PO.
    pub delta_min: f64,
    pub best_setting: String,
    pub worst_setting: String,
}

/// Everything `clover score` reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub rows: Vec<Row>,
    pub utilization: Vec<Utilization>,
    pub judge: Vec<JudgeRow>,
    /// Per task, the results (all repositories) left out because their prompt was over the
    /// model's maximum context.
    pub over_max_context: BTreeMap<Task, u64>,
    /// Per task, the judge-only results (outcome `judge_only`: calibrate could not run their
    /// ground truth, so nothing ran): in no row and no execution rate, only the judge's.
    pub judge_only: BTreeMap<Task, u64>,
    /// Task I's EM-vs-RER gap per model, format and setting (all repositories).
    pub gap: Vec<Gap>,
    /// Each row's results as JSON lines, by the path its row links to.
    pub samples: BTreeMap<String, Vec<Rc<str>>>,
    /// What was scored and how: date, version, inputs, models.
    pub meta: RunMeta,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct GroupKey {
    model: String,
    task: Task,
    format: String,
    setting: String,
    repo: String,
}

/// Each group's results as JSON lines (one copy of a line, shared by its groups).
type GroupSamples = BTreeMap<GroupKey, Vec<Rc<str>>>;

/// Sums run results as they stream by. Memory grows with the results' verdicts (a few words
/// each, for the bootstrap), and with the results themselves only when samples are kept for
/// the HTML report ([`Scorer::with_samples`]).
#[derive(Debug, Default)]
pub struct Scorer {
    by_repo: bool,
    /// What RER counts as a constant.
    constants: ConstantReading,
    bootstrap: Bootstrap,
    groups: BTreeMap<GroupKey, Vec<Verdict>>,
    /// Each group's mutation pass by operator family: (kept, killed).
    operators: BTreeMap<GroupKey, BTreeMap<String, (u64, u64)>>,
    /// Results generate did not ask (over the model's maximum context), per group.
    over_max_context: BTreeMap<GroupKey, u64>,
    /// Judge-only results per task (all repositories).
    judge_only: BTreeMap<Task, u64>,
    /// With samples: the folder their files go in (relative to the report), and each group's
    /// results as JSON lines.
    samples: Option<(String, GroupSamples)>,
    /// Results without a task, which cannot be scored.
    pub untasked: u64,
}

impl Scorer {
    pub fn new(by_repo: bool) -> Self {
        Scorer {
            by_repo,
            ..Scorer::default()
        }
    }

    /// Reads RER's constants as `constants` says (default: `ast.Constant`).
    pub fn with_rer_constants(mut self, constants: ConstantReading) -> Self {
        self.constants = constants;
        self
    }

    /// Draws every row's intervals as `bootstrap` says (default: 1000 replicates, seed 0).
    pub fn with_bootstrap(mut self, bootstrap: Bootstrap) -> Self {
        self.bootstrap = bootstrap;
        self
    }

    /// Keeps each row's results, to be written as one JSON Lines file per row under `folder`
    /// (a path relative to the report, which links each row to its file).
    pub fn with_samples(mut self, folder: &str) -> Self {
        self.samples = Some((folder.trim_end_matches('/').to_string(), BTreeMap::new()));
        self
    }

    /// Adds one result to its group (and to its repository's, with `--by-repo`). A result
    /// over the model's maximum context is only counted: CLOVER evaluates a model up to its
    /// own maximum length, so what it was never asked is no failure of it.
    pub fn add(&mut self, r: &RunResult) {
        let Some(task) = r.task else {
            self.untasked += 1;
            return;
        };
        // Nothing ran, by design: no execution metric can count it, and its repository's
        // rows would read as if a model had failed it (the judge still compares it).
        if r.outcome == Outcome::JudgeOnly {
            *self.judge_only.entry(task).or_default() += 1;
            return;
        }
        let mut key = GroupKey {
            model: r.model.clone(),
            task,
            format: answer_format(r).to_string(),
            setting: r.setting.clone(),
            repo: ALL_REPOS.into(),
        };
        let mut keys = vec![key.clone()];
        if self.by_repo {
            key.repo = r.repo.clone();
            keys.push(key);
        }
        if r.outcome == Outcome::OverMaxContext {
            for key in keys {
                *self.over_max_context.entry(key).or_default() += 1;
            }
            return;
        }
        if let Some((_, samples)) = &mut self.samples {
            // One copy of the line, shared by the result's groups.
            let line: Rc<str> = serde_json::to_string(r)
                .expect("a run result serializes")
                .into();
            for key in &keys {
                samples.entry(key.clone()).or_default().push(line.clone());
            }
        }
        let v = verdict_with(r, task, self.constants);
        for key in keys {
            if v.mutants.is_some() && !v.api_error {
                let ops = self.operators.entry(key.clone()).or_default();
                for o in &r.mutation.operators {
                    let (kept, killed) = ops.entry(o.operator.clone()).or_default();
                    *kept += u64::from(o.kept);
                    *killed += u64::from(o.killed);
                }
            }
            self.groups.entry(key).or_default().push(v.clone());
        }
    }

    /// The rows and context utilization, in a stable order.
    pub fn report(&self) -> Report {
        let mut rows: Vec<Row> = self
            .groups
            .iter()
            .map(|(k, verdicts)| {
                let mut tally = Tally::default();
                verdicts.iter().for_each(|v| tally.add(v));
                let id = row_id(&k.model, k.task, &k.format, &k.setting, &k.repo);
                Row {
                    model: k.model.clone(),
                    task: k.task,
                    format: k.format.clone(),
                    setting: k.setting.clone(),
                    repo: k.repo.clone(),
                    n: tally.n,
                    metrics: tally.metrics(k.task),
                    ci: self.bootstrap.intervals(&id, k.task, verdicts),
                    over_max_context: self.over_max_context.get(k).copied().unwrap_or(0),
                    samples: None,
                    mutation_operators: self.operators.get(k).cloned().unwrap_or_default(),
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            (&a.model, a.task, &a.format, a.repo != ALL_REPOS, &a.repo)
                .cmp(&(&b.model, b.task, &b.format, b.repo != ALL_REPOS, &b.repo))
                .then_with(|| setting_order(&a.setting, &b.setting))
        });
        let mut samples = BTreeMap::new();
        if let Some((folder, by_group)) = &self.samples {
            // Files are numbered in row order, so names are unique whatever the model and
            // setting names hold, and the same input names them the same.
            for (i, row) in rows.iter_mut().enumerate() {
                let key = GroupKey {
                    model: row.model.clone(),
                    task: row.task,
                    format: row.format.clone(),
                    setting: row.setting.clone(),
                    repo: row.repo.clone(),
                };
                let Some(lines) = by_group.get(&key) else {
                    continue;
                };
                let slug = slug(&row_id(
                    &row.model,
                    row.task,
                    &row.format,
                    &row.setting,
                    if row.repo == ALL_REPOS {
                        "all"
                    } else {
                        &row.repo
                    },
                ));
                let href = format!("{folder}/{:03}-{slug}.jsonl", i + 1);
                samples.insert(href.clone(), lines.clone());
                row.samples = Some(href);
            }
        }
        let utilization = utilization(&rows);
        let mut over_max_context = BTreeMap::new();
        for (k, n) in &self.over_max_context {
            if k.repo == ALL_REPOS {
                *over_max_context.entry(k.task).or_default() += n;
            }
        }
        let gap = self
            .groups
            .iter()
            .filter(|(k, _)| k.task == Task::AssertionCloze && k.repo == ALL_REPOS)
            .map(|(k, verdicts)| Gap::of(k, verdicts))
            .collect();
        Report {
            rows,
            utilization,
            judge: Vec::new(),
            over_max_context,
            judge_only: self.judge_only.clone(),
            gap,
            samples,
            meta: RunMeta {
                bootstrap: self.bootstrap,
                ..RunMeta::default()
            },
        }
    }
}

/// A row's id: `<model>/<task>[/<format>]/<setting>/<repo>` (a `ScoreRow`'s id).
fn row_id(model: &str, task: Task, format: &str, setting: &str, repo: &str) -> String {
    format!(
        "{model}/{}{}/{setting}/{repo}",
        task_name(task),
        format_part(format)
    )
}

/// A file-name-safe form of `s`: letters, digits, `.`, `-` and `_` kept, the rest `_`.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// CLOVER §4.1's reading of EM against RER for one model, format and setting of Task I: how
/// often each holds without the other, and how long predictions are against references.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    pub model: String,
    pub format: String,
    pub setting: String,
    /// Results with an answer (API errors aside).
    pub n: u64,
    pub em: u64,
    pub rer: u64,
    /// Correct by RER but not exact: EM's underestimate.
    pub rer_not_em: u64,
    /// Exact but not counted by RER (a trivial assertion, or a candidate that failed).
    pub em_not_rer: u64,
    /// Results with a prediction (the lengths are over these).
    pub predictions: u64,
    pub prediction_chars: u64,
    pub reference_chars: u64,
    /// Predictions longer (shorter) than their reference.
    pub longer: u64,
    pub shorter: u64,
}

impl Gap {
    fn of(k: &GroupKey, verdicts: &[Verdict]) -> Gap {
        let mut g = Gap {
            model: k.model.clone(),
            format: k.format.clone(),
            setting: k.setting.clone(),
            n: 0,
            em: 0,
            rer: 0,
            rer_not_em: 0,
            em_not_rer: 0,
            predictions: 0,
            prediction_chars: 0,
            reference_chars: 0,
            longer: 0,
            shorter: 0,
        };
        for v in verdicts.iter().filter(|v| !v.api_error) {
            let exact = v.exact == Some(true);
            g.n += 1;
            g.em += u64::from(exact);
            g.rer += u64::from(v.success);
            g.rer_not_em += u64::from(v.success && !exact);
            g.em_not_rer += u64::from(exact && !v.success);
            if let Some((p, r)) = v.lengths {
                g.predictions += 1;
                g.prediction_chars += p as u64;
                g.reference_chars += r as u64;
                g.longer += u64::from(p > r);
                g.shorter += u64::from(p < r);
            }
        }
        g
    }
}

/// The answer format a result was asked in (`scoring.answer_format`), empty when the
/// instance did not say.
fn answer_format(r: &RunResult) -> &str {
    r.scoring
        .get("answer_format")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn utilization(rows: &[Row]) -> Vec<Utilization> {
    let mut out = Vec::new();
    let mut by: BTreeMap<(&str, Task, &str, &str), Vec<&Row>> = BTreeMap::new();
    // A setting some of whose results were over the model's maximum context holds other
    // problems than PO: its rate is no like-for-like difference, and CLOVER's Δ runs only up
    // to the model's maximum length (r_maxLen).
    for r in rows.iter().filter(|r| r.over_max_context == 0) {
        by.entry((&r.model, r.task, &r.format, &r.repo))
            .or_default()
            .push(r);
    }
    for ((model, task, format, repo), group) in by {
        let metric = headline_metric(task);
        let Some(po) = group
            .iter()
            .find(|r| r.setting.eq_ignore_ascii_case("po"))
            .and_then(|r| r.metrics.get(metric))
        else {
            continue;
        };
        let budgets: Vec<(&str, f64)> = group
            .iter()
            .filter(|r| is_budget(&r.setting))
            .filter_map(|r| r.metrics.get(metric).map(|v| (r.setting.as_str(), *v)))
            .collect();
        // Ties go to the smaller budget: rows are in budget order and only a strictly
        // better (worse) value replaces the one found.
        let Some(best) = budgets
            .iter()
            .copied()
            .reduce(|a, b| if b.1 > a.1 { b } else { a })
        else {
            continue;
        };
        let worst = budgets
            .iter()
            .copied()
            .reduce(|a, b| if b.1 < a.1 { b } else { a })
            .expect("non-empty");
        out.push(Utilization {
            model: model.into(),
            task,
            format: format.into(),
            repo: repo.into(),
            metric,
            po: *po,
            delta_max: best.1 - po,
            delta_min: worst.1 - po,
            best_setting: best.0.into(),
            worst_setting: worst.0.into(),
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// formats

fn round(v: f64) -> Value {
    // Six decimals: stable text across platforms, more precision than any benchmark has.
    json!((v * 1e6).round() / 1e6)
}

fn metrics_json(m: &BTreeMap<String, f64>) -> Value {
    Value::Object(m.iter().map(|(k, v)| (k.clone(), round(*v))).collect())
}

/// `{"rows":[{"model","task","setting","repo","n","metrics":{…}}], "utilization":[…],
/// "judge":[…]}`.
pub fn to_json(report: &Report) -> Value {
    json!({
        "rows": report.rows.iter().map(|r| json!({
            "model": r.model,
            "task": task_name(r.task),
            "answer_format": r.format,
            "setting": r.setting,
            "repo": r.repo,
            "n": r.n,
            "metrics": metrics_json(&r.metrics),
            "ci": Value::Object(r.ci.iter()
                .map(|(k, (lo, hi))| (k.clone(), json!([round(*lo), round(*hi)])))
                .collect()),
            "mutation": mutation_json(r),
        })).collect::<Vec<_>>(),
        "utilization": report.utilization.iter().map(|u| json!({
            "model": u.model,
            "task": task_name(u.task),
            "answer_format": u.format,
            "repo": u.repo,
            "metric": u.metric,
            "po": round(u.po),
            "delta_max": round(u.delta_max),
            "delta_min": round(u.delta_min),
            "best_setting": u.best_setting,
            "worst_setting": u.worst_setting,
        })).collect::<Vec<_>>(),
        "judge": report.judge.iter().map(JudgeRow::to_json).collect::<Vec<_>>(),
        "over_max_context": report.over_max_context.iter()
            .map(|(t, n)| (task_name(*t), json!(n)))
            .collect::<serde_json::Map<_, _>>(),
        "judge_only": report.judge_only.iter()
            .map(|(t, n)| (task_name(*t), json!(n)))
            .collect::<serde_json::Map<_, _>>(),
        "em_rer_gap": report.gap.iter().map(|g| json!({
            "model": g.model,
            "answer_format": g.format,
            "setting": g.setting,
            "n": g.n,
            "em": g.em,
            "rer": g.rer,
            "rer_not_em": g.rer_not_em,
            "em_not_rer": g.em_not_rer,
            "predictions": g.predictions,
            "prediction_chars": g.prediction_chars,
            "reference_chars": g.reference_chars,
            "longer": g.longer,
            "shorter": g.shorter,
        })).collect::<Vec<_>>(),
        "metadata": metadata_json(&report.meta),
    })
}

/// A row's mutation pass: kept and killed mutants pooled over its results, with the kill
/// rate, in all and by operator family; `{}` for a row without a pass.
fn mutation_json(r: &Row) -> Value {
    let Some(score) = r.metrics.get(MUTATION_SCORE) else {
        return json!({});
    };
    let (kept, killed) = r
        .mutation_operators
        .values()
        .fold((0, 0), |(k, x), (kept, killed)| (k + kept, x + killed));
    // An operator is listed only with a kept mutant: no rate divides by zero.
    let rate = |kept: u64, killed: u64| round(killed as f64 / kept.max(1) as f64);
    json!({
        "kept": kept,
        "killed": killed,
        "kill_rate": round(*score),
        "operators": r.mutation_operators.iter()
            .map(|(op, (kept, killed))| (op.clone(), json!({
                "kept": kept, "killed": killed, "kill_rate": rate(*kept, *killed)
            })))
            .collect::<serde_json::Map<_, _>>(),
    })
}

/// A task's table columns: its metrics, and the mutation score before the no-code rate when
/// some row of the task has one.
fn table_metrics(report: &Report, task: Task) -> Vec<&'static str> {
    let mut names = metric_names(task).to_vec();
    if report
        .rows
        .iter()
        .any(|r| r.task == task && r.metrics.contains_key(MUTATION_SCORE))
    {
        let at = names
            .iter()
            .position(|n| *n == "no_code_rate")
            .unwrap_or(names.len());
        names.insert(at, MUTATION_SCORE);
    }
    names
}

/// The run's metadata as JSON (see [`RunMeta`]).
pub(crate) fn metadata_json(meta: &RunMeta) -> Value {
    let files = |v: &[(String, u64)]| {
        v.iter()
            .map(|(p, n)| json!({"path": p, "records": n}))
            .collect::<Vec<_>>()
    };
    json!({
        "date": meta.date,
        "clover_version": meta.version,
        "inputs": files(&meta.inputs),
        "responses": files(&meta.responses),
        "bootstrap": {"replicates": meta.bootstrap.replicates, "seed": meta.bootstrap.seed,
            "interval": 0.95},
        // The settings by name, an unset one as null: the record's own serde form writes
        // sentinels (-1) for unset numbers, which a reader of a report would take as values.
        "models": meta.sorted_models().iter().map(|m| {
            let g = &m.generation;
            json!({
                "model": m.model,
                "task": task_name(m.task),
                "adapter": g.adapter,
                "model_name": g.model_name,
                "base_url": g.base_url,
                "temperature": g.temperature,
                "top_p": g.top_p,
                "max_tokens": g.max_tokens,
                "frequency_penalty": g.frequency_penalty,
                "presence_penalty": g.presence_penalty,
                "seed": g.seed,
                "stop": g.stop,
                "max_context": g.max_context,
            })
        }).collect::<Vec<_>>(),
    })
}

/// The rows as `ScoreRow` records, then one `setting: "delta"` row per utilization entry
/// (metrics `po`, `delta_max`, `delta_min`).
pub fn to_score_rows(report: &Report) -> Vec<ScoreRow> {
    let mut out: Vec<ScoreRow> = report
        .rows
        .iter()
        .map(|r| ScoreRow {
            kind: RecordKind::ScoreRow,
            schema_version: SCHEMA_VERSION,
            id: format!(
                "{}/{}{}/{}/{}",
                r.model,
                task_name(r.task),
                format_part(&r.format),
                r.setting,
                r.repo
            ),
            model: r.model.clone(),
            task: r.task,
            answer_format: r.format.clone(),
            setting: r.setting.clone(),
            repo: r.repo.clone(),
            n: r.n,
            metrics: r.metrics.clone(),
        })
        .collect();
    for u in &report.utilization {
        out.push(ScoreRow {
            kind: RecordKind::ScoreRow,
            schema_version: SCHEMA_VERSION,
            id: format!(
                "{}/{}{}/delta/{}",
                u.model,
                task_name(u.task),
                format_part(&u.format),
                u.repo
            ),
            model: u.model.clone(),
            task: u.task,
            answer_format: u.format.clone(),
            setting: "delta".into(),
            repo: u.repo.clone(),
            n: 0,
            metrics: [
                (format!("po_{}", u.metric), u.po),
                ("delta_max".to_string(), u.delta_max),
                ("delta_min".to_string(), u.delta_min),
            ]
            .into_iter()
            .collect(),
        });
    }
    out
}

/// A utilization's format for a table cell: escaped, or "—" for a task with one format.
fn format_cell(format: &str) -> String {
    if format.is_empty() {
        "—".into()
    } else {
        esc(format)
    }
}

/// How the judge was asked, for the judge table's title.
fn judge_reading(report: &Report) -> &'static str {
    if report.judge.iter().all(|j| j.orders == 1) {
        "pairwise, one order per pair, as CPP-UT-Bench asks"
    } else {
        "pairwise, both orders; a win needs both, a disagreement is a tie"
    }
}

/// Under the judge table: what `undecided` counts.
const JUDGE_LEGEND: &str = "n counts the pairs with a verdict; undecided pairs (a judge request failed, or its answer named none of A, B and TIE) are in no rate. judge-only counts the pairs among n and undecided whose ground truth calibrate could not run (pack-context --judge-only-excluded): judged, never executed, so in no table above.";

/// `/<format>` for a row's id, nothing for a task with one format (ids as before).
fn format_part(format: &str) -> String {
    if format.is_empty() {
        String::new()
    } else {
        format!("/{format}")
    }
}

/// Whether `task`'s rows come in answer formats (then tables get a `format` column).
fn has_formats(report: &Report, task: Task) -> bool {
    report
        .rows
        .iter()
        .any(|r| r.task == task && !r.format.is_empty())
}

/// A utilization's best or worst setting, or "—" when no budget differs from PO (naming one
/// would suggest a difference there is not).
fn extreme(u: &Utilization, setting: &str) -> String {
    if u.delta_max == 0.0 && u.delta_min == 0.0 {
        "—".into()
    } else {
        setting.into()
    }
}

pub(crate) fn pct(v: f64) -> String {
    format!("{:.1}", v * 100.0)
}

/// Under every task's table: what `n` and `error_rate` count, since the other rates leave
/// API failures out of their denominator.
const ERROR_RATE_LEGEND: &str = "n counts every result; error_rate is the share whose API call failed (outcome api_error, nothing ran), and every other rate leaves those out of its denominator. rejected_rate is the share the screen for reward hacking refused to run (outcome rejected): failed executions, counted against the model. forged_rate is the share whose report disagreed with the runner's own record of the run (outcome forged): failed executions with no coverage and no killed mutants, counted against the model.";

/// What the interval column is, under each table.
fn ci_legend(report: &Report) -> String {
    let b = report.meta.bootstrap;
    if b.replicates == 0 {
        "No intervals were drawn (--bootstrap 0).".into()
    } else {
        format!(
            "The 95% CI is a percentile bootstrap over the row's instances ({} replicates, seed {}).",
            b.replicates, b.seed
        )
    }
}

/// Under a task's table, when some of its results were not asked: where they went.
fn over_max_context_legend(report: &Report, task: Task) -> Option<String> {
    let n = report
        .over_max_context
        .get(&task)
        .copied()
        .filter(|&n| n > 0)?;
    Some(format!(
        "{n} result(s) were not asked, their prompt being over the model's maximum context (generate --max-context; outcome over_max_context): they are in no row and no rate, and a setting that lost any is left out of Δmax and Δmin, as CLOVER evaluates each model up to its own maximum length (r_maxLen)."
    ))
}

/// Under a task's table, when some of its results are judge-only: that they exist, and
/// where they count.
fn judge_only_legend(report: &Report, task: Task) -> Option<String> {
    let n = report.judge_only.get(&task).copied().filter(|&n| n > 0)?;
    Some(format!(
        "{n} result(s) are judge-only: calibrate could not run their pair's ground truth (pack-context --judge-only-excluded; outcome judge_only), so nothing ran; they are in no row and no rate here, and only in the LLM judge's comparison (its judge-only column)."
    ))
}

fn signed_pct(v: f64) -> String {
    format!("{:+.1}", v * 100.0)
}

/// Markdown tables (which read as they are on a terminal): one per task, then context
/// utilization, then the judge. Rates are percentages.
pub fn to_markdown(report: &Report) -> String {
    let mut s = String::new();
    for task in tasks(report) {
        let names = table_metrics(report, task);
        let formats = has_formats(report, task);
        let _ = writeln!(s, "## {}\n", task_title(task));
        let _ = write!(
            s,
            "| model |{} setting | repo | n |",
            if formats { " format |" } else { "" }
        );
        for n in &names {
            let _ = write!(s, " {n} |");
        }
        let headline = headline_metric(task);
        let _ = write!(s, " {headline} 95% CI |");
        let _ = write!(
            s,
            "\n|---|{}---|---|---:|",
            if formats { "---|" } else { "" }
        );
        for _ in &names {
            s.push_str("---:|");
        }
        s.push_str("---:|\n");
        for r in report.rows.iter().filter(|r| r.task == task) {
            let _ = write!(s, "| {} |", r.model);
            if formats {
                let _ = write!(s, " {} |", r.format);
            }
            let _ = write!(s, " {} | {} | {} |", r.setting, r.repo, r.n);
            for n in &names {
                let _ = write!(
                    s,
                    " {} |",
                    r.metrics
                        .get(*n)
                        .map(|v| pct(*v))
                        .unwrap_or_else(|| "–".into())
                );
            }
            let _ = writeln!(s, " {} |", ci_cell(r, headline));
        }
        let _ = writeln!(s, "\n{ERROR_RATE_LEGEND} {}\n", ci_legend(report));
        if let Some(legend) = over_max_context_legend(report, task) {
            let _ = writeln!(s, "{legend}\n");
        }
        if let Some(legend) = judge_only_legend(report, task) {
            let _ = writeln!(s, "{legend}\n");
        }
    }
    if !report.utilization.is_empty() {
        s.push_str("## Context utilization (vs problem-only)\n\n");
        s.push_str("| model | task | format | repo | metric | PO | Δmax | best | Δmin | worst |\n");
        s.push_str("|---|---|---|---|---|---:|---:|---|---:|---|\n");
        for u in &report.utilization {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                u.model,
                task_name(u.task),
                format_cell(&u.format),
                u.repo,
                u.metric,
                pct(u.po),
                signed_pct(u.delta_max),
                extreme(u, &u.best_setting),
                signed_pct(u.delta_min),
                extreme(u, &u.worst_setting)
            );
        }
        s.push('\n');
    }
    if !report.judge.is_empty() {
        let _ = writeln!(s, "## LLM judge ({})\n", judge_reading(report));
        s.push_str(
            "| model | vs | task | setting | n | win | tie | loss | win 95% CI | undecided | judge-only |\n",
        );
        s.push_str("|---|---|---|---|---:|---:|---:|---:|---|---:|---:|\n");
        for j in &report.judge {
            let (lo, hi) = j.win_ci();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {}–{} | {} | {} |",
                j.model,
                j.opponent,
                task_name(j.task),
                j.setting,
                j.n(),
                pct(j.rate(j.win)),
                pct(j.rate(j.tie)),
                pct(j.rate(j.loss)),
                pct(lo),
                pct(hi),
                j.undecided,
                j.judge_only
            );
        }
        let _ = writeln!(s, "\n{JUDGE_LEGEND}\n");
    }
    if report.rows.is_empty() {
        s.push_str("no run results to score\n");
    }
    s
}

fn tasks(report: &Report) -> Vec<Task> {
    // A task all of whose results were over a maximum context still gets its table's legend.
    let mut t: Vec<Task> = report.rows.iter().map(|r| r.task).collect();
    t.extend(report.over_max_context.keys());
    t.extend(report.judge_only.keys());
    t.sort();
    t.dedup();
    t
}

fn task_title(task: Task) -> &'static str {
    match task {
        Task::AssertionCloze => "Task I: assertion cloze",
        Task::TargetedTest => "Task II: targeted test",
        Task::CoverageTest => "Task III: coverage test",
        Task::CppUnitTest => "C++ unit tests",
    }
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const PALETTE: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// The metrics drawn per task, one chart each (the headline last, as the tables read).
fn chart_metrics(task: Task) -> &'static [&'static str] {
    match task {
        Task::AssertionCloze => &["em", "er", "rer"],
        Task::TargetedTest => &[
            "execution_rate",
            "success_rate",
            "called_rate",
            MUTATION_SCORE,
        ],
        Task::CoverageTest => &["execution_rate", "success_rate", MUTATION_SCORE],
        Task::CppUnitTest => &["compile_rate", "pass_rate", "success_rate", MUTATION_SCORE],
    }
}

/// What each metric means, for the report's legend.
const METRIC_LEGEND: &[(&str, &str)] = &[
    ("em", "Task I exact match: the predicted expression equals the reference (whitespace outside strings aside)."),
    ("er", "Task I execution rate: the test with the prediction filled in passed."),
    ("rer", "Task I refined execution rate (CLOVER's headline): passed, and the prediction is not trivial (no constant in a unary assertion, no constant compared with a constant, no repeat of the other side of ==)."),
    ("execution_rate", "Tasks II and III: the model's test passed."),
    ("success_rate", "Task II (CLOVER): passed and the model's own code names the target. Task III: passed and covered every required line of every block. C++: passed and covered every focal line the ground truth covers."),
    ("called_rate", "Task II (clover's stricter reading): a success that also ran a line of the target beyond what importing its module runs."),
    ("compile_rate", "C++: the candidate test file compiled."),
    ("pass_rate", "C++: the candidate test file compiled and passed."),
    ("focal_coverage_vs_gt", "C++: the share of the focal lines the ground truth covers that the candidate covers, averaged."),
    ("mutation_score", "Tasks II, III and C++ with sandbox-run --mutation: of the mutants of the instance's focus (C++: the focal source) that the ground truth kills (calibrate --mutants), the share the model's test kills, pooled over the row; a test that fails on the original code kills none. The ground truth scores 100% by construction."),
    ("no_code_rate", "No code could be read from the answer."),
    ("rejected_rate", "The screen for reward hacking refused to run the candidate (a failed execution)."),
    ("forged_rate", "The run's report disagreed with the runner's own record of it (a failed execution, no coverage, no killed mutants)."),
    ("error_rate", "The API call failed (outcome api_error); over all n, and left out of every other rate's denominator."),
    ("Δmax / Δmin", "Context utilization: the headline metric's best (worst) context budget minus problem-only (PO)."),
    ("95% CI", "Percentile bootstrap over the row's instances (2.5th to 97.5th percentile of the resampled metric)."),
];

/// One row per model and answer format, the best setting's headline metric first.
struct Standing<'a> {
    row: &'a Row,
    po: Option<f64>,
}

/// Per task and answer format, each model's best setting on the headline metric (ties to
/// the smaller budget), ranked.
fn leaderboard(report: &Report) -> Vec<((Task, &str), Vec<Standing<'_>>)> {
    let mut by: BTreeMap<(Task, &str), BTreeMap<&str, Standing>> = BTreeMap::new();
    for r in report
        .rows
        .iter()
        .filter(|r| r.repo == ALL_REPOS && r.over_max_context == 0)
    {
        let metric = headline_metric(r.task);
        let Some(v) = r.metrics.get(metric) else {
            continue;
        };
        let board = by.entry((r.task, r.format.as_str())).or_default();
        let po = r.setting.eq_ignore_ascii_case("po").then_some(*v);
        let s = board
            .entry(r.model.as_str())
            .or_insert(Standing { row: r, po: None });
        // Rows come in setting order: only a strictly better value replaces the best.
        if *v > s.row.metrics.get(metric).copied().unwrap_or(f64::MIN) {
            s.row = r;
        }
        if po.is_some() {
            s.po = po;
        }
    }
    by.into_iter()
        .map(|(k, board)| {
            let mut v: Vec<Standing> = board.into_values().collect();
            let metric = headline_metric(k.0);
            v.sort_by(|a, b| {
                b.row.metrics[metric]
                    .total_cmp(&a.row.metrics[metric])
                    .then_with(|| a.row.model.cmp(&b.row.model))
            });
            (k, v)
        })
        .collect()
}

fn ci_cell(r: &Row, metric: &str) -> String {
    r.ci.get(metric)
        .map(|(lo, hi)| format!("{}–{}", pct(*lo), pct(*hi)))
        .unwrap_or_else(|| "–".into())
}

/// The settings of `rows` in order, and their (model, answer format) pairs sorted: the columns
/// and the lines of a chart or a paper table.
pub(crate) fn settings_and_series<'a>(rows: &[&'a Row]) -> (Vec<&'a str>, Vec<(&'a str, &'a str)>) {
    let mut settings: Vec<&str> = rows.iter().map(|r| r.setting.as_str()).collect();
    settings.sort_by(|a, b| setting_order(a, b));
    settings.dedup();
    let mut series: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.model.as_str(), r.format.as_str()))
        .collect();
    series.sort();
    series.dedup();
    (settings, series)
}

/// An SVG line chart of `metric` against the setting over `rows` (one task, one repository
/// or all), one line per model and answer format, with each point's 95% interval as a bar.
fn plot(rows: &[&Row], task: Task, metric: &str, repo: &str) -> String {
    // One line per model and answer format.
    let (settings, models) = settings_and_series(rows);
    let (w, h) = (640.0, 300.0);
    let (left, right, top, bottom) = (56.0, 150.0, 20.0, 44.0);
    let pw = w - left - right;
    let ph = h - top - bottom;
    let x = |i: usize| {
        if settings.len() <= 1 {
            left + pw / 2.0
        } else {
            left + pw * i as f64 / (settings.len() - 1) as f64
        }
    };
    let y = |v: f64| top + ph * (1.0 - v.clamp(0.0, 1.0));
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="plot" data-task="{task}" data-metric="{m}" data-repo="{r}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{title}: {m} against context length ({where_})">"##,
        task = task_name(task),
        m = esc(metric),
        r = esc(repo),
        title = esc(task_title(task)),
        where_ = if repo == ALL_REPOS {
            "all repositories".to_string()
        } else {
            esc(repo)
        },
    );
    for k in 0..=4 {
        let v = k as f64 / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{left}" x2="{x2}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{tx}" y="{ty:.1}" font-size="11" text-anchor="end">{label}%</text>"##,
            x2 = left + pw,
            yy = y(v),
            tx = left - 6.0,
            ty = y(v) + 4.0,
            label = k * 25
        );
    }
    for (i, st) in settings.iter().enumerate() {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            x(i),
            top + ph + 16.0,
            esc(st)
        );
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">context budget (tokens)</text><text x="14" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text>"##,
        left + pw / 2.0,
        h - 6.0,
        top + ph / 2.0,
        top + ph / 2.0,
        esc(metric)
    );
    for (mi, (model, format)) in models.iter().enumerate() {
        let color = PALETTE[mi % PALETTE.len()];
        let label = if format.is_empty() {
            model.to_string()
        } else {
            format!("{model} ({format})")
        };
        // (x, y, the interval's ends in y) per point.
        type Point = (f64, f64, Option<(f64, f64)>);
        let points: Vec<Point> = settings
            .iter()
            .enumerate()
            .filter_map(|(i, st)| {
                let r = rows
                    .iter()
                    .find(|r| r.model == *model && r.format == *format && r.setting == *st)?;
                let v = r.metrics.get(metric)?;
                Some((
                    x(i),
                    y(*v),
                    r.ci.get(metric).map(|(lo, hi)| (y(*lo), y(*hi))),
                ))
            })
            .collect();
        let pts: Vec<String> = points
            .iter()
            .map(|(a, b, _)| format!("{a:.1},{b:.1}"))
            .collect();
        let _ = write!(
            s,
            r##"<polyline class="series" data-model="{m}" data-format="{f}" fill="none" stroke="{color}" stroke-width="2" points="{p}"/>"##,
            m = esc(model),
            f = esc(format),
            p = pts.join(" ")
        );
        for (a, b, ci) in &points {
            if let Some((lo, hi)) = ci {
                let _ = write!(
                    s,
                    r##"<line class="ci" x1="{a:.1}" x2="{a:.1}" y1="{lo:.1}" y2="{hi:.1}" stroke="{color}" stroke-opacity="0.5"/>"##
                );
            }
            let _ = write!(
                s,
                r##"<circle cx="{a:.1}" cy="{b:.1}" r="3" fill="{color}"/>"##
            );
        }
        let ly = top + 14.0 + 18.0 * mi as f64;
        let _ = write!(
            s,
            r##"<line x1="{x1}" x2="{x2}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="2"/><text x="{tx}" y="{ty}" font-size="12">{m}</text>"##,
            x1 = w - right + 12.0,
            x2 = w - right + 32.0,
            tx = w - right + 38.0,
            ty = ly + 4.0,
            m = esc(&label)
        );
    }
    s.push_str("</svg>");
    s
}

/// The page's head and style, shared by the score report and the paper tables.
pub(crate) fn html_head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\
<title>{}</title><style>\
body{{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:72em}}\
table{{border-collapse:collapse;margin:0 0 1.5em}}th,td{{border:1px solid #ccc;padding:.25em .6em}}\
td.num{{text-align:right;font-variant-numeric:tabular-nums}}th{{background:#f4f4f4}}\
svg.plot{{display:block;margin:0 0 1em;max-width:100%;height:auto}}\
dl.legend dt{{font-weight:bold}}dl.legend dd{{margin:0 0 .4em 1.5em}}p.legend,p.note{{font-size:.9em;color:#444}}\
</style></head><body>\n<h1>{}</h1>\n",
        esc(title),
        esc(title)
    )
}

/// The run's metadata as an HTML section: date, version, inputs, bootstrap, models.
pub(crate) fn metadata_html(meta: &RunMeta) -> String {
    let mut s =
        String::from("<section id=\"metadata\"><h2>Run</h2>\n<table class=\"meta\"><tbody>\n");
    let _ = writeln!(
        s,
        "<tr><th>date</th><td>{}</td></tr>",
        esc(meta
            .date
            .as_deref()
            .unwrap_or("not recorded (pass --date, or set SOURCE_DATE_EPOCH)"))
    );
    let _ = writeln!(
        s,
        "<tr><th>clover version</th><td>{}</td></tr>",
        esc(&meta.version)
    );
    for (path, n) in &meta.inputs {
        let _ = writeln!(
            s,
            "<tr><th>run results</th><td><code>{}</code> ({n} result(s))</td></tr>",
            esc(path)
        );
    }
    for (path, n) in &meta.responses {
        let _ = writeln!(
            s,
            "<tr><th>responses</th><td><code>{}</code> ({n} response(s))</td></tr>",
            esc(path)
        );
    }
    let b = meta.bootstrap;
    let _ = writeln!(
        s,
        "<tr><th>intervals</th><td>{}</td></tr>",
        if b.replicates == 0 {
            "none (--bootstrap 0)".to_string()
        } else {
            format!(
                "95% percentile bootstrap over instances, {} replicates, seed {}",
                b.replicates, b.seed
            )
        }
    );
    s.push_str("</tbody></table>\n");
    if meta.models.is_empty() {
        s.push_str("<p class=\"note\">Models' full ids and sampling come from their response records: pass them with --responses.</p>\n");
    } else {
        s.push_str("<table class=\"models\"><thead><tr><th>model</th><th>task</th><th>adapter</th><th>model id</th><th>base URL</th><th>temperature</th><th>top_p</th><th>max_tokens</th><th>frequency_penalty</th><th>presence_penalty</th><th>seed</th><th>stop</th><th>max_context</th></tr></thead><tbody>\n");
        for m in meta.sorted_models() {
            let g = &m.generation;
            let opt = |v: Option<String>| v.map(|v| esc(&v)).unwrap_or_else(|| "—".into());
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
                esc(&m.model),
                task_name(m.task),
                esc(&g.adapter),
                opt(g.model_name.clone()),
                opt(g.base_url.clone()),
                opt(g.temperature.map(|v| v.to_string())),
                opt(g.top_p.map(|v| v.to_string())),
                opt(g.max_tokens.map(|v| v.to_string())),
                opt(g.frequency_penalty.map(|v| v.to_string())),
                opt(g.presence_penalty.map(|v| v.to_string())),
                opt(g.seed.map(|v| v.to_string())),
                opt(g.stop.as_ref().map(|v| format!("{v:?}"))),
                opt(g.max_context.map(|v| v.to_string())),
            );
        }
        s.push_str("</tbody></table>\n");
    }
    s.push_str("</section>\n");
    s
}

/// A self-contained HTML page: run metadata, a legend, a leaderboard, per task a chart per
/// metric and per repository and the table (each row linked to its samples when kept), then
/// context utilization and the judge. No script and no external resource; the only links
/// are relative ones to the samples files written beside the page.
pub fn to_html(report: &Report) -> String {
    let mut s = html_head("clover score report");
    s.push_str(&metadata_html(&report.meta));
    s.push_str("<section id=\"legend\"><h2>Metrics</h2>\n<dl class=\"legend\">\n");
    for (name, text) in METRIC_LEGEND {
        let _ = writeln!(s, "<dt>{}</dt><dd>{}</dd>", esc(name), esc(text));
    }
    s.push_str("</dl></section>\n");
    if report.rows.is_empty() {
        s.push_str("<p>No run results to score.</p>\n");
    }
    let boards = leaderboard(report);
    if !boards.is_empty() {
        s.push_str("<section id=\"leaderboard\"><h2>Leaderboard</h2>\n<p class=\"legend\">Per task and answer format, each model at its best setting on the headline metric (all repositories; settings that lost results to the maximum context are left out).</p>\n");
        for ((task, format), standings) in &boards {
            let metric = headline_metric(*task);
            let _ = writeln!(
                s,
                "<h3>{}{}</h3>\n<table class=\"leaderboard\" data-task=\"{}\" data-format=\"{}\"><thead><tr><th>rank</th><th>model</th><th>{} (%)</th><th>95% CI</th><th>setting</th><th>n</th><th>PO (%)</th></tr></thead><tbody>",
                esc(task_title(*task)),
                if format.is_empty() { String::new() } else { format!(" ({})", esc(format)) },
                task_name(*task),
                esc(format),
                esc(metric)
            );
            for (i, st) in standings.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                    i + 1,
                    esc(&st.row.model),
                    pct(st.row.metrics[metric]),
                    ci_cell(st.row, metric),
                    esc(&st.row.setting),
                    st.row.n,
                    st.po.map(pct).unwrap_or_else(|| "—".into())
                );
            }
            s.push_str("</tbody></table>\n");
        }
        s.push_str("</section>\n");
    }
    for task in tasks(report) {
        let names = table_metrics(report, task);
        let headline = headline_metric(task);
        let _ = writeln!(
            s,
            "<section class=\"task\" data-task=\"{}\"><h2>{}</h2>",
            task_name(task),
            esc(task_title(task))
        );
        let all: Vec<&Row> = report
            .rows
            .iter()
            .filter(|r| r.task == task && r.repo == ALL_REPOS)
            .collect();
        for metric in chart_metrics(task) {
            if !all.iter().any(|r| r.metrics.contains_key(*metric)) {
                continue;
            }
            let _ = writeln!(
                s,
                "<figure>{}<figcaption>{} against context length, per model (all repositories); bars are 95% intervals.</figcaption></figure>",
                plot(&all, task, metric, ALL_REPOS),
                esc(metric)
            );
        }
        let mut repos: Vec<&str> = report
            .rows
            .iter()
            .filter(|r| r.task == task && r.repo != ALL_REPOS)
            .map(|r| r.repo.as_str())
            .collect();
        repos.sort_unstable();
        repos.dedup();
        for repo in repos {
            let rows: Vec<&Row> = report
                .rows
                .iter()
                .filter(|r| r.task == task && r.repo == repo)
                .collect();
            let _ = writeln!(
                s,
                "<figure class=\"repo\">{}<figcaption>{} against context length in {}.</figcaption></figure>",
                plot(&rows, task, headline, repo),
                esc(headline),
                esc(repo)
            );
        }
        let formats = has_formats(report, task);
        s.push_str("<table><thead><tr><th>model</th>");
        if formats {
            s.push_str("<th>format</th>");
        }
        s.push_str("<th>setting</th><th>repo</th><th>n</th>");
        for n in &names {
            let _ = write!(s, "<th>{} (%)</th>", esc(n));
        }
        let _ = write!(s, "<th>{} 95% CI</th><th>samples</th>", esc(headline));
        s.push_str("</tr></thead><tbody>\n");
        for r in report.rows.iter().filter(|r| r.task == task) {
            let _ = write!(s, "<tr><td>{}</td>", esc(&r.model));
            if formats {
                let _ = write!(s, "<td>{}</td>", esc(&r.format));
            }
            let _ = write!(
                s,
                "<td>{}</td><td>{}</td><td class=\"num\">{}</td>",
                esc(&r.setting),
                esc(&r.repo),
                r.n
            );
            for n in &names {
                let v = r
                    .metrics
                    .get(*n)
                    .map(|v| pct(*v))
                    .unwrap_or_else(|| "–".into());
                let _ = write!(s, "<td class=\"num\">{v}</td>");
            }
            let _ = write!(s, "<td class=\"num\">{}</td>", ci_cell(r, headline));
            match &r.samples {
                Some(href) => {
                    let _ = write!(
                        s,
                        "<td><a class=\"samples\" href=\"{}\">{} result(s)</a></td>",
                        esc(href),
                        r.n
                    );
                }
                None => s.push_str("<td>–</td>"),
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody></table>\n");
        let _ = writeln!(
            s,
            "<p class=\"legend\">{} {}</p>",
            esc(ERROR_RATE_LEGEND),
            esc(&ci_legend(report))
        );
        if let Some(legend) = over_max_context_legend(report, task) {
            let _ = writeln!(s, "<p class=\"legend\">{}</p>", esc(&legend));
        }
        if let Some(legend) = judge_only_legend(report, task) {
            let _ = writeln!(s, "<p class=\"legend\">{}</p>", esc(&legend));
        }
        s.push_str("</section>\n");
    }
    if !report.rows.is_empty() && report.samples.is_empty() {
        s.push_str("<p class=\"note\">Samples: written with the report only when it goes to a file (-o FILE.html), as FILE.samples/*.jsonl beside it.</p>\n");
    }
    if !report.utilization.is_empty() {
        s.push_str("<h2>Context utilization (vs problem-only)</h2>\n<table><thead><tr><th>model</th><th>task</th><th>format</th><th>repo</th><th>metric</th><th>PO (%)</th><th>Δmax</th><th>best</th><th>Δmin</th><th>worst</th></tr></thead><tbody>\n");
        for u in &report.utilization {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&u.model),
                task_name(u.task),
                format_cell(&u.format),
                esc(&u.repo),
                u.metric,
                pct(u.po),
                signed_pct(u.delta_max),
                esc(&extreme(u, &u.best_setting)),
                signed_pct(u.delta_min),
                esc(&extreme(u, &u.worst_setting))
            );
        }
        s.push_str("</tbody></table>\n");
    }
    if !report.judge.is_empty() {
        s.push_str("<h2>LLM judge</h2>\n");
        let _ = writeln!(
            s,
            "<p>{}. 95% Wilson intervals. {}</p>",
            esc(judge_reading(report)),
            esc(JUDGE_LEGEND)
        );
        s.push_str("<table><thead><tr><th>model</th><th>vs</th><th>task</th><th>setting</th><th>n</th><th>win (%)</th><th>tie (%)</th><th>loss (%)</th><th>win 95% CI</th><th>undecided</th><th>judge-only</th></tr></thead><tbody>\n");
        for j in &report.judge {
            let (lo, hi) = j.win_ci();
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}–{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                esc(&j.model),
                esc(&j.opponent),
                task_name(j.task),
                esc(&j.setting),
                j.n(),
                pct(j.rate(j.win)),
                pct(j.rate(j.tie)),
                pct(j.rate(j.loss)),
                pct(lo),
                pct(hi),
                j.undecided,
                j.judge_only
            );
        }
        s.push_str("</tbody></table>\n");
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(model: &str, setting: &str, v: f64) -> Row {
        Row {
            model: model.into(),
            task: Task::CoverageTest,
            format: String::new(),
            setting: setting.into(),
            repo: ALL_REPOS.into(),
            n: 10,
            metrics: [
                ("success_rate".to_string(), v),
                ("execution_rate".to_string(), 1.0),
            ]
            .into_iter()
            .collect(),
            ci: BTreeMap::new(),
            over_max_context: 0,
            samples: None,
            mutation_operators: BTreeMap::new(),
        }
    }

    /// A scored result of a Task II instance asked in `format`, passed or not.
    fn targeted(format: &str, setting: &str, passed: bool) -> RunResult {
        serde_json::from_value(json!({
            "kind": "run_result", "schema_version": SCHEMA_VERSION,
            "id": format!("r/t.py::test_x#targeted_test#{setting}#{format}@m"),
            "instance_id": "i", "model": "m", "task": "targeted_test",
            "setting": setting, "repo": "r",
            "outcome": if passed { "passed" } else { "failed" },
            "tests": [], "coverage": [], "limit_hit": null, "exit_code": 0, "signal": null,
            "candidate": null, "answer": null, "message": null,
            "stdout_tail": "", "stderr_tail": "",
            "scoring": {"answer_format": format}, "duration_secs": 0.0
        }))
        .unwrap()
    }

    /// Results generate did not ask (over the model's maximum context) are in no row's `n` or
    /// rate, a setting whose results all were is no row, and the legend says how many.
    #[test]
    fn results_over_the_max_context_are_left_out() {
        let mut scorer = Scorer::new(true);
        for (setting, passed, over) in [
            ("po", true, false),
            ("po", false, false),
            ("8k", true, false),
            ("8k", true, true),
            ("16k", false, true),
        ] {
            let mut r = targeted("part", setting, passed);
            if over {
                r.outcome = Outcome::OverMaxContext;
            }
            scorer.add(&r);
        }
        let report = scorer.report();
        let rows: Vec<(&str, &str, u64, u64, f64)> = report
            .rows
            .iter()
            .map(|r| {
                let rate = r.metrics["execution_rate"];
                (
                    r.setting.as_str(),
                    r.repo.as_str(),
                    r.n,
                    r.over_max_context,
                    rate,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("po", "*", 2, 0, 0.5),
                ("8k", "*", 1, 1, 1.0),
                ("po", "r", 2, 0, 0.5),
                ("8k", "r", 1, 1, 1.0),
            ]
        );
        assert_eq!(report.over_max_context[&Task::TargetedTest], 2);
        let md = to_markdown(&report);
        assert!(
            md.contains(
                "2 result(s) were not asked, their prompt being over the model's maximum context"
            ) && md.contains("left out of Δmax and Δmin"),
            "{md}"
        );
        assert!(to_html(&report).contains("2 result(s) were not asked"));
        assert_eq!(to_json(&report)["over_max_context"]["targeted_test"], 2);
        // 8k lost a result, so it is no budget of Δ and PO has nothing to be compared with.
        assert!(report.utilization.is_empty(), "{:?}", report.utilization);
    }

    /// Judge-only results are in no row, not even as a row of their own when every result of
    /// a group is one, and every format says how many there are.
    #[test]
    fn judge_only_results_are_in_no_row() {
        let mut scorer = Scorer::new(true);
        for (setting, judge_only) in [("po", false), ("po", true), ("8k", true)] {
            let mut r = targeted("part", setting, true);
            if judge_only {
                r.outcome = Outcome::JudgeOnly;
            }
            scorer.add(&r);
        }
        let report = scorer.report();
        let rows: Vec<(&str, &str, u64)> = report
            .rows
            .iter()
            .map(|r| (r.setting.as_str(), r.repo.as_str(), r.n))
            .collect();
        assert_eq!(rows, [("po", "*", 1), ("po", "r", 1)]);
        assert_eq!(report.judge_only[&Task::TargetedTest], 2);
        let legend = "2 result(s) are judge-only";
        assert!(to_markdown(&report).contains(legend));
        assert!(to_html(&report).contains(legend));
        assert_eq!(to_json(&report)["judge_only"]["targeted_test"], 2);
    }

    /// Δ runs over the settings all of whose results were asked: a setting that lost some
    /// to the maximum context is neither best nor worst.
    #[test]
    fn a_setting_over_the_max_context_is_out_of_delta() {
        let mut partial = row("m", "16k", 0.9);
        partial.over_max_context = 3;
        let rows = [
            row("m", "po", 0.2),
            row("m", "1k", 0.3),
            row("m", "4k", 0.1),
            partial,
        ];
        let u = utilization(&rows);
        assert_eq!(u.len(), 1);
        assert!((u[0].delta_max - 0.1).abs() < 1e-9, "{u:?}");
        assert_eq!(
            (u[0].best_setting.as_str(), u[0].worst_setting.as_str()),
            ("1k", "4k")
        );
    }

    /// The papers report `part` and `full` in separate tables: each format is its own row,
    /// its own utilization, its own series, and its own ScoreRow id.
    #[test]
    fn answer_formats_are_never_pooled() {
        let mut scorer = Scorer::new(false);
        for (format, setting, passed) in [
            ("part", "po", true),
            ("part", "po", true),
            ("full", "po", false),
            ("full", "po", true),
            ("part", "8k", true),
            ("full", "8k", true),
        ] {
            scorer.add(&targeted(format, setting, passed));
        }
        let report = scorer.report();
        let rows: Vec<(&str, &str, u64)> = report
            .rows
            .iter()
            .map(|r| (r.format.as_str(), r.setting.as_str(), r.n))
            .collect();
        assert_eq!(
            rows,
            [
                ("full", "po", 2),
                ("full", "8k", 1),
                ("part", "po", 2),
                ("part", "8k", 1)
            ]
        );
        let md = to_markdown(&report);
        assert!(
            md.contains("| model | format | setting | repo | n |")
                && md.contains("| m | full | po | * | 2 | 50.0 |")
                && md.contains("| m | part | po | * | 2 | 100.0 |"),
            "{md}"
        );
        let u: Vec<(&str, f64)> = report
            .utilization
            .iter()
            .map(|u| (u.format.as_str(), u.delta_max))
            .collect();
        // Success needs the target used, which these results do not: every delta is 0.
        assert_eq!(u, [("full", 0.0), ("part", 0.0)]);
        // No budget differs from PO: no best or worst setting is named.
        assert!(
            md.contains(
                "| m | targeted_test | part | * | success_rate | 0.0 | +0.0 | — | +0.0 | — |"
            ),
            "{md}"
        );
        let ids: Vec<String> = to_score_rows(&report).into_iter().map(|r| r.id).collect();
        assert!(
            ids.contains(&"m/targeted_test/part/po/*".to_string()),
            "{ids:?}"
        );
        assert_eq!(to_json(&report)["rows"][0]["answer_format"], "full");
        let html = to_html(&report);
        assert!(
            html.contains("data-format=\"part\"") && html.contains("<th>format</th>"),
            "{html}"
        );
    }

    #[test]
    fn settings_sort_by_budget() {
        let mut s = vec!["128k", "8k", "po", "16k", "4k", "custom"];
        s.sort_by(|a, b| setting_order(a, b));
        assert_eq!(s, ["po", "4k", "8k", "16k", "128k", "custom"]);
        assert!(is_budget("4k") && is_budget("128k") && !is_budget("po") && !is_budget("custom"));
    }

    #[test]
    fn delta_max_and_min_against_po() {
        let rows = vec![
            row("m", "po", 0.5),
            row("m", "4k", 0.6),
            row("m", "8k", 0.8),
            row("m", "16k", 0.4),
            row("m", "32k", 0.8),
            row("solo", "4k", 0.9),
        ];
        let u = utilization(&rows);
        assert_eq!(u.len(), 1, "no PO row, no utilization");
        assert!((u[0].delta_max - 0.3).abs() < 1e-9);
        assert!((u[0].delta_min + 0.1).abs() < 1e-9);
        assert_eq!(u[0].best_setting, "8k", "ties go to the smaller budget");
        assert_eq!(u[0].worst_setting, "16k");
    }

    #[test]
    fn html_is_self_contained_and_escaped() {
        let report = Report {
            rows: vec![
                row("<m>", "po", 0.5),
                row("<m>", "4k", 0.7),
                row("b", "po", 0.1),
            ],
            ..Default::default()
        };
        let html = to_html(&report);
        assert!(html.contains("<svg") && html.contains("polyline"));
        assert!(html.contains("&lt;m&gt;") && !html.contains("<m>"));
        assert!(!html.contains("src=") && !html.contains("href=") && !html.contains("<script"));
        let md = to_markdown(&report);
        assert!(
            md.contains("| <m> | 4k | * | 10 | 100.0 | 70.0 | – |"),
            "{md}"
        );
    }
}
