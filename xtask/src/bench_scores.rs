//! What the corpus bench scores: the instances it runs (`RUN_SETTINGS`, new candidates
//! only), the score report read back per package, task and answer format, the oracle's
//! failures, and the run seconds of each model.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter, Write as _};
use std::path::Path;

use anyhow::{Context, Result};
use clover_protocol::{Instance, RecordReader, RunResult, Task, DEFAULT_MAX_LINE_BYTES};

/// The settings whose instances are answered and run.
pub(crate) const RUN_SETTINGS: &[&str] = &["po"];
/// The oracle and the trivial baseline (copy the other operand in Task I, `assert True`
/// elsewhere).
pub(crate) const MODELS: &[&str] = &["oracle", "copy-operand"];
/// The oracle's headline metric must reach this on every task of every package.
pub(crate) const ORACLE_TARGET: f64 = 0.95;
/// The name of a task as the wire and score's tables write it.
pub(crate) fn task_name(task: Task) -> String {
    serde_json::to_value(task)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// Instances built: (repo, task) → setting → count.
pub(crate) type Built = BTreeMap<(String, String), BTreeMap<String, usize>>;

/// What a model's answer to an instance is run and scored by, whatever its setting: the
/// problem, task and format, the reference, the text around the answer, the scoring facts.
pub(crate) fn run_identity(i: &Instance) -> (String, Task, String, String, String, String, String) {
    (
        i.problem_id.clone(),
        i.task,
        i.answer_format.clone(),
        i.reference.clone(),
        i.exec.prefix.clone(),
        i.exec.suffix.clone(),
        serde_json::to_string(&i.scoring).unwrap_or_default(),
    )
}

/// Copies the instances of `RUN_SETTINGS` from `from` to `to`, and each instance of another
/// setting whose [`run_identity`] none copied before has (the second number); counts every
/// instance built.
pub(crate) fn keep_settings(from: &Path, to: &Path) -> Result<(Built, usize)> {
    let read = || -> Result<Vec<(String, Instance)>> {
        let input = BufReader::new(std::fs::File::open(from)?);
        input
            .lines()
            .enumerate()
            .map(|(n, line)| {
                let line = line?;
                let i: Instance = serde_json::from_str(&line)
                    .with_context(|| format!("{}:{}: not an instance", from.display(), n + 1))?;
                Ok((line, i))
            })
            .collect()
    };
    let instances = read()?;
    let run = |i: &Instance| RUN_SETTINGS.contains(&i.setting.as_str());
    let mut seen: std::collections::HashSet<_> = instances
        .iter()
        .filter(|(_, i)| run(i))
        .map(|(_, i)| run_identity(i))
        .collect();
    let mut built = Built::new();
    let mut elsewhere = 0;
    let mut out = BufWriter::new(std::fs::File::create(to)?);
    for (line, i) in &instances {
        *built
            .entry((i.repo.clone(), task_name(i.task)))
            .or_default()
            .entry(i.setting.clone())
            .or_default() += 1;
        if run(i) {
            writeln!(out, "{line}")?;
        } else if seen.insert(run_identity(i)) {
            elsewhere += 1;
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    Ok((built, elsewhere))
}

/// A package's task in one answer format: (repo, task, format). The format is score's
/// `answer_format` (`part`, `full`), empty for a task asked in one format (Task I, C++).
pub(crate) type ScoreKey = (String, String, String);

/// One task of one package in one answer format in score's report, over the run settings.
#[derive(Default)]
pub(crate) struct Score {
    pub(crate) metric: String,
    /// The oracle's instances over every setting run.
    pub(crate) n: u64,
    /// model → headline metric pooled over the settings run.
    pub(crate) by_model: BTreeMap<String, f64>,
    /// setting → the oracle's headline metric there and its instances. The target holds in
    /// each: a pooled figure would hide a setting the oracle fails in.
    pub(crate) oracle_by_setting: BTreeMap<String, (f64, u64)>,
}

impl Score {
    /// The setting where the oracle scores lowest (the first in setting order on a tie).
    pub(crate) fn worst_setting(&self) -> Option<(&str, f64, u64)> {
        let mut settings: Vec<(&String, &(f64, u64))> = self.oracle_by_setting.iter().collect();
        settings.sort_by(|a, b| clover_score::setting_order(a.0, b.0));
        settings
            .into_iter()
            .fold(None, |worst, (s, &(v, n))| match worst {
                Some((_, w, _)) if w <= v => worst,
                _ => Some((s.as_str(), v, n)),
            })
    }

    /// Whether the oracle reaches the target in every setting run (and was run at all).
    pub(crate) fn oracle_meets_target(&self) -> bool {
        !self.oracle_by_setting.is_empty()
            && self
                .oracle_by_setting
                .values()
                .all(|&(v, _)| v >= ORACLE_TARGET)
    }
}

/// score's per-repository rows: (repo, task, format) → Score, pooled over settings with each
/// setting's oracle figure kept.
pub(crate) fn read_scores(report: &Path) -> Result<BTreeMap<ScoreKey, Score>> {
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report)?)?;
    // (repo, task, format, model) → (Σ n·value, Σ n)
    let mut sums: BTreeMap<(ScoreKey, String), (f64, u64)> = BTreeMap::new();
    let mut out: BTreeMap<ScoreKey, Score> = BTreeMap::new();
    for row in json["rows"]
        .as_array()
        .context("score's JSON has no rows")?
    {
        let repo = row["repo"].as_str().unwrap_or("");
        if repo == clover_score::ALL_REPOS {
            continue;
        }
        let task: Task = serde_json::from_value(row["task"].clone())?;
        let metric = clover_score::headline_metric(task);
        let (Some(v), Some(n)) = (row["metrics"][metric].as_f64(), row["n"].as_u64()) else {
            continue;
        };
        let model = row["model"].as_str().unwrap_or("").to_string();
        let key = (
            repo.to_string(),
            task_name(task),
            row["answer_format"].as_str().unwrap_or("").to_string(),
        );
        let s = sums.entry((key.clone(), model.clone())).or_default();
        s.0 += v * n as f64;
        s.1 += n;
        let score = out.entry(key).or_default();
        score.metric = metric.into();
        if model == MODELS[0] {
            let setting = row["setting"].as_str().unwrap_or("").to_string();
            score.oracle_by_setting.insert(setting, (v, n));
        }
    }
    for ((key, model), (sum, n)) in sums {
        let s = out.entry(key).or_default();
        if model == MODELS[0] {
            s.n = n;
        }
        s.by_model.insert(model, sum / n.max(1) as f64);
    }
    Ok(out)
}

/// `repo task [format]`: a score's cell as the misses name it.
pub(crate) fn score_name((repo, task, format): &ScoreKey) -> String {
    if format.is_empty() {
        format!("{repo} {task}")
    } else {
        format!("{repo} {task} {format}")
    }
}

/// The oracle's results that do not count as a success, by score's own verdict.
pub(crate) fn oracle_failures(results: &Path) -> Result<Vec<String>> {
    let f = std::fs::File::open(results)?;
    let mut reader = RecordReader::new(
        BufReader::new(f),
        &results.display().to_string(),
        DEFAULT_MAX_LINE_BYTES,
    );
    let mut out = Vec::new();
    while let Some(r) = reader.next_record::<RunResult>() {
        let (_, r) = r?;
        let Some(task) = r.task else { continue };
        if clover_score::verdict(&r, task).success {
            continue;
        }
        let message = r
            .message
            .as_deref()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        let limit = r
            .limit_hit
            .map(|l| format!(", limit {l:?}"))
            .unwrap_or_default();
        out.push(format!(
            "{} [{}, {:?}{limit}]: {message}",
            r.id,
            task_name(task),
            r.outcome
        ));
    }
    Ok(out)
}

/// Per repository: runs and the sum of their `duration_secs` (both models).
pub(crate) fn run_durations(results: &[String]) -> Result<BTreeMap<String, (usize, f64)>> {
    let mut out: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    for path in results {
        let mut reader = RecordReader::new(
            BufReader::new(std::fs::File::open(path)?),
            path,
            DEFAULT_MAX_LINE_BYTES,
        );
        while let Some(r) = reader.next_record::<RunResult>() {
            let (_, r) = r?;
            let e = out.entry(r.repo).or_default();
            e.0 += 1;
            e.1 += r.duration_secs;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clover_protocol::{ExecSpec, RecordKind, SCHEMA_VERSION};

    fn instance(id: &str, repo: &str, task: Task, setting: &str) -> String {
        serde_json::to_string(&Instance {
            kind: RecordKind::Instance,
            schema_version: SCHEMA_VERSION,
            id: id.into(),
            problem_id: format!("{repo}/p"),
            repo: repo.into(),
            task,
            setting: setting.into(),
            answer_format: "code".into(),
            prompt: "p".into(),
            messages: Vec::new(),
            prompt_tokens: 1,
            context_files: Vec::new(),
            reference: "r".into(),
            exec: ExecSpec::default(),
            scoring: BTreeMap::new(),
        })
        .unwrap()
    }

    #[test]
    fn every_instance_is_counted_and_only_the_run_settings_and_new_candidates_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            instance("a#1", "a", Task::AssertionCloze, "po"),
            // The same candidate and facts as a#1's: its po result is its result.
            instance("a#2", "a", Task::AssertionCloze, "4k"),
            instance("a#3", "a", Task::AssertionCloze, "po"),
            // No po instance of b's problem: run.
            instance("b#1", "b", Task::CoverageTest, "8k"),
            // Another reference than a's po instances: run.
            instance("a#4", "a", Task::AssertionCloze, "16k")
                .replace(r#""reference":"r""#, r#""reference":"r2""#),
        ];
        let from = dir.path().join("in.jsonl");
        let to = dir.path().join("out.jsonl");
        std::fs::write(&from, lines.join("\n") + "\n").unwrap();
        let (built, elsewhere) = keep_settings(&from, &to).unwrap();
        let a = &built[&("a".to_string(), "assertion_cloze".to_string())];
        assert_eq!((a["po"], a["4k"], a["16k"]), (2, 1, 1));
        assert_eq!(built[&("b".into(), "coverage_test".into())]["8k"], 1);
        assert_eq!(built.len(), 2);
        assert_eq!(elsewhere, 2);
        let kept = std::fs::read_to_string(&to).unwrap();
        assert_eq!(
            kept,
            format!("{}\n{}\n{}\n{}\n", lines[0], lines[2], lines[3], lines[4])
        );

        std::fs::write(&from, "{not json\n").unwrap();
        let e = keep_settings(&from, &to).unwrap_err().to_string();
        assert!(e.ends_with("in.jsonl:1: not an instance"), "{e}");
    }

    #[test]
    fn scores_are_pooled_over_settings_and_never_over_answer_formats() {
        let dir = tempfile::tempdir().unwrap();
        let row =
            |repo: &str, model: &str, task: &str, format: &str, setting: &str, n: u64, v: f64| {
                serde_json::json!({"model": model, "task": task, "answer_format": format,
                "setting": setting, "repo": repo, "n": n,
                "metrics": {"rer": v, "em": 0.0, "success_rate": v}})
            };
        let report = serde_json::json!({"rows": [
            row("a", "oracle", "assertion_cloze", "", "po", 1, 1.0),
            row("a", "oracle", "assertion_cloze", "", "4k", 3, 0.5),
            row("a", "copy-operand", "assertion_cloze", "", "po", 4, 0.25),
            row("a", "oracle", "targeted_test", "part", "po", 2, 1.0),
            row("a", "oracle", "targeted_test", "full", "po", 2, 0.5),
            // The pooled rows of every repository are not a package.
            row(clover_score::ALL_REPOS, "oracle", "assertion_cloze", "", "po", 9, 0.0),
        ], "utilization": []});
        let path = dir.path().join("score.json");
        std::fs::write(&path, report.to_string()).unwrap();
        let scores = read_scores(&path).unwrap();
        let key =
            |task: &str, format: &str| ("a".to_string(), task.to_string(), format.to_string());
        assert_eq!(scores.len(), 3);
        let s = &scores[&key("assertion_cloze", "")];
        assert_eq!((s.metric.as_str(), s.n), ("rer", 4));
        assert_eq!(s.by_model["oracle"], 0.625);
        assert_eq!(s.by_model["copy-operand"], 0.25);
        // The pooled 62.5% hides nothing: each setting is kept, and the lowest is named.
        assert_eq!(s.oracle_by_setting["po"], (1.0, 1));
        assert_eq!(s.worst_setting(), Some(("4k", 0.5, 3)));
        assert!(!s.oracle_meets_target());
        // part and full are apart: full's 50% is not averaged into part's 100%.
        let part = &scores[&key("targeted_test", "part")];
        let full = &scores[&key("targeted_test", "full")];
        assert_eq!(
            (part.metric.as_str(), part.by_model["oracle"]),
            ("success_rate", 1.0)
        );
        assert_eq!(full.by_model["oracle"], 0.5);
        assert!(part.oracle_meets_target() && !full.oracle_meets_target());
    }
}
