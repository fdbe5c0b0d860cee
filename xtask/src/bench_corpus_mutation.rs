//! The mutation pass of `cargo xtask bench --corpus` (issue 20): the oracle's `po` responses of
//! Tasks II and III and of C++, run plain and with `--mutation`, and what the pass costs
//! against the plain run of the same responses.
//!
//! Only the problems those responses answer get mutants: their calibrated records (from the
//! corpus run) are the output a `calibrate --resume --mutants` continues, which judges the
//! mutants of the kept problems the output holds without calibrating them again (the default
//! K of 20 a problem). Then sandbox-run runs the responses once plain and once with the
//! sidecar, one after the other, and once more with the sidecar and every defence against
//! forgery off (issue 39): what the defences cost against the same pass without them, and
//! whether any oracle result differs with them (a false alarm).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, BufWriter, Write as _};
use std::path::Path;

use anyhow::Result;
use clover_protocol::{ProblemMutants, RunResult, Task};

use crate::bench_measure::read_records;

/// The mutation pass may cost at most this many times the plain run of the same responses.
pub const MUTATION_TARGET: f64 = 3.0;

/// The defences against forgery may cost at most this many times the same pass without them.
pub const DEFENCES_TARGET: f64 = 1.3;

/// sandbox-run's switches that turn every defence against forgery off, for comparison.
pub const DEFENCES_OFF: [&str; 8] = [
    "--witness",
    "off",
    "--machinery-watch",
    "off",
    "--equivalent-mutant",
    "off",
    "--report-record",
    "off",
];

/// A stage of the corpus run: name, subject, arguments; its wall time.
pub type Stage<'a> = dyn FnMut(&str, &str, &[&str]) -> Result<f64> + 'a;

/// What the pass measured, per package and in all.
#[derive(Default)]
pub struct MutationPass {
    /// Wall time of calibrate's mutant judging, of the plain sandbox-run and of the one with
    /// `--mutation`.
    pub judge_secs: f64,
    pub plain_secs: f64,
    pub with_secs: f64,
    /// The same pass with every defence against forgery off.
    pub bare_secs: f64,
    /// Oracle results whose outcome the defences changed: `id: bare → defended`.
    pub changed: Vec<String>,
    pub rows: BTreeMap<String, PassRow>,
}

/// One package's share.
#[derive(Default)]
pub struct PassRow {
    pub responses: usize,
    /// The sidecar's counts over the package's problems with a record.
    pub problems: usize,
    pub sampled: usize,
    pub kept: usize,
    pub survived: usize,
    pub invalid: usize,
    /// Over the oracle's results: kept mutants of their focus, killed, mutant runs made (each
    /// distinct candidate's pass once), their seconds, and the results' own plain seconds.
    pub focus_kept: u64,
    pub killed: u64,
    pub runs: u64,
    pub cold: u64,
    pub pass_secs: f64,
    pub plain_secs: f64,
}

/// The files the pass writes in `work`, and the stage runner of the corpus run (`stage`:
/// name, subject, arguments; the wall time).
pub fn run(
    work: &Path,
    manifest: &str,
    calibrated: &Path,
    responses: &Path,
    stage: &mut Stage<'_>,
) -> Result<MutationPass> {
    let file = |name: &str| work.join(name).display().to_string();
    let (problems, cal, picked) = (
        file("mutation-problems.jsonl"),
        file("mutation-calibrated.jsonl"),
        file("mutation-responses.jsonl"),
    );
    let sidecar = format!("{cal}.mutants.jsonl");
    let prefixes = pick_responses(responses, Path::new(&picked))?;
    pick_problems(calibrated, &prefixes, Path::new(&problems), Path::new(&cal))?;
    #[rustfmt::skip]
    let judge_secs = stage("calibrate", "mutants of the problems run", &[&problems, "--manifest", manifest, "--resume", "--mutants", "-o", &cal])?;
    let (plain_out, with_out) = (
        file("mutation-results-plain.jsonl"),
        file("mutation-results.jsonl"),
    );
    #[rustfmt::skip]
    let plain_secs = stage("sandbox-run", "oracle: II, III, C++ po", &[&picked, "--manifest", manifest, "-o", &plain_out])?;
    #[rustfmt::skip]
    let with_secs = stage("sandbox-run", "oracle: II, III, C++ po --mutation", &[&picked, "--manifest", manifest, "--mutation", &sidecar, "-o", &with_out])?;
    let bare_out = file("mutation-results-bare.jsonl");
    let mut bare_args = vec![
        picked.as_str(),
        "--manifest",
        manifest,
        "--mutation",
        &sidecar,
    ];
    bare_args.extend(DEFENCES_OFF);
    bare_args.extend(["-o", &bare_out]);
    let bare_secs = stage(
        "sandbox-run",
        "oracle: II, III, C++ po --mutation, defences off",
        &bare_args,
    )?;
    let bare: BTreeMap<String, RunResult> = read_records::<RunResult>(Path::new(&bare_out))?
        .into_iter()
        .map(|r| (r.id.clone(), r))
        .collect();

    let mut rows: BTreeMap<String, PassRow> = BTreeMap::new();
    for m in read_records::<ProblemMutants>(Path::new(&sidecar))? {
        let row = rows.entry(repo_of(&m.id)).or_default();
        row.problems += 1;
        row.kept += m.kept.len();
        row.survived += m.survived.len();
        row.invalid += m.invalid.len();
        row.sampled += m.kept.len() + m.survived.len() + m.invalid.len();
    }
    for r in read_records::<RunResult>(Path::new(&plain_out))? {
        rows.entry(r.repo.clone()).or_default().plain_secs += r.duration_secs;
    }
    // Responses with the same candidate and focus share one pass: its runs count once.
    let mut seen = BTreeSet::new();
    let mut changed = Vec::new();
    for r in read_records::<RunResult>(Path::new(&with_out))? {
        if let Some(b) = bare.get(&r.id).filter(|b| b.outcome != r.outcome) {
            changed.push(format!("{}: {:?} → {:?}", r.id, b.outcome, r.outcome));
        }
        let row = rows.entry(r.repo.clone()).or_default();
        row.responses += 1;
        let m = &r.mutation;
        row.focus_kept += u64::from(m.kept.unwrap_or(0));
        row.killed += u64::from(m.killed);
        let key = (r.repo.clone(), r.candidate.clone(), scoring_key(&r));
        if seen.insert(key) {
            row.runs += u64::from(m.run);
            row.cold += u64::from(m.cold);
            row.pass_secs += m.duration_secs;
        }
    }
    Ok(MutationPass {
        judge_secs,
        plain_secs,
        with_secs,
        bare_secs,
        changed,
        rows,
    })
}

fn scoring_key(r: &RunResult) -> String {
    serde_json::to_string(&r.scoring).unwrap_or_default()
}

fn repo_of(id: &str) -> String {
    id.split('/').next().unwrap_or(id).to_string()
}

/// Writes the `po` responses of Tasks II and III and of C++ to `to`; every prefix of their
/// instance ids before a `#` (a problem id is one of them).
fn pick_responses(from: &Path, to: &Path) -> Result<BTreeSet<String>> {
    let mut out = BufWriter::new(std::fs::File::create(to)?);
    let mut prefixes = BTreeSet::new();
    for line in BufReader::new(std::fs::File::open(from)?).lines() {
        let line = line?;
        let r: clover_protocol::Response = serde_json::from_str(&line)?;
        if r.setting != "po" || r.task == Task::AssertionCloze {
            continue;
        }
        for (at, _) in r.instance_id.match_indices('#') {
            prefixes.insert(r.instance_id[..at].to_string());
        }
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(prefixes)
}

/// Writes the calibrated records of the problems in `ids` to `calibrated` (the output
/// `--resume` continues) and their problems to `problems` (its input).
fn pick_problems(
    from: &Path,
    ids: &BTreeSet<String>,
    problems: &Path,
    calibrated: &Path,
) -> Result<()> {
    let mut p = BufWriter::new(std::fs::File::create(problems)?);
    let mut c = BufWriter::new(std::fs::File::create(calibrated)?);
    for line in BufReader::new(std::fs::File::open(from)?).lines() {
        let line = line?;
        let v: serde_json::Value = serde_json::from_str(&line)?;
        if !v["id"].as_str().is_some_and(|id| ids.contains(id)) {
            continue;
        }
        writeln!(c, "{line}")?;
        writeln!(p, "{}", serde_json::to_string(&v["problem"])?)?;
    }
    p.flush()?;
    c.flush()?;
    Ok(())
}

impl MutationPass {
    pub fn ratio(&self) -> f64 {
        self.with_secs / self.plain_secs.max(1e-9)
    }

    /// The pass with the defences against forgery over the same pass without them.
    pub fn defences_ratio(&self) -> f64 {
        self.with_secs / self.bare_secs.max(1e-9)
    }

    fn total(&self) -> PassRow {
        let mut t = PassRow::default();
        for r in self.rows.values() {
            t.responses += r.responses;
            t.problems += r.problems;
            t.sampled += r.sampled;
            t.kept += r.kept;
            t.survived += r.survived;
            t.invalid += r.invalid;
            t.focus_kept += r.focus_kept;
            t.killed += r.killed;
            t.runs += r.runs;
            t.cold += r.cold;
            t.pass_secs += r.pass_secs;
            t.plain_secs += r.plain_secs;
        }
        t
    }

    /// The targets missed: the pass's cost, and the oracle's kills (every kept mutant, by
    /// construction).
    pub fn missed(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.ratio() > MUTATION_TARGET {
            out.push(format!(
                "the mutation pass costs {:.2}× the plain sandbox-run of the same responses \
                 ({:.0} s against {:.0} s; want ≤ {MUTATION_TARGET}×)",
                self.ratio(),
                self.with_secs,
                self.plain_secs
            ));
        }
        if self.defences_ratio() > DEFENCES_TARGET {
            out.push(format!(
                "the defences against forgery cost {:.2}× the same pass without them ({:.0} s \
                 against {:.0} s; want ≤ {DEFENCES_TARGET}×)",
                self.defences_ratio(),
                self.with_secs,
                self.bare_secs
            ));
        }
        for c in &self.changed {
            out.push(format!("the defences changed an oracle result: {c}"));
        }
        for (repo, r) in &self.rows {
            if r.killed < r.focus_kept {
                out.push(format!(
                    "{repo}: the oracle kills {} of {} kept mutants (want all)",
                    r.killed, r.focus_kept
                ));
            }
        }
        out
    }

    pub fn section(&self, md: &mut String) -> Result<()> {
        writeln!(md, "\n### Mutation pass\n")?;
        writeln!(
            md,
            "The oracle's `po` responses of Tasks II and III and of C++ (a lone C++ chunk has no \
             pass), run by sandbox-run plain and then with `--mutation`: each candidate that \
             passes runs again against every kept mutant of its focus, stopping at its first \
             failing test. The mutants are calibrate's (`--resume --mutants`, K = 20 a problem, \
             seed 0) for the problems those responses answer, judged by their ground truth in \
             {:.0} s. Mutant runs count once per distinct candidate and focus; a run's seconds \
             are the pass's own (`mutation.duration_secs`). Target: the pass ≤ \
             {MUTATION_TARGET}× the plain run of the same responses, in the same run.\n",
            self.judge_secs
        )?;
        writeln!(
            md,
            "| package | responses | problems with mutants | sampled | kept | survived the ground truth | invalid | oracle kills | mutant runs (cold) | s per mutant run | s per plain run |"
        )?;
        writeln!(
            md,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        )?;
        let row = |md: &mut String, name: &str, r: &PassRow| -> Result<()> {
            writeln!(
                md,
                "| {name} | {} | {} | {} | {} | {} | {} | {} of {} | {} ({}) | {:.3} | {:.3} |",
                r.responses,
                r.problems,
                r.sampled,
                r.kept,
                r.survived,
                r.invalid,
                r.killed,
                r.focus_kept,
                r.runs,
                r.cold,
                r.pass_secs / (r.runs.max(1) as f64),
                r.plain_secs / (r.responses.max(1) as f64)
            )?;
            Ok(())
        };
        for (name, r) in &self.rows {
            row(md, name, r)?;
        }
        row(md, "all", &self.total())?;
        writeln!(
            md,
            "\nsandbox-run of these responses: {:.1} s plain, {:.1} s with `--mutation`: the pass \
             costs **{:.2}×** the plain run (target ≤ {MUTATION_TARGET}×).",
            self.plain_secs,
            self.with_secs,
            self.ratio()
        )?;
        writeln!(
            md,
            "\nThe same pass with every defence against forgery off (`{}`, docs/THREAT-MODEL.md): \
             {:.1} s; the defences cost **{:.2}×** (target ≤ {DEFENCES_TARGET}×), and change \
             the outcome of {} oracle result(s){}.",
            DEFENCES_OFF.join(" "),
            self.bare_secs,
            self.defences_ratio(),
            self.changed.len(),
            if self.changed.is_empty() {
                String::new()
            } else {
                format!(": {}", self.changed.join("; "))
            }
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(with_secs: f64, killed: u64) -> MutationPass {
        let row = PassRow {
            responses: 2,
            focus_kept: 10,
            killed,
            ..Default::default()
        };
        MutationPass {
            judge_secs: 1.0,
            plain_secs: 10.0,
            with_secs,
            bare_secs: with_secs,
            changed: Vec::new(),
            rows: [("pkg".to_string(), row)].into_iter().collect(),
        }
    }

    #[test]
    fn a_costly_pass_and_a_mutant_the_oracle_misses_are_named() {
        assert!(pass(30.0, 10).missed().is_empty());
        let missed = pass(30.1, 9).missed();
        assert_eq!(missed.len(), 2, "{missed:?}");
        assert!(missed[0].contains("3.01×"), "{missed:?}");
        assert!(
            missed[1].starts_with("pkg: the oracle kills 9 of 10"),
            "{missed:?}"
        );
    }

    /// Defences that cost more than their target, or that change an oracle's outcome (a
    /// false alarm), are named.
    #[test]
    fn costly_defences_and_a_false_alarm_are_named() {
        let mut p = pass(26.0, 10);
        p.bare_secs = 20.0;
        assert!(p.missed().is_empty(), "{:?}", p.missed());
        p.bare_secs = 19.9;
        p.changed = vec!["pkg/1: Passed → Forged".into()];
        let missed = p.missed();
        assert_eq!(missed.len(), 2, "{missed:?}");
        assert!(missed[0].contains("1.31×"), "{missed:?}");
        assert!(missed[1].contains("pkg/1: Passed → Forged"), "{missed:?}");
    }
}
