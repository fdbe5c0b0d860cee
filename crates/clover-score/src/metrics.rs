//! What one run result is worth, and the sums over many.

use std::collections::BTreeMap;

use clover_protocol::{FileCoverage, LineRanges, Outcome, RunResult, Task};
use serde_json::Value;

use clover_answer::align_in_lines;
use clover_extract::{is_constant_operand_as, ConstantReading};

use crate::pyexpr::{identifiers, normalize};

/// Why a correct Task I prediction does not count for RER.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrivialRule {
    /// `assert <constant>`: true whatever the code does.
    ConstantInUnary,
    /// `assert <constant> OP <constant>`: compares nothing the code computed.
    ConstantVsConstant,
    /// `assert x == x`: the prediction repeats the other side's text.
    RepeatsOtherSide,
}

/// The Task I facts of `scoring` (written by pack-context).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClozeFacts {
    pub reference: String,
    pub form: String,
    pub operator: Option<String>,
    pub other_operand: Option<String>,
    pub other_is_constant: Option<bool>,
    pub masked_line: Option<String>,
}

impl ClozeFacts {
    pub fn from_scoring(scoring: &BTreeMap<String, Value>) -> Self {
        let s = |k: &str| scoring.get(k).and_then(|v| v.as_str()).map(str::to_string);
        ClozeFacts {
            reference: s("reference").unwrap_or_default(),
            form: s("form").unwrap_or_default(),
            operator: s("operator"),
            other_operand: s("other_operand"),
            other_is_constant: scoring.get("other_is_constant").and_then(|v| v.as_bool()),
            masked_line: s("masked_line"),
        }
    }
}

/// The RER rule a prediction falls under, if any, with constants read as `constants` says.
pub fn trivial_rule(
    prediction: &str,
    facts: &ClozeFacts,
    constants: ConstantReading,
) -> Option<TrivialRule> {
    let is_constant = |text: &str| is_constant_operand_as(text, constants);
    let constant = is_constant(prediction);
    if facts.form == "unary" && constant {
        return Some(TrivialRule::ConstantInUnary);
    }
    if facts.form == "binary" {
        // The other side is read again from its text, in the same reading as the prediction;
        // extract's flag (the `ast` reading) serves only an instance without the text.
        let other_constant = match facts.other_operand.as_deref() {
            Some(other) => is_constant(other),
            None => facts.other_is_constant.unwrap_or(false),
        };
        if constant && other_constant {
            return Some(TrivialRule::ConstantVsConstant);
        }
        if facts.operator.as_deref() == Some("==")
            && facts
                .other_operand
                .as_deref()
                .is_some_and(|o| normalize(o) == normalize(prediction))
        {
            return Some(TrivialRule::RepeatsOtherSide);
        }
    }
    None
}

/// What one run result is worth. Which fields a task uses: see the crate doc.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// The candidate ran and passed (ER for Task I, execution rate for II/III, pass rate for
    /// C++).
    pub executed: bool,
    /// Task I: RER; Task II: executed and the model's own code names the target (CLOVER's
    /// success); Task III: executed and covered every block; C++: passed and covered every
    /// line of the focal source the ground truth covers (false when the instance does not
    /// carry the ground truth's lines).
    pub success: bool,
    /// Task II, clover's stricter reading: a success that also ran a line of the target
    /// beyond what importing its module runs (the test really called it).
    pub called: bool,
    /// Task I: the prediction equals the reference (whitespace outside strings aside).
    pub exact: Option<bool>,
    /// Task I: the lengths in characters of the prediction and the reference, in the
    /// whitespace-normal form EM compares (for CLOVER §4.1's EM-vs-RER gap); no prediction,
    /// no lengths.
    pub lengths: Option<(usize, usize)>,
    /// C++: it compiled.
    pub compiled: Option<bool>,
    /// C++: covered lines of the focal file the ground truth covers, over those it covers.
    pub focal_vs_gt: Option<f64>,
    pub no_code: bool,
    /// The response's call failed (outcome `api_error`): no answer, and not the model's doing,
    /// so the result counts in no other field.
    pub api_error: bool,
    /// The screen for reward hacking refused the candidate (outcome `rejected`): the model's
    /// doing, so a failed execution, and counted apart too.
    pub rejected: bool,
    /// The run's report disagreed with the runner's own record of it (outcome `forged`): a
    /// failed execution with no success, no pass, no coverage and no killed mutants, counted
    /// apart too.
    pub forged: bool,
    /// Tasks II and III with sandbox-run's mutation pass: the kept mutants of the instance's
    /// focus and how many the candidate killed (none unless it passed on the original code).
    pub mutants: Option<(u32, u32)>,
}

/// Lines `coverage` lists for `path` (paths compare equal or as a suffix at a `/`).
pub fn covered<'a>(coverage: &'a [FileCoverage], path: &str) -> Option<&'a LineRanges> {
    let path = path.trim_start_matches("./");
    coverage
        .iter()
        .find(|f| {
            let p = f.path.trim_start_matches("./");
            p == path
                || p.strip_suffix(path).is_some_and(|rest| rest.ends_with('/'))
                || path.strip_suffix(p).is_some_and(|rest| rest.ends_with('/'))
        })
        .map(|f| &f.lines)
}

fn line_ranges(v: Option<&Value>) -> Option<LineRanges> {
    let v = v?;
    if let Ok(r) = serde_json::from_value::<LineRanges>(v.clone()) {
        return Some(r);
    }
    serde_json::from_value::<Vec<u32>>(v.clone())
        .ok()
        .map(LineRanges::from_lines)
}

fn u32_field(v: &Value, k: &str) -> Option<u32> {
    v.get(k).and_then(|x| x.as_u64()).map(|x| x as u32)
}

/// Task II as CLOVER reads it: the answer's code names the target (an identifier equal to the
/// last part of its name).
pub fn names_target(code: &str, target: &Value) -> bool {
    let Some(name) = target.get("name").and_then(|v| v.as_str()) else {
        return false;
    };
    let short = name.rsplit('.').next().unwrap_or(name);
    identifiers(code).contains(short)
}

/// Task II as clover reads it: the answer's code names the target, and a line of its
/// definition ran beyond what importing its module runs (`import_lines`, else the first).
pub fn uses_target(code: &str, coverage: &[FileCoverage], target: &Value) -> bool {
    if !names_target(code, target) {
        return false;
    }
    let (Some(path), Some(start), Some(end)) = (
        target.get("path").and_then(|v| v.as_str()),
        u32_field(target, "start_line"),
        u32_field(target, "end_line"),
    ) else {
        return false;
    };
    let Some(lines) = covered(coverage, path) else {
        return false;
    };
    let import_lines = line_ranges(target.get("import_lines"));
    (start..=end).any(|l| {
        lines.contains(l)
            && match &import_lines {
                Some(imp) => !imp.contains(l),
                None => l != start,
            }
    })
}

/// Task III: whether every required line of every block is covered. A block's required lines
/// are its `lines` (the executable lines the ground truth covered) when given, else all of
/// `start_line..=end_line`.
pub fn covers_blocks(coverage: &[FileCoverage], blocks: &Value) -> bool {
    let Some(blocks) = blocks.as_array() else {
        return false;
    };
    !blocks.is_empty()
        && blocks.iter().all(|b| {
            let (Some(path), Some(start), Some(end)) = (
                b.get("path").and_then(|v| v.as_str()),
                u32_field(b, "start_line"),
                u32_field(b, "end_line"),
            ) else {
                return false;
            };
            let Some(lines) = covered(coverage, path) else {
                return false;
            };
            match line_ranges(b.get("lines")) {
                Some(req) if !req.is_empty() => req.iter().all(|l| lines.contains(l)),
                _ => (start..=end).all(|l| lines.contains(l)),
            }
        })
}

/// The code the model wrote: `answer` when sandbox-run recorded it, else the whole candidate.
fn answer_code(r: &RunResult) -> &str {
    r.answer.as_deref().or(r.candidate.as_deref()).unwrap_or("")
}

/// The model's own code: its answer without the lines the prompt gave it to complete
/// (`scoring.given`: a `full` answer's setup and declaration), so that an answer that copies
/// the setup, whose fixtures may well construct the target, does not pass for using it.
fn own_code(r: &RunResult) -> std::borrow::Cow<'_, str> {
    let code = answer_code(r);
    let Some(given) = r.scoring.get("given").and_then(Value::as_str) else {
        return code.into();
    };
    let given: std::collections::HashSet<&str> = given
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    code.lines()
        .filter(|l| !given.contains(l.trim()))
        .collect::<Vec<_>>()
        .join("\n")
        .into()
}

/// Task I: the prediction, from `answer`, or else by aligning the candidate with the mask.
fn prediction(r: &RunResult, facts: &ClozeFacts) -> Option<String> {
    if let Some(a) = &r.answer {
        return Some(a.clone());
    }
    let masked = facts.masked_line.as_deref()?;
    align_in_lines(r.candidate.as_deref()?, masked)
}

/// Judges one run result, with RER's constants as `ast.Constant` ([`ConstantReading::Ast`]).
pub fn verdict(r: &RunResult, task: Task) -> Verdict {
    verdict_with(r, task, ConstantReading::Ast)
}

/// Judges one run result, with RER's constants read as `constants` says.
pub fn verdict_with(r: &RunResult, task: Task, constants: ConstantReading) -> Verdict {
    if r.outcome == Outcome::ApiError {
        return Verdict {
            api_error: true,
            ..Verdict::default()
        };
    }
    if r.outcome == Outcome::Forged {
        // Whatever the run's records say, it earns nothing: it compiled (a C++ candidate),
        // and its kept mutants count, none of them killed.
        return Verdict {
            forged: true,
            compiled: (task == Task::CppUnitTest).then_some(true),
            exact: (task == Task::AssertionCloze).then_some(false),
            mutants: r.mutation.kept.map(|kept| (kept, 0)),
            ..Verdict::default()
        };
    }
    let passed = r.outcome == Outcome::Passed;
    let no_code = r.outcome == Outcome::NoCode;
    let mut v = Verdict {
        executed: passed,
        no_code,
        rejected: r.outcome == Outcome::Rejected,
        mutants: r.mutation.kept.map(|kept| (kept, r.mutation.killed)),
        ..Verdict::default()
    };
    match task {
        Task::AssertionCloze => {
            let facts = ClozeFacts::from_scoring(&r.scoring);
            let pred = prediction(r, &facts);
            let reference = normalize(&facts.reference);
            let normal = pred.as_deref().map(normalize);
            v.exact = Some(normal.as_deref() == Some(reference.as_str()));
            v.lengths = normal.map(|p| (p.chars().count(), reference.chars().count()));
            v.success = passed
                && pred
                    .as_deref()
                    .is_some_and(|p| trivial_rule(p, &facts, constants).is_none());
        }
        Task::TargetedTest => {
            let own = own_code(r);
            let target = r.scoring.get("target");
            v.success = passed && target.is_some_and(|t| names_target(&own, t));
            v.called = v.success && target.is_some_and(|t| uses_target(&own, &r.coverage, t));
        }
        Task::CoverageTest => {
            v.success = passed
                && r.scoring
                    .get("blocks")
                    .is_some_and(|b| covers_blocks(&r.coverage, b));
        }
        Task::CppUnitTest => {
            // Compiled: a candidate went to the compiler and came through. A file whose
            // chunk answers never all arrived has no candidate and was not compiled.
            v.compiled = Some(
                r.candidate.is_some()
                    && !matches!(r.outcome, Outcome::CompileError | Outcome::NoCode),
            );
            let path = r
                .scoring
                .get("focal_path")
                .or_else(|| r.scoring.get("focal_source"))
                .and_then(|v| v.as_str())
                .filter(|p| !p.contains('\n'));
            let gt = line_ranges(r.scoring.get("focal_coverage"));
            if let (Some(path), Some(gt)) = (path, gt.filter(|g| !g.is_empty())) {
                let hit = covered(&r.coverage, path)
                    .map(|c| gt.iter().filter(|l| c.contains(*l)).count())
                    .unwrap_or(0);
                v.focal_vs_gt = Some(hit as f64 / gt.len() as f64);
                v.success = passed && hit == gt.len();
            }
        }
    }
    v
}

/// Sums of verdicts over a group of results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub n: u64,
    pub executed: u64,
    pub success: u64,
    pub called: u64,
    pub exact: u64,
    pub compiled: u64,
    pub no_code: u64,
    /// Results whose call failed: counted in `n`, left out of every rate but `error_rate`.
    pub api_errors: u64,
    /// Results the screen refused to run.
    pub rejected: u64,
    /// Results whose report was forged.
    pub forged: u64,
    pub focal_sum: f64,
    pub focal_n: u64,
    /// Kept mutants of the results with a mutation pass, and those killed.
    pub mutants_kept: u64,
    pub mutants_killed: u64,
}

impl Tally {
    pub fn add(&mut self, v: &Verdict) {
        self.n += 1;
        self.executed += u64::from(v.executed);
        self.success += u64::from(v.success);
        self.called += u64::from(v.called);
        self.exact += u64::from(v.exact == Some(true));
        self.compiled += u64::from(v.compiled == Some(true));
        self.no_code += u64::from(v.no_code);
        self.api_errors += u64::from(v.api_error);
        self.rejected += u64::from(v.rejected);
        self.forged += u64::from(v.forged);
        if let Some(f) = v.focal_vs_gt {
            self.focal_sum += f;
            self.focal_n += 1;
        }
        if let Some((kept, killed)) = v.mutants {
            self.mutants_kept += u64::from(kept);
            self.mutants_killed += u64::from(killed);
        }
    }

    /// The metrics of `task`, as fractions in [0, 1]. `error_rate` is over all `n` results;
    /// every other rate is over the results that have an answer (`n` − API errors), as an
    /// API failure says nothing of the model. With no such result there are no such rates.
    pub fn metrics(&self, task: Task) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        if self.n > 0 {
            m.insert("error_rate".into(), self.api_errors as f64 / self.n as f64);
        }
        let answered = self.n - self.api_errors;
        if answered == 0 {
            return m;
        }
        let rate = |k: u64| k as f64 / answered as f64;
        match task {
            Task::AssertionCloze => {
                m.insert("em".into(), rate(self.exact));
                m.insert("er".into(), rate(self.executed));
                m.insert("rer".into(), rate(self.success));
            }
            Task::TargetedTest | Task::CoverageTest => {
                m.insert("execution_rate".into(), rate(self.executed));
                m.insert("success_rate".into(), rate(self.success));
                if task == Task::TargetedTest {
                    m.insert("called_rate".into(), rate(self.called));
                }
            }
            Task::CppUnitTest => {
                m.insert("compile_rate".into(), rate(self.compiled));
                m.insert("pass_rate".into(), rate(self.executed));
                m.insert("success_rate".into(), rate(self.success));
                if self.focal_n > 0 {
                    m.insert(
                        "focal_coverage_vs_gt".into(),
                        self.focal_sum / self.focal_n as f64,
                    );
                }
            }
        }
        // Pooled over the row's kept mutants, not averaged over results: an instance with
        // more mutants weighs more, as TestGenEval pools its mutants too.
        if self.mutants_kept > 0 {
            m.insert(
                MUTATION_SCORE.into(),
                self.mutants_killed as f64 / self.mutants_kept as f64,
            );
        }
        m.insert("no_code_rate".into(), rate(self.no_code));
        m.insert("rejected_rate".into(), rate(self.rejected));
        m.insert("forged_rate".into(), rate(self.forged));
        m
    }
}

/// Killed over kept mutants of the instances' focus (`sandbox-run --mutation`), in a row
/// only when its results had a mutation pass.
pub const MUTATION_SCORE: &str = "mutation_score";

/// The metric a task's plots and context-utilization numbers use.
pub fn headline_metric(task: Task) -> &'static str {
    match task {
        Task::AssertionCloze => "rer",
        Task::TargetedTest | Task::CoverageTest | Task::CppUnitTest => "success_rate",
    }
}

/// The metric names of a task, in table order.
pub fn metric_names(task: Task) -> &'static [&'static str] {
    match task {
        Task::AssertionCloze => &[
            "em",
            "er",
            "rer",
            "no_code_rate",
            "rejected_rate",
            "forged_rate",
            "error_rate",
        ],
        Task::TargetedTest => &[
            "execution_rate",
            "success_rate",
            "called_rate",
            "no_code_rate",
            "rejected_rate",
            "forged_rate",
            "error_rate",
        ],
        Task::CoverageTest => &[
            "execution_rate",
            "success_rate",
            "no_code_rate",
            "rejected_rate",
            "forged_rate",
            "error_rate",
        ],
        Task::CppUnitTest => &[
            "compile_rate",
            "pass_rate",
            "success_rate",
            "focal_coverage_vs_gt",
            "no_code_rate",
            "rejected_rate",
            "forged_rate",
            "error_rate",
        ],
    }
}

#[cfg(test)]
mod tests {
    /// A `full` answer that copies the setup it was given (whose fixture builds the target)
    /// and asserts nothing does not use the target; one whose own lines call it does.
    #[test]
    fn copying_the_given_setup_is_not_using_the_target() {
        let given = "import pytest\nfrom pkg import Account\n\n@pytest.fixture\ndef acct():\n    return Account(5)\n\ndef test_x(acct):\n";
        let target =
            json!({"name": "Account", "path": "src/pkg/a.py", "start_line": 10, "end_line": 20});
        let scoring = json!({"target": target, "given": given, "answer_format": "full"});
        let check = |answer: &str| {
            let mut r = result(Task::TargetedTest, Outcome::Passed, answer, scoring.clone());
            r.coverage = vec![cov("src/pkg/a.py", 10..=14)];
            verdict(&r, Task::TargetedTest).success
        };
        assert!(!check(&format!("{given}    assert True\n")));
        assert!(check(&format!(
            "{given}    assert Account(2).balance == 2\n"
        )));
    }

    /// A forged run earns nothing whatever its records claim: no pass, no success, no
    /// coverage, no killed mutant; it is counted apart, on every task.
    #[test]
    fn a_forged_run_earns_nothing_and_is_counted_apart() {
        let blocks = json!({"blocks": [{"path": "src/a.py", "start_line": 1, "end_line": 2}]});
        let mut r = result(
            Task::CoverageTest,
            Outcome::Forged,
            "def test(): pass",
            blocks,
        );
        r.coverage = vec![cov("src/a.py", 1..=2)];
        r.mutation.kept = Some(4);
        r.mutation.killed = 4;
        let v = verdict(&r, Task::CoverageTest);
        assert_eq!((v.executed, v.success, v.forged), (false, false, true));
        assert_eq!(v.mutants, Some((4, 0)));
        let mut tally = Tally::default();
        tally.add(&v);
        tally.add(&verdict(
            &result(Task::CoverageTest, Outcome::Passed, "x", json!({})),
            Task::CoverageTest,
        ));
        let m = tally.metrics(Task::CoverageTest);
        assert_eq!((m["forged_rate"], m["execution_rate"]), (0.5, 0.5));
        for task in [
            Task::AssertionCloze,
            Task::TargetedTest,
            Task::CoverageTest,
            Task::CppUnitTest,
        ] {
            assert!(metric_names(task).contains(&"forged_rate"), "{task:?}");
        }
    }

    /// A candidate the screen refused is a failed execution on every task, and its own rate.
    #[test]
    fn a_rejected_candidate_fails_and_is_counted_apart() {
        let blocks = json!({"blocks": [{"path": "src/a.py", "start_line": 1, "end_line": 2}]});
        let mut r = result(Task::CoverageTest, Outcome::Rejected, "os._exit(0)", blocks);
        r.coverage = vec![cov("src/a.py", 1..=2)];
        let v = verdict(&r, Task::CoverageTest);
        assert_eq!((v.executed, v.success, v.rejected), (false, false, true));
        let mut tally = Tally::default();
        tally.add(&v);
        tally.add(&verdict(
            &result(Task::CoverageTest, Outcome::Passed, "x", json!({})),
            Task::CoverageTest,
        ));
        let m = tally.metrics(Task::CoverageTest);
        assert_eq!((m["rejected_rate"], m["execution_rate"]), (0.5, 0.5));
        for task in [
            Task::AssertionCloze,
            Task::TargetedTest,
            Task::CoverageTest,
            Task::CppUnitTest,
        ] {
            assert!(metric_names(task).contains(&"rejected_rate"), "{task:?}");
        }
    }

    /// The mutation score pools killed over kept mutants of the results that had a pass; an
    /// API error counts in none, and a row without a pass has no score.
    #[test]
    fn the_mutation_score_pools_kept_mutants() {
        let with = |outcome, kept, killed| {
            let mut r = result(Task::CoverageTest, outcome, "x", json!({}));
            r.mutation.kept = Some(kept);
            r.mutation.killed = killed;
            verdict(&r, Task::CoverageTest)
        };
        let mut tally = Tally::default();
        tally.add(&with(Outcome::Passed, 4, 3));
        tally.add(&with(Outcome::Failed, 1, 0));
        tally.add(&with(Outcome::ApiError, 5, 0));
        tally.add(&verdict(
            &result(Task::CoverageTest, Outcome::Passed, "x", json!({})),
            Task::CoverageTest,
        ));
        assert_eq!(tally.metrics(Task::CoverageTest)[MUTATION_SCORE], 0.6);
        let mut none = Tally::default();
        none.add(&verdict(
            &result(Task::TargetedTest, Outcome::Passed, "x", json!({})),
            Task::TargetedTest,
        ));
        assert!(!none
            .metrics(Task::TargetedTest)
            .contains_key(MUTATION_SCORE));
    }

    use super::*;
    use clover_protocol::{RecordKind, SCHEMA_VERSION};
    use serde_json::json;

    fn result(task: Task, outcome: Outcome, answer: &str, scoring: Value) -> RunResult {
        RunResult {
            kind: RecordKind::RunResult,
            schema_version: SCHEMA_VERSION,
            id: "i@m".into(),
            instance_id: "i".into(),
            model: "m".into(),
            task: Some(task),
            setting: "po".into(),
            repo: "r".into(),
            outcome,
            tests: vec![],
            coverage: vec![],
            limit_hit: None,
            exit_code: None,
            signal: None,
            candidate: Some(format!("from ledger import Ledger\n{answer}")),
            answer: Some(answer.into()),
            message: None,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            scoring: serde_json::from_value(scoring).unwrap(),
            duration_secs: 0.0,
            mutation: Default::default(),
        }
    }

    fn cloze(pred: &str, outcome: Outcome, scoring: Value) -> Verdict {
        verdict(
            &result(Task::AssertionCloze, outcome, pred, scoring),
            Task::AssertionCloze,
        )
    }

    #[test]
    fn em_versus_er() {
        let s = json!({"reference": "x", "form": "binary", "operator": "in",
            "other_operand": "d", "other_is_constant": false, "masked_line": "assert <MASK> in d"});
        // `x in d` vs `x in d.keys()`: both run, only one is the reference.
        let a = cloze("x", Outcome::Passed, s.clone());
        assert_eq!((a.exact, a.executed, a.success), (Some(true), true, true));
        let s2 = json!({"reference": "d", "form": "binary", "operator": "in",
            "other_operand": "x", "other_is_constant": false, "masked_line": "assert x in <MASK>"});
        let b = cloze("d.keys()", Outcome::Passed, s2.clone());
        assert_eq!((b.exact, b.executed, b.success), (Some(false), true, true));
        // Layout does not matter for EM; a failing exact answer is EM but not ER.
        let c = cloze(" d ", Outcome::Failed, s2);
        assert_eq!((c.exact, c.executed, c.success), (Some(true), false, false));
    }

    /// RER's constants are `ast.Constant` by default: a tuple and a signed number are not, so
    /// they count; `--rer-constants clover` reads them as constants. The other side is read
    /// again from its text, so an instance whose flag was written in another reading scores
    /// in the reading asked for.
    #[test]
    fn rer_constants_follow_the_reading_asked_for() {
        let (ast, clover) = (ConstantReading::Ast, ConstantReading::Clover);
        let unary = ClozeFacts {
            form: "unary".into(),
            ..Default::default()
        };
        for p in ["(1, 'a')", "-3", "()"] {
            assert_eq!(trivial_rule(p, &unary, ast), None, "{p}");
            assert_eq!(
                trivial_rule(p, &unary, clover),
                Some(TrivialRule::ConstantInUnary),
                "{p}"
            );
        }
        // Flagged constant by an older extract, as clover read it then.
        let tuple_other = ClozeFacts {
            form: "binary".into(),
            operator: Some("==".into()),
            other_operand: Some("(1500, 0)".into()),
            other_is_constant: Some(true),
            ..Default::default()
        };
        assert_eq!(trivial_rule("710", &tuple_other, ast), None);
        assert_eq!(
            trivial_rule("710", &tuple_other, clover),
            Some(TrivialRule::ConstantVsConstant)
        );
        let const_other = ClozeFacts {
            other_operand: Some("710".into()),
            ..tuple_other.clone()
        };
        assert_eq!(trivial_rule("-3.5", &const_other, ast), None);
        assert_eq!(
            trivial_rule("-3.5", &const_other, clover),
            Some(TrivialRule::ConstantVsConstant)
        );
        // Through `verdict_with`: the same passing answer is RER in one reading only.
        let s = json!({"reference": "x", "form": "unary", "operator": null,
            "other_operand": null, "other_is_constant": null, "masked_line": "assert <MASK>"});
        let r = result(Task::AssertionCloze, Outcome::Passed, "-1", s);
        assert!(verdict_with(&r, Task::AssertionCloze, ast).success);
        assert!(!verdict_with(&r, Task::AssertionCloze, clover).success);
        assert!(
            verdict(&r, Task::AssertionCloze).success,
            "ast is the default"
        );
    }

    #[test]
    fn rer_rules() {
        let unary = ClozeFacts {
            reference: "led.is_closed()".into(),
            form: "unary".into(),
            ..Default::default()
        };
        assert_eq!(
            trivial_rule("True", &unary, ConstantReading::Ast),
            Some(TrivialRule::ConstantInUnary)
        );
        assert_eq!(
            trivial_rule("led.is_closed()", &unary, ConstantReading::Ast),
            None
        );

        let const_other = ClozeFacts {
            reference: "amount.cents".into(),
            form: "binary".into(),
            operator: Some("==".into()),
            other_operand: Some("710".into()),
            other_is_constant: Some(true),
            ..Default::default()
        };
        assert_eq!(
            trivial_rule("710", &const_other, ConstantReading::Ast),
            Some(TrivialRule::ConstantVsConstant)
        );
        assert_eq!(
            trivial_rule("amount.cents", &const_other, ConstantReading::Ast),
            None
        );

        let eq = ClozeFacts {
            reference: "5".into(),
            form: "binary".into(),
            operator: Some("==".into()),
            other_operand: Some("ledger.balance( 'cash')".into()),
            other_is_constant: Some(false),
            ..Default::default()
        };
        assert_eq!(
            trivial_rule("ledger.balance('cash')", &eq, ConstantReading::Ast),
            Some(TrivialRule::RepeatsOtherSide)
        );
        assert_eq!(
            trivial_rule("5", &eq, ConstantReading::Ast),
            None,
            "a constant against a non-constant counts"
        );
        let le = ClozeFacts {
            operator: Some("<=".into()),
            ..eq.clone()
        };
        assert_eq!(
            trivial_rule("ledger.balance('cash')", &le, ConstantReading::Ast),
            None,
            "only equality"
        );

        // Through `verdict`: a passing trivial prediction is ER but not RER.
        let s = json!({"reference": "led.closed", "form": "unary", "operator": null,
            "other_operand": null, "other_is_constant": null, "masked_line": "assert <MASK>"});
        let v = cloze("True", Outcome::Passed, s);
        assert_eq!((v.exact, v.executed, v.success), (Some(false), true, false));
    }

    #[test]
    fn prediction_recovered_from_candidate_when_answer_missing() {
        let s = json!({"reference": "42", "form": "binary", "operator": "==",
            "other_operand": "total", "other_is_constant": false,
            "masked_line": "    assert total == <MASK>"});
        let mut r = result(Task::AssertionCloze, Outcome::Passed, "42", s);
        r.answer = None;
        r.candidate = Some("def test():\n    total = 42\n    assert total == 42\n".into());
        let v = verdict(&r, Task::AssertionCloze);
        assert_eq!((v.exact, v.success), (Some(true), true));
    }

    fn cov(path: &str, lines: impl IntoIterator<Item = u32>) -> FileCoverage {
        FileCoverage {
            path: path.into(),
            lines: LineRanges::from_lines(lines),
        }
    }

    /// Task II in its two readings: `success` (CLOVER: the test runs and its own code names
    /// the target) and `called` (clover: it also ran a line of the target beyond what an
    /// import runs). `assert Ledger.__name__ == "Ledger"` is a success and not a call.
    #[test]
    fn task_two_success_names_the_target_and_called_runs_it() {
        let target = json!({"target": {"name": "Ledger", "kind": "class",
            "path": "src/ledger/accounts.py", "start_line": 10, "end_line": 40,
            "import_lines": [[10, 10], [12, 12], [20, 20]]}});
        let check = |answer: &str, outcome: Outcome, path: &str, lines: &[u32]| {
            let mut r = result(Task::TargetedTest, outcome, answer, target.clone());
            r.coverage = vec![cov(path, lines.iter().copied())];
            let v = verdict(&r, Task::TargetedTest);
            (v.executed, v.success, v.called)
        };
        let acc = "src/ledger/accounts.py";
        let uses =
            "    led = Ledger()\n    led.post('cash', 5)\n    assert led.balance('cash') == 5\n";
        assert_eq!(
            check(uses, Outcome::Passed, acc, &[10, 12, 13, 20, 21]),
            (true, true, true)
        );
        // Only the lines an import runs: named, not called.
        let named = "    assert Ledger.__name__ == 'Ledger'\n";
        assert_eq!(
            check(named, Outcome::Passed, acc, &[10, 12, 20]),
            (true, true, false)
        );
        // Executed, but the answer never names it (the prefix's import does not count).
        assert_eq!(
            check("    assert helper()\n", Outcome::Passed, acc, &[10, 13]),
            (true, false, false)
        );
        // Named and executed, but failing: neither.
        assert_eq!(
            check(
                uses,
                Outcome::Failed,
                "/tmp/x/src/ledger/accounts.py",
                &[13]
            ),
            (false, false, false)
        );
        // Without import_lines, the header line alone is not a call.
        let t = json!({"target": {"name": "parse_amount", "kind": "function",
            "path": "src/ledger/money.py", "start_line": 90, "end_line": 110}});
        let mut r = result(
            Task::TargetedTest,
            Outcome::Passed,
            "assert parse_amount('1') == 100",
            t,
        );
        r.coverage = vec![cov("src/ledger/money.py", [90])];
        let v = verdict(&r, Task::TargetedTest);
        assert_eq!((v.success, v.called), (true, false));
        r.coverage = vec![cov("src/ledger/money.py", [90, 91])];
        assert!(verdict(&r, Task::TargetedTest).called);
        let mut tally = Tally::default();
        tally.add(&v);
        tally.add(&verdict(&r, Task::TargetedTest));
        let m = tally.metrics(Task::TargetedTest);
        assert_eq!((m["success_rate"], m["called_rate"]), (1.0, 0.5));
        // Task III has no such reading.
        assert!(!tally
            .metrics(Task::CoverageTest)
            .contains_key("called_rate"));
    }

    #[test]
    fn task_three_success_needs_every_block_line() {
        let s = json!({"blocks": [
            {"path": "src/ledger/money.py", "start_line": 101, "end_line": 106},
            {"path": "src/ledger/report.py", "start_line": 37, "end_line": 42,
             "lines": [[37, 38], [40, 42]]}]});
        let mut r = result(Task::CoverageTest, Outcome::Passed, "assert f()", s.clone());
        r.coverage = vec![
            cov("src/ledger/money.py", 100..=106),
            cov("src/ledger/report.py", [37, 38, 40, 41, 42]),
        ];
        assert!(
            verdict(&r, Task::CoverageTest).success,
            "line 39 is not required"
        );
        r.coverage[0] = cov("src/ledger/money.py", [101, 102, 103, 104, 106]);
        assert!(!verdict(&r, Task::CoverageTest).success, "one line short");
        r.coverage.truncate(1);
        assert!(
            !verdict(&r, Task::CoverageTest).success,
            "a block's file not run"
        );
        let mut r = result(Task::CoverageTest, Outcome::Error, "x", s);
        r.coverage = vec![
            cov("src/ledger/money.py", 100..=106),
            cov("src/ledger/report.py", 37..=42),
        ];
        assert!(
            !verdict(&r, Task::CoverageTest).success,
            "covering is not enough"
        );
    }

    /// A file whose every test was skipped or xfailed ran nothing: it is a failed execution
    /// however much its imports covered, on every task.
    #[test]
    fn a_run_of_only_skipped_tests_is_a_failed_execution() {
        let s = json!({"blocks": [{"path": "src/ledger/money.py", "start_line": 101, "end_line": 106}]});
        let mut r = result(Task::CoverageTest, Outcome::NoTestsRun, "assert f()", s);
        r.coverage = vec![cov("src/ledger/money.py", 100..=106)];
        let v = verdict(&r, Task::CoverageTest);
        assert_eq!((v.executed, v.success, v.no_code), (false, false, false));
        let mut tally = Tally::default();
        tally.add(&v);
        tally.add(&verdict(
            &result(Task::CoverageTest, Outcome::Passed, "x", json!({})),
            Task::CoverageTest,
        ));
        assert_eq!(tally.metrics(Task::CoverageTest)["execution_rate"], 0.5);
        let c = json!({"reference": "x", "form": "binary", "operator": "in",
            "other_operand": "d", "other_is_constant": false, "masked_line": "assert <MASK> in d"});
        let v = cloze("x", Outcome::NoTestsRun, c);
        assert_eq!((v.exact, v.executed, v.success), (Some(true), false, false));
    }

    /// A failed call is counted apart: `error_rate` over all results, and out of the
    /// denominator of every other rate (a broken server is not a model that writes nothing).
    #[test]
    fn api_errors_are_their_own_rate_and_in_no_other() {
        let s = json!({"focal_source": "src/ring_buffer.cc", "focal_coverage": [[1, 4]]});
        let mut failed = result(Task::CppUnitTest, Outcome::ApiError, "", s.clone());
        failed.candidate = None;
        failed.answer = None;
        let v = verdict(&failed, Task::CppUnitTest);
        assert_eq!(
            v,
            Verdict {
                api_error: true,
                ..Verdict::default()
            },
            "no compile, no focal coverage, no no_code"
        );
        let mut passed = result(Task::CppUnitTest, Outcome::Passed, "x", s);
        passed.coverage = vec![cov("src/ring_buffer.cc", 1..=4)];
        let mut tally = Tally::default();
        for v in [&v, &v, &v, &verdict(&passed, Task::CppUnitTest)] {
            tally.add(v);
        }
        let m = tally.metrics(Task::CppUnitTest);
        assert_eq!(m["error_rate"], 0.75);
        for k in [
            "compile_rate",
            "pass_rate",
            "success_rate",
            "focal_coverage_vs_gt",
        ] {
            assert_eq!(m[k], 1.0, "{k}");
        }
        assert_eq!(m["no_code_rate"], 0.0);

        // Only errors: the error rate, and no model metric at all rather than zeros.
        let mut tally = Tally::default();
        tally.add(&verdict(
            &result(Task::CoverageTest, Outcome::ApiError, "", json!({})),
            Task::CoverageTest,
        ));
        let m = tally.metrics(Task::CoverageTest);
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            [("error_rate".to_string(), 1.0)]
        );
    }

    #[test]
    fn cpp_compile_pass_and_focal_coverage() {
        let s = json!({"focal_source": "src/ring_buffer.cc", "focal_coverage": [[1, 4], [10, 13]]});
        let mut r = result(
            Task::CppUnitTest,
            Outcome::Failed,
            "TEST(A, B) {}",
            s.clone(),
        );
        r.coverage = vec![cov("src/ring_buffer.cc", [1, 2, 3, 4, 5])];
        let v = verdict(&r, Task::CppUnitTest);
        assert_eq!((v.compiled, v.executed), (Some(true), false));
        assert_eq!(v.focal_vs_gt, Some(0.5));
        let r = result(Task::CppUnitTest, Outcome::CompileError, "x", s.clone());
        let v = verdict(&r, Task::CppUnitTest);
        assert_eq!((v.compiled, v.focal_vs_gt), (Some(false), Some(0.0)));
        let mut t = Tally::default();
        t.add(&v);
        t.add(&Verdict {
            executed: true,
            success: true,
            compiled: Some(true),
            focal_vs_gt: Some(1.0),
            ..Default::default()
        });
        let m = t.metrics(Task::CppUnitTest);
        assert_eq!(m["compile_rate"], 0.5);
        assert_eq!(m["pass_rate"], 0.5);
        assert_eq!(m["success_rate"], 0.5);
        assert_eq!(m["focal_coverage_vs_gt"], 0.5);
    }

    /// C++ success: passes and covers every focal line the ground truth covers; a trivial
    /// passing test is a pass but no success.
    #[test]
    fn cpp_success_needs_the_ground_truths_lines() {
        let s = json!({"focal_source": "src/ring_buffer.cc", "focal_coverage": [[1, 4], [10, 13]]});
        let mut r = result(
            Task::CppUnitTest,
            Outcome::Passed,
            "TEST(A, B) {}",
            s.clone(),
        );
        r.coverage = vec![cov("src/ring_buffer.cc", (1..=4).chain(9..=13))];
        let v = verdict(&r, Task::CppUnitTest);
        assert_eq!(
            (v.executed, v.success, v.focal_vs_gt),
            (true, true, Some(1.0))
        );
        r.coverage = vec![cov("src/ring_buffer.cc", (1..=4).chain(10..=12))];
        let v = verdict(&r, Task::CppUnitTest);
        assert_eq!(
            (v.executed, v.success, v.focal_vs_gt),
            (true, false, Some(0.875))
        );
        r.coverage = vec![cov("src/other.cc", 1..=13)];
        assert!(
            !verdict(&r, Task::CppUnitTest).success,
            "another file's lines"
        );
        // Without the ground truth's lines nothing can be claimed.
        let mut r = result(
            Task::CppUnitTest,
            Outcome::Passed,
            "TEST(A, B) {}",
            json!({"focal_source": "src/ring_buffer.cc"}),
        );
        r.coverage = vec![cov("src/ring_buffer.cc", 1..=13)];
        let v = verdict(&r, Task::CppUnitTest);
        assert_eq!((v.executed, v.success, v.focal_vs_gt), (true, false, None));
        // A file whose chunk answers did not all arrive: an error with no candidate, never
        // compiled.
        let mut r = result(Task::CppUnitTest, Outcome::Error, "", s);
        r.candidate = None;
        r.answer = None;
        assert_eq!(verdict(&r, Task::CppUnitTest).compiled, Some(false));
    }
}
