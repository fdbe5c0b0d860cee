//! The `bench-corpus` section of `docs/BENCHMARKS.md`: everything the corpus bench
//! measured, set against its targets, and the targets it missed, named.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use clover_protocol::{RunResult, Task};

use crate::bench_flat::{Flat, FLAT_COPIES, FLAT_TARGET};
use crate::bench_measure::{read_records, Measured};
use crate::bench_scores::{
    score_name, Built, Score, ScoreKey, MODELS, ORACLE_TARGET, RUN_SETTINGS,
};
use crate::bench_suites::{Suite, SUITE_RUNS};

pub(crate) const BEGIN: &str = "<!-- bench-corpus: begin -->";
pub(crate) const END: &str = "<!-- bench-corpus: end -->";

/// CLOVER's instances per model (its three tasks over every setting), and the cores of the
/// machine the projection assumes.
pub(crate) const CLOVER_INSTANCES: usize = 5312;
pub(crate) const CLOVER_CORES: usize = 2;
/// calibrate of a Python package may take at most this many times one bare `pytest --cov`
/// of its whole suite (issue 18).
pub(crate) const CALIBRATE_TARGET: f64 = 1.5;
/// One stage process of the run.
pub(crate) struct StageRun {
    pub(crate) stage: String,
    pub(crate) subject: String,
    pub(crate) cost: Measured,
}

/// A Python or C++ package of the corpus and what its first two stages said.
pub(crate) struct Package {
    pub(crate) name: String,
    pub(crate) language: &'static str,
    pub(crate) problems: usize,
    pub(crate) kept: u64,
    pub(crate) excluded: BTreeMap<String, u64>,
    /// Wall seconds of calibrate `--runs 1` of the same problems (Python only): what one run
    /// of the suite costs calibrate, against one bare run.
    pub(crate) one_run_secs: Option<f64>,
}

/// Everything the section says.
pub(crate) struct Figures {
    pub(crate) names: Vec<String>,
    pub(crate) packages: Vec<Package>,
    pub(crate) built: Built,
    /// Instances of other settings than `RUN_SETTINGS` run because their candidate or
    /// scoring facts are not any run setting's.
    pub(crate) elsewhere: usize,
    pub(crate) runs: Vec<StageRun>,
    pub(crate) pipeline_secs: f64,
    pub(crate) scores: BTreeMap<ScoreKey, Score>,
    pub(crate) failures: Vec<String>,
    pub(crate) durations: BTreeMap<String, (usize, f64)>,
    pub(crate) suites: Vec<Suite>,
    pub(crate) flat: Vec<Flat>,
    pub(crate) warm_cold: Vec<WarmCold>,
    pub(crate) mutation: crate::bench_corpus_mutation::MutationPass,
    /// This command's own peak: the floor of every `wait4` figure.
    pub(crate) xtask_kib: u64,
    pub(crate) total_secs: f64,
}

/// One model's responses through sandbox-run warm (the default) and `--cold`.
pub(crate) struct WarmCold {
    pub(crate) model: String,
    pub(crate) warm: Measured,
    pub(crate) cold: Measured,
    /// Python results, and the Σ of their run seconds either way.
    pub(crate) python: usize,
    pub(crate) warm_python_secs: f64,
    pub(crate) cold_python_secs: f64,
    /// Warm results that ran cold, and why (the first few).
    pub(crate) fell_back: usize,
    pub(crate) why: Vec<String>,
    /// Results whose outcome, tests or coverage differ between the two, by id.
    pub(crate) differ: Vec<String>,
}

impl WarmCold {
    pub(crate) fn compare(
        model: &str,
        warm: Measured,
        cold: Measured,
        w: &str,
        c: &str,
    ) -> Result<WarmCold> {
        let (w, c) = (
            read_records::<RunResult>(Path::new(w))?,
            read_records::<RunResult>(Path::new(c))?,
        );
        let mut out = WarmCold {
            model: model.into(),
            warm,
            cold,
            python: 0,
            warm_python_secs: 0.0,
            cold_python_secs: 0.0,
            fell_back: 0,
            why: Vec::new(),
            differ: Vec::new(),
        };
        let cold_by_id: BTreeMap<&str, &RunResult> = c.iter().map(|r| (r.id.as_str(), r)).collect();
        // What the scoring reads: the outcome, each test's name and outcome, the lines.
        let verdict = |r: &RunResult| {
            let tests: Vec<_> = r
                .tests
                .iter()
                .map(|t| (t.classname.clone(), t.name.clone(), t.outcome))
                .collect();
            (r.outcome, tests, r.coverage.clone())
        };
        for r in &w {
            let Some(k) = cold_by_id.get(r.id.as_str()) else {
                out.differ.push(format!("{} (no cold result)", r.id));
                continue;
            };
            if verdict(r) != verdict(k) {
                out.differ.push(r.id.clone());
            }
            if r.task != Some(Task::CppUnitTest) {
                out.python += 1;
                out.warm_python_secs += r.duration_secs;
                out.cold_python_secs += k.duration_secs;
            }
            if let Some(m) = r
                .message
                .as_deref()
                .and_then(|m| m.split("ran cold: ").nth(1))
            {
                out.fell_back += 1;
                if out.why.len() < 3 {
                    out.why.push(m.trim_end_matches(')').to_string());
                }
            }
        }
        Ok(out)
    }
}

pub(crate) fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

pub(crate) fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

impl Figures {
    /// The targets this run missed, one line each.
    pub(crate) fn missed(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (key, s) in &self.scores {
            let name = score_name(key);
            if s.oracle_by_setting.is_empty() {
                out.push(format!(
                    "{name}: the oracle scores nothing (want ≥ {} {} in every setting)",
                    pct(ORACLE_TARGET),
                    s.metric
                ));
            }
            for (setting, &(v, n)) in &s.oracle_by_setting {
                if v < ORACLE_TARGET {
                    out.push(format!(
                        "{name} {setting}: the oracle scores {} {} on {n} instance(s) (want ≥ {})",
                        pct(v),
                        s.metric,
                        pct(ORACLE_TARGET)
                    ));
                }
            }
        }
        for wc in &self.warm_cold {
            if !wc.differ.is_empty() {
                out.push(format!(
                    "{}: {} result(s) differ between the warm and the cold path: {}",
                    wc.model,
                    wc.differ.len(),
                    wc.differ
                        .iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        out.extend(self.mutation.missed());
        for p in &self.packages {
            if let Some(r) = self
                .calibrate_ratio(&p.name)
                .filter(|&r| r > CALIBRATE_TARGET)
            {
                out.push(format!(
                    "{}: calibrate takes {r:.2}× one bare `pytest --cov` of its suite (want ≤ {CALIBRATE_TARGET}×)",
                    p.name
                ));
            }
        }
        for f in &self.flat {
            if f.ratio() > FLAT_TARGET {
                out.push(format!(
                    "{}: peak memory {} at {}× vs {} at 1× ({:.2}×, want ≤ {FLAT_TARGET}×)",
                    f.stage,
                    mib(f.ten.own_kib),
                    FLAT_COPIES,
                    mib(f.one.own_kib),
                    f.ratio()
                ));
            }
        }
        out
    }

    /// A Python package's calibrate (`--runs 3`, every problem) against one bare run of its
    /// whole suite under `pytest --cov` (the suites' table).
    pub(crate) fn calibrate_ratio(&self, name: &str) -> Option<f64> {
        let p = self.packages.iter().find(|p| p.name == name)?;
        if p.language != "Python" {
            return None;
        }
        let suite = self.suites.iter().find(|s| s.name == name)?;
        let c = self
            .runs
            .iter()
            .find(|r| r.stage == "calibrate" && r.subject == name)?;
        Some(c.cost.secs / suite.bare_secs.max(1e-9))
    }

    pub(crate) fn command(&self) -> String {
        let mut c = "cargo xtask bench --corpus".to_string();
        for n in &self.names {
            c.push(' ');
            c.push_str(n);
        }
        c
    }

    pub(crate) fn section(&self) -> Result<String> {
        let mut md = String::new();
        writeln!(md, "{BEGIN}")?;
        writeln!(md, "## The whole pipeline on the corpus\n")?;
        writeln!(
            md,
            "Measured by `{}` on {} ({} cores, shared with other work): {:.1} min in all, \
             of which the pipeline's stages {:.1} min.",
            self.command(),
            crate::bench::hostname(),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            self.total_secs / 60.0,
            self.pipeline_secs / 60.0
        )?;
        writeln!(
            md,
            "Each package is extracted and calibrated (`--runs 3`) alone; pack-context (seed 0, \
             default settings and caps) runs once over the joined calibrated records; the \
             oracle and the `copy-operand` baseline answer the instances of {}, and the {} \
             instance(s) of other settings whose candidate (reference, prefix, suffix) or \
             scoring facts none of those has: neither reads the context, so every other \
             instance of every setting runs a candidate file already run, scored by the same \
             facts; sandbox-run runs once per model, score once over both.\n",
            RUN_SETTINGS
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(" and "),
            self.elsewhere
        )?;

        writeln!(md, "### Problems\n")?;
        writeln!(
            md,
            "| package | language | problems extracted | kept by calibrate | excluded (reason: count) | runs in sandbox-run | Σ run seconds |"
        )?;
        writeln!(md, "|---|---|---:|---:|---|---:|---:|")?;
        for p in &self.packages {
            let excluded = if p.excluded.is_empty() {
                "—".to_string()
            } else {
                p.excluded
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let (n, secs) = self.durations.get(&p.name).copied().unwrap_or_default();
            writeln!(
                md,
                "| {} | {} | {} | {} | {excluded} | {n} | {secs:.0} |",
                p.name, p.language, p.problems, p.kept
            )?;
        }

        writeln!(md, "\n### Warm and cold runs\n")?;
        writeln!(
            md,
            "sandbox-run ran each model's responses twice: warm (the default: a fork of a warm \
             pytest worker per candidate) and `--cold` (a fresh interpreter per candidate). \
             Outcome, tests and coverage must agree record for record. Σ run seconds are the \
             Python results' own `duration_secs`; CLOVER scale projects the warm time per \
             Python candidate to the paper's 5,312 instances on {CLOVER_CORES} cores.\n"
        )?;
        writeln!(
            md,
            "| model | Python results | Σ run s warm | Σ run s cold | warm / cold | stage wall warm / cold | stage CPU warm / cold (user + system, C++ included) | CLOVER scale | ran cold | results that differ |"
        )?;
        writeln!(md, "|---|---:|---:|---:|---:|---|---|---:|---|---:|")?;
        for wc in &self.warm_cold {
            let ratio = wc.warm_python_secs / wc.cold_python_secs.max(1e-9);
            let per = wc.warm_python_secs / (wc.python.max(1) as f64);
            let projected = per * CLOVER_INSTANCES as f64 / CLOVER_CORES as f64;
            let fell = if wc.fell_back == 0 {
                "0".to_string()
            } else {
                format!("{} ({})", wc.fell_back, wc.why.join("; "))
            };
            let cpu = wc
                .warm
                .cpu
                .zip(wc.cold.cpu)
                .map_or("—".to_string(), |(w, c)| {
                    let (w, c) = (w.user + w.system, c.user + c.system);
                    format!("{w:.0} s / {c:.0} s ({:.1}× less)", c / w.max(1e-9))
                });
            writeln!(
                md,
                "| {} | {} | {:.1} | {:.1} | {:.3}× ({:.1}× fewer) | {:.0} s / {:.0} s | {cpu} | {:.1} min | {fell} | {} |",
                wc.model,
                wc.python,
                wc.warm_python_secs,
                wc.cold_python_secs,
                ratio,
                1.0 / ratio.max(1e-9),
                wc.warm.secs,
                wc.cold.secs,
                projected / 60.0,
                wc.differ.len()
            )?;
        }

        self.mutation.section(&mut md)?;

        writeln!(md, "\n### Instances per task and setting\n")?;
        let mut settings: Vec<&String> = self.built.values().flat_map(|s| s.keys()).collect();
        settings.sort_by(|a, b| clover_score::setting_order(a, b));
        settings.dedup();
        write!(md, "| package | task |")?;
        for s in &settings {
            write!(md, " {s} |")?;
        }
        writeln!(md, " all |")?;
        writeln!(md, "|---|---|{}---:|", "---:|".repeat(settings.len()))?;
        let mut totals: BTreeMap<&String, usize> = BTreeMap::new();
        for p in &self.packages {
            for ((repo, task), by) in self.built.iter().filter(|((r, _), _)| *r == p.name) {
                write!(md, "| {repo} | {task} |")?;
                for s in &settings {
                    let n = by.get(*s).copied().unwrap_or(0);
                    *totals.entry(s).or_default() += n;
                    write!(md, " {n} |")?;
                }
                writeln!(md, " {} |", by.values().sum::<usize>())?;
            }
        }
        write!(md, "| all | all |")?;
        for s in &settings {
            write!(md, " {} |", totals.get(s).copied().unwrap_or(0))?;
        }
        writeln!(md, " {} |", totals.values().sum::<usize>())?;
        let packed: Vec<&String> = self.packages.iter().map(|p| &p.name).collect();
        let none: Vec<&str> = packed
            .iter()
            .filter(|n| !self.built.keys().any(|(r, _)| r == **n))
            .map(|n| n.as_str())
            .collect();
        if !none.is_empty() {
            writeln!(md, "\nNo instances at all: {}.", none.join(", "))?;
        }

        writeln!(md, "\n### Scores\n")?;
        writeln!(
            md,
            "Headline metric of each task in each answer format (score's own: RER for Task \
             I, success rate for II and III, and for C++ the success rate too: the file passes \
             and covers every focal line the ground truth covers), pooled over the settings \
             run; the oracle's lowest setting beside it. Tasks II and III are asked `part` \
             (the test's body) and `full` (the file up to the test's end), scored apart as the \
             paper reports them; Task I and C++ have one format (—). Target: the oracle ≥ {} \
             in every setting of every task and answer format of every package (✗ marks a \
             row with a setting below it).\n",
            pct(ORACLE_TARGET)
        )?;
        writeln!(
            md,
            "| package | task | answer format | metric | instances run | oracle | oracle's lowest setting | baseline (copy-operand) |"
        )?;
        writeln!(md, "|---|---|---|---|---:|---:|---|---:|")?;
        for p in &self.packages {
            for ((repo, task, format), s) in
                self.scores.iter().filter(|((r, _, _), _)| *r == p.name)
            {
                let get = |m: &str| s.by_model.get(m).map_or("—".into(), |v| pct(*v));
                let mark = if s.oracle_meets_target() { "" } else { " ✗" };
                let worst = s.worst_setting().map_or("—".into(), |(setting, v, n)| {
                    format!("{setting}: {} of {n}", pct(v))
                });
                writeln!(
                    md,
                    "| {repo} | {task} | {} | {} | {} | {}{mark} | {worst} | {} |",
                    if format.is_empty() { "—" } else { format },
                    s.metric,
                    s.n,
                    get(MODELS[0]),
                    get(MODELS[1])
                )?;
            }
        }
        if !self.failures.is_empty() {
            const SHOWN: usize = 40;
            writeln!(
                md,
                "\nOracle results that are not a success ({}{}):\n",
                self.failures.len(),
                if self.failures.len() > SHOWN {
                    format!(", the first {SHOWN}")
                } else {
                    String::new()
                }
            )?;
            for f in self.failures.iter().take(SHOWN) {
                writeln!(md, "- {}", f.replace('|', "\\|"))?;
            }
        }

        writeln!(md, "\n### Time and memory per stage\n")?;
        writeln!(
            md,
            "Peak memory two ways: the largest process of the stage's tree (`wait4`'s \
             `ru_maxrss`, pytest, compilers and sandbox supervisors included), and the stage \
             process alone (its `VmHWM`, sampled every 10 ms). The kernel charges a spawned \
             process with its parent's peak until it execs, so no tree figure here is below \
             this command's own peak ({}); a figure near it means the tree stayed under it. \
             Times and peaks over several processes are sums and maxima.\n",
            mib(self.xtask_kib)
        )?;
        writeln!(
            md,
            "| stage | processes | wall time | peak RSS, tree | peak RSS, stage alone |"
        )?;
        writeln!(md, "|---|---:|---:|---:|---:|")?;
        let mut order: Vec<(&str, &str)> = Vec::new();
        for r in &self.runs {
            let key = if r.stage == "generate" || r.stage == "sandbox-run" {
                (r.stage.as_str(), r.subject.as_str())
            } else {
                (r.stage.as_str(), "")
            };
            if !order.contains(&key) {
                order.push(key);
            }
        }
        for (stage, subject) in order {
            let rs: Vec<&StageRun> = self
                .runs
                .iter()
                .filter(|r| r.stage == stage && (subject.is_empty() || r.subject == subject))
                .collect();
            let name = if subject.is_empty() {
                stage.to_string()
            } else {
                format!("{stage} ({subject})")
            };
            writeln!(
                md,
                "| {name} | {} | {:.1} s | {} | {} |",
                rs.len(),
                rs.iter().map(|r| r.cost.secs).sum::<f64>(),
                mib(rs.iter().map(|r| r.cost.tree_kib).max().unwrap_or(0)),
                mib(rs.iter().map(|r| r.cost.own_kib).max().unwrap_or(0)),
            )?;
        }
        writeln!(
            md,
            "\nextract and calibrate per package. calibrate runs the suite `--runs` times (3 by \
             default, to find the problems whose lines change from run to run), on the cores \
             there are; the same problems calibrated with `--runs 1`, beside it, are what one run \
             of the suite costs it. CPU is that of calibrate and of every process it started, \
             sandboxed ones included, counted in a cgroup v1 `cpuacct` group made for the stage \
             (— where the machine has no such hierarchy). calibrate runs each test in a fork of \
             its own (what makes per-test coverage exact): the fork, the copy-on-write faults of \
             the pages the test's process writes and its exit are kernel time, which a bare run \
             hardly has. The system CPU over the cores against the wall time the target allows \
             ({CALIBRATE_TARGET}× the bare run): at 1× or more, the kernel's share alone is more \
             than the target allows the whole stage.\n"
        )?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        writeln!(
            md,
            "| package | extract | calibrate | calibrate / one bare `pytest --cov` of the suite (target ≤ {CALIBRATE_TARGET}×) | one run (`--runs 1`) / the same bare run | calibrate CPU, user / system | its system CPU over {cores} cores / {CALIBRATE_TARGET}× the bare run | calibrate peak RSS, tree | stage alone |"
        )?;
        writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")?;
        for p in &self.packages {
            let get = |stage: &str| {
                self.runs
                    .iter()
                    .find(|r| r.stage == stage && r.subject == p.name)
                    .map(|r| r.cost)
                    .unwrap_or_default()
            };
            let (e, c) = (get("extract"), get("calibrate"));
            let ratio = self
                .calibrate_ratio(&p.name)
                .map_or("—".to_string(), |r| format!("{r:.2}×"));
            let once = p
                .one_run_secs
                .zip(self.suites.iter().find(|s| s.name == p.name))
                .map_or("—".to_string(), |(secs, s)| {
                    format!("{secs:.1} s, {:.2}×", secs / s.bare_secs.max(1e-9))
                });
            let cpu = c.cpu.map_or("—".to_string(), |cpu| {
                format!("{:.1} s / {:.1} s", cpu.user, cpu.system)
            });
            let kernel = c
                .cpu
                .zip(self.suites.iter().find(|s| s.name == p.name))
                .filter(|_| p.language == "Python")
                .map_or("—".to_string(), |(cpu, s)| {
                    format!(
                        "{:.2}×",
                        cpu.system / cores as f64 / (CALIBRATE_TARGET * s.bare_secs).max(1e-9)
                    )
                });
            writeln!(
                md,
                "| {} | {:.2} s | {:.1} s | {ratio} | {once} | {cpu} | {kernel} | {} | {} |",
                p.name,
                e.secs,
                c.secs,
                mib(c.tree_kib),
                mib(c.own_kib)
            )?;
        }

        writeln!(md, "\n### Sandbox overhead on whole suites\n")?;
        writeln!(
            md,
            "Each Python package's suite (`pytest --cov` of its test folder), bare in the \
             repository and in the sandbox (`sandbox_bench pytest`); each C++ package's paired \
             test files, built with the library under test (`--coverage`, the library from its \
             sources both ways), run and measured with gcovr, bare in a copy of the \
             repository with the sandbox's own commands and through `GtestRun` with an empty \
             library cache (`sandbox_bench gtest`; sandbox-run itself builds a library once). \
             Interleaved, medians of {SUITE_RUNS}.\n"
        )?;
        writeln!(md, "| package | tests | bare | sandboxed | ratio |")?;
        writeln!(md, "|---|---|---:|---:|---:|")?;
        for s in &self.suites {
            writeln!(
                md,
                "| {} | `{}` | {:.2} s | {:.2} s | {:.2}× |",
                s.name,
                s.target,
                s.bare_secs,
                s.sandboxed_secs,
                s.sandboxed_secs / s.bare_secs
            )?;
        }
        let bare: f64 = self.suites.iter().map(|s| s.bare_secs).sum();
        let sand: f64 = self.suites.iter().map(|s| s.sandboxed_secs).sum();
        if !self.suites.is_empty() {
            writeln!(
                md,
                "| all | | {bare:.2} s | {sand:.2} s | {:.2}× |",
                sand / bare
            )?;
        }

        writeln!(md, "\n### Memory against the number of records\n")?;
        writeln!(
            md,
            "The same records, then {FLAT_COPIES} copies of each with new ids. Target: the \
             stage alone ≤ {FLAT_TARGET}× its 1× peak. What grows is the reader's table of \
             the ids seen (16 bytes a record, to catch a duplicate id).\n"
        )?;
        writeln!(
            md,
            "| stage | input | records 1× | peak 1×, stage alone | peak {FLAT_COPIES}×, stage alone | ratio | peak 1× / {FLAT_COPIES}×, tree | wall 1× / {FLAT_COPIES}× |"
        )?;
        writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|")?;
        for f in &self.flat {
            writeln!(
                md,
                "| {} | {} | {} | {} | {} | {:.2}× | {} / {} | {:.1} s / {:.1} s |",
                f.stage,
                f.what,
                f.records,
                mib(f.one.own_kib),
                mib(f.ten.own_kib),
                f.ratio(),
                mib(f.one.tree_kib),
                mib(f.ten.tree_kib),
                f.one.secs,
                f.ten.secs
            )?;
        }
        writeln!(md, "{END}")?;
        Ok(md)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_measure::Cpu;

    /// One package `a`: Task I, Task II `part` in two settings (the oracle scoring `po_part`
    /// and `8k_part` there) and Task II `full`.
    fn figures(po_part: f64, k8_part: f64, one_kib: u64, ten_kib: u64) -> Figures {
        let cost = |own_kib| Measured {
            secs: 1.0,
            tree_kib: 4096,
            own_kib,
            cpu: None,
        };
        let mut scores = BTreeMap::new();
        // (task, format, metric, the oracle per setting)
        type Cell<'a> = (&'a str, &'a str, &'a str, &'a [(&'a str, f64)]);
        let cells: [Cell; 3] = [
            ("assertion_cloze", "", "rer", &[("po", 1.0)]),
            (
                "targeted_test",
                "part",
                "success_rate",
                &[("po", po_part), ("8k", k8_part)],
            ),
            ("targeted_test", "full", "success_rate", &[("po", 1.0)]),
        ];
        for (task, format, metric, settings) in cells {
            let oracle_by_setting: BTreeMap<String, (f64, u64)> = settings
                .iter()
                .map(|(s, v)| (s.to_string(), (*v, 10)))
                .collect();
            let n = 10 * settings.len() as u64;
            let pooled = settings.iter().map(|(_, v)| v).sum::<f64>() / settings.len() as f64;
            scores.insert(
                ("a".to_string(), task.to_string(), format.to_string()),
                Score {
                    metric: metric.into(),
                    n,
                    by_model: [("oracle".into(), pooled), ("copy-operand".into(), 0.1)].into(),
                    oracle_by_setting,
                },
            );
        }
        Figures {
            names: vec!["a".into()],
            packages: vec![Package {
                name: "a".into(),
                language: "Python",
                problems: 12,
                kept: 11,
                excluded: [("failed".to_string(), 1)].into(),
                one_run_secs: Some(1.0),
            }],
            built: [(
                ("a".to_string(), "assertion_cloze".to_string()),
                [("po".to_string(), 10)].into(),
            )]
            .into(),
            elsewhere: 0,
            runs: vec![StageRun {
                stage: "calibrate".into(),
                subject: "a".into(),
                cost: cost(2048),
            }],
            pipeline_secs: 60.0,
            scores,
            failures: vec!["a#1 [assertion_cloze, Failed]: a | b".into()],
            durations: BTreeMap::new(),
            warm_cold: Vec::new(),
            suites: Vec::new(),
            flat: vec![Flat {
                stage: "score",
                what: "results".into(),
                records: 5,
                one: cost(one_kib),
                ten: cost(ten_kib),
            }],
            mutation: Default::default(),
            xtask_kib: 1024,
            total_secs: 120.0,
        }
    }

    #[test]
    fn a_missed_target_is_named_and_marked() {
        assert!(figures(0.95, 1.0, 1000, 1200).missed().is_empty());
        let md = figures(0.95, 1.0, 1000, 1200).section().unwrap();
        assert!(
            md.contains(
                "| a | assertion_cloze | — | rer | 10 | 100.0% | po: 100.0% of 10 | 10.0% |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| a | targeted_test | part | success_rate | 20 | 97.5% | po: 95.0% of 10 | 10.0% |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| a | targeted_test | full | success_rate | 10 | 100.0% | po: 100.0% of 10 | 10.0% |"
            ),
            "{md}"
        );

        // One setting of one format below the target fails the run, though the row's pooled
        // figure (95.5%) reaches it.
        let f = figures(1.0, 0.91, 1000, 1300);
        let missed = f.missed();
        assert_eq!(missed.len(), 2, "{missed:?}");
        assert_eq!(
            missed[0],
            "a targeted_test part 8k: the oracle scores 91.0% success_rate on 10 instance(s) (want ≥ 95.0%)"
        );
        assert!(missed[1].starts_with("score: peak memory"), "{}", missed[1]);
        let md = f.section().unwrap();
        assert!(md.starts_with(BEGIN) && md.trim_end().ends_with(END));
        assert!(
            md.contains(
                "| a | targeted_test | part | success_rate | 20 | 95.5% ✗ | 8k: 91.0% of 10 | 10.0% |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| a | targeted_test | full | success_rate | 10 | 100.0% | po: 100.0% of 10 | 10.0% |"
            ),
            "{md}"
        );
        assert!(md.contains("| a | Python | 12 | 11 | failed: 1 |"), "{md}");
        // A `|` in a failure's message does not break the table.
        assert!(md.contains("a \\| b"), "{md}");
        assert!(md.contains("`cargo xtask bench --corpus a`"), "{md}");

        // A format the oracle has no score in is a miss too.
        let mut f = figures(1.0, 1.0, 1000, 1000);
        let s = f
            .scores
            .get_mut(&(
                "a".to_string(),
                "targeted_test".to_string(),
                "full".to_string(),
            ))
            .unwrap();
        s.oracle_by_setting.clear();
        s.by_model.remove("oracle");
        assert_eq!(
            f.missed(),
            ["a targeted_test full: the oracle scores nothing (want ≥ 95.0% success_rate in every setting)"]
        );
        assert!(f
            .section()
            .unwrap()
            .contains("| a | targeted_test | full | success_rate | 10 | — ✗ | — | 10.0% |"));
    }

    #[test]
    fn calibrate_is_set_against_one_bare_run_of_the_suite_with_three_runs_and_with_one() {
        let mut f = figures(1.0, 1.0, 1000, 1000);
        f.packages[0].one_run_secs = Some(0.6);
        f.suites.push(Suite {
            name: "a".into(),
            target: "tests".into(),
            bare_secs: 0.5,
            sandboxed_secs: 0.5,
        });
        // Three runs took 1.0 s: 2× the bare run, a miss; the one run's 1.2× is said beside it.
        assert_eq!(
            f.missed(),
            ["a: calibrate takes 2.00× one bare `pytest --cov` of its suite (want ≤ 1.5×)"]
        );
        let md = f.section().unwrap();
        assert!(
            md.contains("| a | 0.00 s | 1.0 s | 2.00× | 0.6 s, 1.20× | — | — |"),
            "{md}"
        );
        f.packages[0].one_run_secs = None;
        assert!(f.section().unwrap().contains("| 2.00× | — |"));
        // With its CPU counted: the kernel's share over the cores against 1.5 × the bare run.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        f.runs[0].cost.cpu = Some(Cpu {
            user: 1.25,
            system: 0.75 * cores,
        });
        let md = f.section().unwrap();
        assert!(md.contains("| 2.00× | — | 1.2 s / "), "{md}");
        assert!(md.contains(" | 1.00× | "), "{md}");
    }

    #[test]
    fn warm_and_cold_are_set_side_by_side_in_run_seconds_and_in_cpu() {
        let mut f = figures(1.0, 1.0, 1000, 1000);
        let spent = |secs, user, system| Measured {
            secs,
            cpu: Some(Cpu { user, system }),
            ..Default::default()
        };
        f.warm_cold.push(WarmCold {
            model: "oracle".into(),
            warm: spent(10.0, 12.0, 8.0),
            cold: spent(60.0, 110.0, 10.0),
            python: 100,
            warm_python_secs: 10.0,
            cold_python_secs: 80.0,
            fell_back: 0,
            why: Vec::new(),
            differ: Vec::new(),
        });
        let md = f.section().unwrap();
        assert!(
            md.contains("| oracle | 100 | 10.0 | 80.0 | 0.125× (8.0× fewer) | 10 s / 60 s | 20 s / 120 s (6.0× less) |"),
            "{md}"
        );
        f.warm_cold[0].cold.cpu = None;
        assert!(f.section().unwrap().contains("| 10 s / 60 s | — |"));
    }
}
