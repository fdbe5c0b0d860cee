//! The four task builders. Each turns the kept problems of one repository into drafts
//! (instances without their context); [`crate::build`] then packs every draft into each
//! setting.
//!
//! Selection is seeded per repository and per decision (see [`crate::rng`]). A problem is
//! only drafted when its instruction, in-file code and required files fit the smallest
//! context length of the task's settings, so every setting holds the same problems.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use clover_protocol::{
    AssertionForm, CalibratedProblem, CppProblem, ExecSpec, Language, PythonProblem, Target,
    TargetKind, Task, UniqueBlock,
};
use serde_json::{json, Value};

use crate::pack::Draft;
use crate::prompt::{code_block, fence, system_message};
use crate::python::{
    candidate_path, candidate_selector, dedent, indent_of, line_end, line_start, split_body,
    BodySplit,
};
use crate::rng::Rng;
use crate::setting::Setting;
use crate::source::{RepoSources, SourceFile};
use crate::tokenizer::{Tokenizer, TokenizerError};
use crate::{ClozeTemplate, Options};

/// Tokens kept for the answer of Task I.
pub const CLOZE_RESERVE: u32 = 200;
/// Tokens kept for the answer of Tasks II and III and of the C++ task.
pub const WRITE_RESERVE: u32 = 4000;
/// The token that stands for the masked operand.
pub const MASK: &str = "<MASK>";

/// What one repository's builders share.
#[derive(Debug)]
pub struct RepoInput<'a, 't> {
    pub repo: &'a str,
    /// The kept problems of the repository, sorted by id; with `--judge-only-excluded`, also
    /// its C++ pairs calibrate excluded (built judge-only, never demonstrations).
    pub problems: &'a [CalibratedProblem],
    pub sources: RepoSources<'t>,
    pub tokenizer: &'t Tokenizer,
    pub options: &'a Options,
    /// Counts of what was passed over and why, for the summary on stderr.
    pub skipped: BTreeMap<String, u64>,
}

impl RepoInput<'_, '_> {
    fn skip(&mut self, why: &str) {
        *self.skipped.entry(why.to_string()).or_default() += 1;
    }

    /// Whether `draft` fits the smallest context length among `settings`.
    fn fits(&self, draft: &Draft, settings: &[Setting]) -> Result<bool, TokenizerError> {
        match settings.iter().filter_map(|s| s.length()).min() {
            None => Ok(true),
            Some(n) => Ok(draft
                .realize(Setting::Length(n), &[], self.tokenizer)?
                .is_some()),
        }
    }
}

/// A draft with the index of its problem, so output follows input order.
pub type Drafted = (usize, Draft);

fn python(p: &CalibratedProblem) -> Option<&PythonProblem> {
    p.problem.python.as_ref()
}

fn test_file_section(path: &str, code: &str) -> String {
    format!(
        "### Test file: {path}\n{}\n",
        code_block(Language::Python, code)
    )
}

fn python_exec(repo: &str, p: &PythonProblem, key: &str, prefix: &str, suffix: &str) -> ExecSpec {
    let candidate = candidate_path(&p.problem_file, key);
    ExecSpec {
        repo: repo.to_string(),
        language: Some(Language::Python),
        selectors: vec![candidate_selector(&p.node_id, &candidate)],
        candidate_path: candidate,
        prefix: prefix.to_string(),
        suffix: suffix.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Task I

/// One operand that could be masked.
#[derive(Debug, Clone)]
struct ClozeCandidate {
    problem: usize,
    site: usize,
    operand: usize,
    /// The candidate's number within its problem (assertions in order, left before right).
    ordinal: usize,
    reference: String,
}

fn cloze_candidates(problems: &[CalibratedProblem]) -> Vec<ClozeCandidate> {
    let mut out = Vec::new();
    for (pi, rec) in problems.iter().enumerate() {
        let Some(p) = python(rec) else { continue };
        let mut ordinal = 0;
        for (si, site) in p.assertions.iter().enumerate() {
            let n = match site.form {
                AssertionForm::Unary => 1,
                AssertionForm::Binary => 2,
            };
            for (oi, operand) in site.operands.iter().enumerate().take(n) {
                out.push(ClozeCandidate {
                    problem: pi,
                    site: si,
                    operand: oi,
                    ordinal,
                    reference: operand.text.trim().to_string(),
                });
                ordinal += 1;
            }
        }
    }
    out
}

/// Drops candidates whose reference occurs in more than `max_share` of all candidates (such
/// answers — `True`, `0`, `None` — can be guessed without reading anything).
fn frequency_filter(cands: Vec<ClozeCandidate>, max_share: f64) -> (Vec<ClozeCandidate>, usize) {
    let total = cands.len();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for c in &cands {
        *counts.entry(c.reference.as_str()).or_default() += 1;
    }
    let frequent: Vec<bool> = cands
        .iter()
        // A reference seen once is never frequent: in a repository of fewer than 100
        // candidates the share of a single one is over 1%, and the rule would drop them all.
        .map(|c| {
            let n = counts[c.reference.as_str()];
            n > 1 && n as f64 / total as f64 > max_share
        })
        .collect();
    let dropped = frequent.iter().filter(|&&f| f).count();
    let kept = cands
        .into_iter()
        .zip(frequent)
        .filter(|(_, f)| !f)
        .map(|(c, _)| c)
        .collect();
    (kept, dropped)
}

/// Task I: masks one operand of an assertion; the masked assertion is the last line shown.
pub fn assertion_cloze(input: &mut RepoInput) -> Result<Vec<Drafted>, TokenizerError> {
    let settings = input.options.settings_for(Task::AssertionCloze);
    let (cands, dropped) = frequency_filter(
        cloze_candidates(input.problems),
        input.options.max_reference_share,
    );
    for _ in 0..dropped {
        input.skip("assertion_cloze: reference too frequent");
    }
    let weights: Vec<u64> = cands
        .iter()
        .map(|c| c.reference.chars().count() as u64)
        .collect();
    let mut rng = Rng::for_key(input.options.seed, &format!("cloze/{}", input.repo));
    let mut out = Vec::new();
    let mut taken = 0;
    for i in rng.weighted_draws(&weights) {
        if taken >= input.options.cloze_per_repo {
            break;
        }
        let c = &cands[i];
        let rec = &input.problems[c.problem];
        // One draft per template, for the same candidates: the templates differ only in what
        // the answer holds, so a comparison of them compares the elicitation alone.
        let mut drafts = Vec::new();
        for &template in &input.options.cloze_templates {
            match cloze_draft(input.repo, rec, c, template) {
                Ok(d) => drafts.push(d),
                Err(why) => {
                    input.skip(&format!("assertion_cloze: {why}"));
                    break;
                }
            }
        }
        if drafts.len() < input.options.cloze_templates.len() {
            continue;
        }
        if all_fit(input, &drafts, &settings)? {
            taken += 1;
            out.extend(
                drafts
                    .into_iter()
                    .map(|d| (c.problem, c.site, c.operand, d)),
            );
        } else {
            input.skip("assertion_cloze: problem does not fit the smallest setting");
        }
    }
    // A stable sort: within a candidate, the templates keep their order.
    out.sort_by_key(|&(p, s, o, _)| (p, s, o));
    Ok(out.into_iter().map(|(p, _, _, d)| (p, d)).collect())
}

fn cloze_draft(
    repo: &str,
    rec: &CalibratedProblem,
    c: &ClozeCandidate,
    template: ClozeTemplate,
) -> Result<Draft, String> {
    let p = python(rec).expect("candidates come from Python problems");
    let site = &p.assertions[c.site];
    let operand = &site.operands[c.operand];
    let text = &p.problem_text;
    let (s, e) = (
        site.problem_span.start_byte as usize,
        site.problem_span.end_byte as usize,
    );
    let (os, oe) = (
        operand.problem_span.start_byte as usize,
        operand.problem_span.end_byte as usize,
    );
    let ordered = s <= os && os <= oe && oe <= e && e <= text.len();
    if !ordered || ![s, os, oe, e].iter().all(|&i| text.is_char_boundary(i)) {
        return Err("assertion spans do not match the problem file".into());
    }
    let ls = line_start(text, s);
    let le = line_end(text, e.saturating_sub(1).max(s));
    let indent = indent_of(&text[ls..]).to_string();
    let original = &text[ls..le];
    let masked_full = format!("{}{MASK}{}", &text[ls..os], &text[oe..le]);
    let reference_line = dedent(original, &indent);
    let masked_line = dedent(&masked_full, &indent);
    // CLOVER prohibits copying an existing assertion from the context: when the assertion
    // already stands, whole, in the test file shown above the mask, its answer would be a
    // copy, so the candidate is dropped (and counted as such in the summary).
    if stands_above(original, &text[..ls]) {
        return Err("the masked assertion stands whole above it in the test file".into());
    }

    let (side, other) = match (site.form, c.operand) {
        (AssertionForm::Unary, _) => ("operand", None),
        (AssertionForm::Binary, 0) => ("left", site.operands.get(1)),
        (AssertionForm::Binary, _) => ("right", site.operands.first()),
    };
    let form = match site.form {
        AssertionForm::Unary => "unary",
        AssertionForm::Binary => "binary",
    };
    let mut scoring = BTreeMap::new();
    scoring.insert("reference".into(), json!(c.reference));
    scoring.insert("masked_side".into(), json!(side));
    scoring.insert("form".into(), json!(form));
    scoring.insert("operator".into(), json!(site.operator));
    scoring.insert("other_operand".into(), json!(other.map(|o| o.text.trim())));
    scoring.insert(
        "other_is_constant".into(),
        json!(other.map(|o| o.is_constant)),
    );
    scoring.insert("masked_line".into(), json!(masked_line));
    scoring.insert("reference_line".into(), json!(reference_line));
    scoring.insert("indent".into(), json!(indent));

    scoring.insert("template".into(), json!(template.name()));
    // The filled template keeps the ids it always had; the answer-only one is told apart.
    let id_suffix = match template {
        ClozeTemplate::Filled => c.ordinal.to_string(),
        ClozeTemplate::AnswerOnly => format!("{}#{}", c.ordinal, template.name()),
    };
    let key = format!("{}#assertion_cloze#{id_suffix}", rec.id);
    let (answer_format, instruction, reference) = match template {
        ClozeTemplate::Filled => (
            "line",
            format!(
                "The last line of the test above is an assertion with one operand replaced by \
                 `{MASK}`. Write that assertion line again with `{MASK}` replaced by the right \
                 expression, so that the test passes. Answer with the whole assertion line \
                 only, in one ```python code block.\n"
            ),
            reference_line,
        ),
        // The operand as it stands in the file, so the assembly (the masked line with the
        // answer in the mask's place) rebuilds the file byte for byte.
        ClozeTemplate::AnswerOnly => (
            "operand",
            format!(
                "The last line of the test above is an assertion with one operand replaced by \
                 `{MASK}`. Write the expression that replaces `{MASK}`, so that the test \
                 passes. Answer with that expression only, not the assertion, in one \
                 ```python code block.\n"
            ),
            text[os..oe].to_string(),
        ),
    };
    Ok(Draft {
        problem_id: rec.id.clone(),
        repo: repo.to_string(),
        task: Task::AssertionCloze,
        id_suffix: Some(id_suffix),
        answer_format: answer_format.into(),
        system: system_message(Language::Python).into(),
        problem_section: test_file_section(&p.test_file, &format!("{}{masked_full}", &text[..ls])),
        instruction,
        instruction_po: None,
        reserve: CLOZE_RESERVE,
        required: Vec::new(),
        reference,
        exec: python_exec(repo, p, &key, &text[..ls], &text[le..]),
        scoring,
    })
}

/// Whether the lines of `assertion` stand, each whole (indentation aside) and in a row, in
/// `above`.
fn stands_above(assertion: &str, above: &str) -> bool {
    let want: Vec<&str> = assertion.lines().map(str::trim).collect();
    let lines: Vec<&str> = above.lines().map(str::trim).collect();
    !want.is_empty()
        && lines.len() >= want.len()
        && lines.windows(want.len()).any(|w| w == want.as_slice())
}

// ---------------------------------------------------------------------------------------------
// Tasks II and III

/// Joins an instruction's sentences: `what` may end with a code block and its line break.
fn then(what: &str, next: &str) -> String {
    if what.ends_with('\n') {
        format!("{what}\n{next}")
    } else {
        format!("{what} {next}")
    }
}

/// The `part` instruction: the body of the test function, to go after the declaration shown.
fn body_instruction(name: &str, what: &str) -> String {
    then(
        &format!("Write the body of the test function `{name}` (the last function above) {what}"),
        "Answer with the function body only, without the `def` line, in one ```python code \
         block.\n",
    )
}

/// The `full` instruction: the whole test file — the setup and declaration shown, completed
/// with the body — as the paper's `full` format asks for the complete block.
fn file_instruction(test_file: &str, name: &str, what: &str) -> String {
    then(
        &format!(
            "Write the complete test file `{test_file}`: the code above (its imports, setup \
             and the declaration of the test function `{name}`) followed by the body of \
             `{name}`, {what}"
        ),
        "You may change the setup and add the imports, helpers and fixtures the test needs \
         (fixtures from the repository's `conftest.py` files are available). Answer with the \
         whole file in one ```python code block.\n",
    )
}

fn kind_word(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Class => "class",
        TargetKind::Function => "function",
    }
}

/// Problem indices in a seeded order: the order in which a task with a per-repository cap
/// takes them.
fn seeded_order(
    input: &RepoInput,
    task: &str,
    eligible: impl Fn(&CalibratedProblem) -> bool,
) -> Vec<usize> {
    let mut order: Vec<usize> = (0..input.problems.len())
        .filter(|&i| eligible(&input.problems[i]))
        .collect();
    Rng::for_key(input.options.seed, &format!("{task}/{}", input.repo)).shuffle(&mut order);
    order
}

/// What a Task II or III problem asks, before it is worded for an answer format.
struct WriteAsk<'a> {
    task: Task,
    /// The task's name in keys: `targeted_test`, `coverage_test`.
    task_name: &'a str,
    /// The end of the sentence "Write … so that it …".
    what: String,
    /// `what` for the problem-only setting, when it must say less.
    what_po: Option<String>,
    required: Vec<Arc<SourceFile>>,
    scoring: BTreeMap<String, Value>,
}

/// The drafts of one Task II or III problem, one per answer format. Both formats show the
/// test file up to the body — the setup code and the declaration, the paper's s and f —
/// under the original test file's name; `part` asks for the body, `full` for the whole file.
///
/// Either way the oracle's answer (the reference) rebuilds the problem file byte for byte:
/// `part` stores the body dedented with `scoring.indent` to put back, `full` stores the file
/// up to the body's end with an empty prefix and `scoring.indent` empty.
fn write_drafts(
    input: &RepoInput,
    rec: &CalibratedProblem,
    p: &PythonProblem,
    split: &BodySplit,
    ask: WriteAsk,
) -> Vec<Draft> {
    let mut drafts = Vec::new();
    for format in &input.options.answer_formats {
        let mut scoring = ask.scoring.clone();
        scoring.insert("answer_format".into(), json!(format));
        let key = format!("{}#{}#{format}", rec.id, ask.task_name);
        let worded = |what: &str| {
            if format == "part" {
                body_instruction(&p.name, what)
            } else {
                file_instruction(&p.test_file, &p.name, what)
            }
        };
        let (reference, exec, indent) = if format == "part" {
            (
                split.body.clone(),
                python_exec(input.repo, p, &key, &split.prefix, &split.suffix),
                split.indent.clone(),
            )
        } else {
            // The whole file runs: the answer may rename or add tests and helpers. What the
            // prompt gave to complete (setup and declaration) is recorded, so that score can
            // tell the model's own code from a copy of it.
            scoring.insert("given".into(), json!(split.prefix));
            let mut exec = python_exec(input.repo, p, &key, "", &split.suffix);
            exec.selectors.clear();
            let end = p.problem_text.len() - split.suffix.len();
            (p.problem_text[..end].to_string(), exec, String::new())
        };
        scoring.insert("indent".into(), json!(indent));
        drafts.push(Draft {
            problem_id: rec.id.clone(),
            repo: input.repo.to_string(),
            task: ask.task,
            id_suffix: Some(format.clone()),
            answer_format: format.clone(),
            system: system_message(Language::Python).into(),
            problem_section: test_file_section(&p.test_file, &split.prefix),
            instruction: worded(&ask.what),
            instruction_po: ask.what_po.as_deref().map(worded),
            reserve: WRITE_RESERVE,
            required: ask.required.clone(),
            reference,
            exec,
            scoring,
        });
    }
    drafts
}

/// Whether every draft of a problem fits the smallest setting (their prompts differ only in
/// the instruction, and a problem is in all formats or in none).
fn all_fit(
    input: &RepoInput,
    drafts: &[Draft],
    settings: &[Setting],
) -> Result<bool, TokenizerError> {
    for d in drafts {
        if !input.fits(d, settings)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Task II: a test that uses a given class or function, in each answer format.
pub fn targeted_test(input: &mut RepoInput) -> Result<Vec<Drafted>, TokenizerError> {
    let settings = input.options.settings_for(Task::TargetedTest);
    let order = seeded_order(input, "targeted_test", |r| {
        python(r).is_some() && !r.targets.is_empty()
    });
    let mut out = Vec::new();
    let mut taken = 0;
    for pi in order {
        if taken >= input.options.targeted_per_repo {
            break;
        }
        let rec = &input.problems[pi];
        let p = python(rec).expect("eligible problems are Python");
        let split = match split_body(p) {
            Ok(s) => s,
            Err(why) => {
                input.skip(&format!("targeted_test: {why}"));
                continue;
            }
        };
        // Success asks the answer — the body, in the `part` format — to name the target, so
        // only targets the ground truth's body names as an identifier are asked for, by
        // score's own rule (one named only in a decorator, say `parametrize`, or only in a
        // docstring would fail even the ground truth).
        let ids = clover_extract::identifiers(&split.body);
        let named: Vec<&Target> = rec
            .targets
            .iter()
            .filter(|t| ids.contains(t.name.rsplit('.').next().unwrap_or(&t.name)))
            .collect();
        if named.is_empty() {
            input.skip("targeted_test: the test body names none of its targets");
            continue;
        }
        let pick = Rng::for_key(input.options.seed, &format!("target/{}", rec.id))
            .below(named.len() as u64) as usize;
        let target = named[pick];
        let Some(required) = input.sources.get(&target.path)? else {
            input.skip("targeted_test: target file unreadable");
            continue;
        };
        let kind = kind_word(target.kind);
        // With context the target's file is shown, so its place is named; problem-only gives
        // no context, "not even the file name", as the paper's PO setting does.
        let what = format!(
            "so that it tests the {kind} `{}` defined in `{}` (lines {}-{}); the test must \
             call it.",
            target.name, target.path, target.start_line, target.end_line
        );
        let what_po = format!(
            "so that it tests the {kind} `{}`; the test must call it.",
            target.name
        );
        let mut scoring = BTreeMap::new();
        let mut scored = json!({
            "name": target.name,
            "kind": kind,
            "path": target.path,
            "start_line": target.start_line,
            "end_line": target.end_line,
        });
        // What importing runs of the span is not a call (score's `called`).
        if !target.import_lines.is_empty() {
            scored["import_lines"] = json!(target.import_lines);
        }
        scoring.insert("target".into(), scored);
        let ask = WriteAsk {
            task: Task::TargetedTest,
            task_name: "targeted_test",
            what,
            what_po: Some(what_po),
            required: vec![required],
            scoring,
        };
        let drafts = write_drafts(input, rec, p, &split, ask);
        if !all_fit(input, &drafts, &settings)? {
            input.skip(
                "targeted_test: instruction and required file do not fit the smallest setting",
            );
            continue;
        }
        taken += 1;
        out.extend(drafts.into_iter().map(|d| (pi, d)));
    }
    out.sort_by_key(|(pi, _)| *pi);
    Ok(out)
}

/// A unique block as Task III shows it: every line numbered as in its file, and the lines
/// the scorer requires a test to run marked `>` — the block's `lines`, the executable lines
/// the ground truth covered (the whole span in records without them). Blank lines,
/// comments, `else:` and lines no test can run (the other arm of a version check) lie in the
/// span but are not required, so the prompt must not ask for them.
fn marked_block(b: &UniqueBlock) -> String {
    let width = b.end_line.to_string().len();
    let mut text = String::new();
    for (i, line) in b.code.lines().enumerate() {
        let n = b.start_line + i as u32;
        let mark = if b.lines.is_empty() || b.lines.contains(n) {
            '>'
        } else {
            ' '
        };
        let numbered = format!("{mark} {n:>width$} | {line}");
        text.push_str(numbered.trim_end());
        text.push('\n');
    }
    let f = fence(&text);
    format!("{f}\n{text}{f}\n")
}

/// Task III: a test that covers given unique blocks (at most 10), in each answer format.
pub fn coverage_test(input: &mut RepoInput) -> Result<Vec<Drafted>, TokenizerError> {
    let settings = input.options.settings_for(Task::CoverageTest);
    let order = seeded_order(input, "coverage_test", |r| {
        python(r).is_some() && !r.unique_blocks.is_empty()
    });
    let mut out = Vec::new();
    let mut taken = 0;
    for pi in order {
        if taken >= input.options.coverage_per_repo {
            break;
        }
        let rec = &input.problems[pi];
        let p = python(rec).expect("eligible problems are Python");
        let blocks = &rec.unique_blocks[..rec.unique_blocks.len().min(10)];
        let mut required: Vec<Arc<SourceFile>> = Vec::new();
        let mut unreadable = false;
        for b in blocks {
            if required.iter().any(|f| f.path == b.path) {
                continue;
            }
            match input.sources.get(&b.path)? {
                Some(f) => required.push(f),
                None => unreadable = true,
            }
        }
        if unreadable {
            input.skip("coverage_test: block file unreadable");
            continue;
        }
        let split = match split_body(p) {
            Ok(s) => s,
            Err(why) => {
                input.skip(&format!("coverage_test: {why}"));
                continue;
            }
        };
        let mut what = String::from(
            "so that, when it runs, it executes every line marked `>` in each of these code \
             blocks (each line is shown with its number in the file; unmarked lines need not \
             run):\n\n",
        );
        for (i, b) in blocks.iter().enumerate() {
            what.push_str(&format!(
                "Block {}: `{}` lines {}-{}\n{}",
                i + 1,
                b.path,
                b.start_line,
                b.end_line,
                marked_block(b)
            ));
        }
        let mut scoring = BTreeMap::new();
        scoring.insert(
            "blocks".into(),
            Value::Array(
                blocks
                    .iter()
                    .map(|b| {
                        let mut v = json!({"path": b.path, "start_line": b.start_line,
                            "end_line": b.end_line});
                        // The lines a test must run; without them, the whole span.
                        if !b.lines.is_empty() {
                            v["lines"] = json!(b.lines);
                        }
                        v
                    })
                    .collect(),
            ),
        );
        let ask = WriteAsk {
            task: Task::CoverageTest,
            task_name: "coverage_test",
            what,
            what_po: None,
            required,
            scoring,
        };
        let drafts = write_drafts(input, rec, p, &split, ask);
        if !all_fit(input, &drafts, &settings)? {
            input.skip(
                "coverage_test: instruction and required files do not fit the smallest setting",
            );
            continue;
        }
        taken += 1;
        out.extend(drafts.into_iter().map(|d| (pi, d)));
    }
    out.sort_by_key(|(pi, _)| *pi);
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// C++

/// A source/test pair that can serve as a few-shot demonstration.
#[derive(Debug, Clone)]
pub struct Demo {
    pub problem_id: String,
    pub repo: String,
    pub text: String,
    pub tokens: usize,
}

impl Demo {
    pub fn of(
        repo: &str,
        id: &str,
        c: &CppProblem,
        tokenizer: &Tokenizer,
    ) -> Result<Demo, TokenizerError> {
        let text = format!(
            "Source `{}`:\n{}\nTests `{}`:\n{}\n",
            c.file_path,
            code_block(Language::Cpp, &c.code),
            c.test_path,
            code_block(Language::Cpp, &c.unit_test)
        );
        let tokens = tokenizer.count(&text)?;
        Ok(Demo {
            problem_id: id.to_string(),
            repo: repo.to_string(),
            text,
            tokens,
        })
    }
}

/// C++: one instance per chunk with few-shot demonstrations from other pairs (the same
/// repository first, then `pool`, pairs of earlier repositories), never the pair itself.
pub fn cpp_unit_test(input: &mut RepoInput, pool: &[Demo]) -> Result<Vec<Drafted>, TokenizerError> {
    let settings = input.options.settings_for(Task::CppUnitTest);
    let mut own: Vec<Option<Demo>> = Vec::with_capacity(input.problems.len());
    for rec in input.problems {
        // A judge-only pair (calibrate excluded it) shows no test that runs: it is never a
        // demonstration, so building judge-only instances leaves the others' prompts as
        // they were.
        own.push(match (&rec.problem.cpp, &rec.exclusion) {
            (Some(c), None) => Some(Demo::of(input.repo, &rec.id, c, input.tokenizer)?),
            _ => None,
        });
    }
    let mut out = Vec::new();
    for (pi, rec) in input.problems.iter().enumerate() {
        let Some(c) = &rec.problem.cpp else { continue };
        let mut rng = Rng::for_key(input.options.seed, &format!("shots/{}", rec.id));
        let mut same: Vec<&Demo> = own
            .iter()
            .flatten()
            .filter(|d| d.problem_id != rec.id)
            .collect();
        rng.shuffle(&mut same);
        let mut other: Vec<&Demo> = pool.iter().filter(|d| d.repo != input.repo).collect();
        rng.shuffle(&mut other);
        let shots: Vec<&Demo> = same
            .into_iter()
            .chain(other)
            .filter(|d| d.tokens <= input.options.shot_max_tokens)
            .take(input.options.shots)
            .collect();
        let mut examples = String::new();
        for (i, d) in shots.iter().enumerate() {
            examples.push_str(&format!("### Example {}\n{}\n", i + 1, d.text));
        }
        let header = match &c.header_path {
            Some(h) => match input.sources.get(h)? {
                Some(f) => format!("### Header: {h}\n{}\n", code_block(Language::Cpp, &f.text)),
                None => String::new(),
            },
            None => String::new(),
        };
        let chunks: Vec<(u32, &str)> = if c.chunks.is_empty() {
            vec![(0, c.code.as_str())]
        } else {
            c.chunks
                .iter()
                .map(|ch| (ch.index, ch.code.as_str()))
                .collect()
        };
        let count = chunks.len();
        // The candidate stands where the real test stands, under its name: sandbox-run
        // writes it over the ground truth in the run's view, so a test that names its own
        // file (`__FILE__`, a data file beside it) sees what the ground truth saw.
        let candidate = c.test_path.clone();
        for (position, (index, code)) in chunks.into_iter().enumerate() {
            let which = if count == 1 {
                format!("the source file `{}` above", c.file_path)
            } else {
                format!(
                    "part {} of {} of the source file `{}` (the code above)",
                    position + 1,
                    count,
                    c.file_path
                )
            };
            let shown = if count == 1 {
                format!(
                    "### Source: {}\n{}\n",
                    c.file_path,
                    code_block(Language::Cpp, code)
                )
            } else {
                format!(
                    "### Source: {} (part {} of {})\n{}\n",
                    c.file_path,
                    position + 1,
                    count,
                    code_block(Language::Cpp, code)
                )
            };
            let intro = if examples.is_empty() {
                String::new()
            } else {
                format!("Examples of source files with their unit tests:\n\n{examples}")
            };
            let mut scoring = BTreeMap::new();
            scoring.insert("focal_source".into(), json!(c.file_path));
            if let Some(e) = &rec.exclusion {
                scoring.insert(
                    clover_protocol::JUDGE_ONLY.into(),
                    clover_protocol::judge_only_mark(e.reason),
                );
            }
            // The ground truth's covered lines of the source, which score compares the
            // candidate's with.
            scoring.insert(
                "focal_coverage".into(),
                json!(rec
                    .base
                    .iter()
                    .find(|f| f.path == c.file_path)
                    .map(|f| &f.lines)),
            );
            scoring.insert("chunk_index".into(), json!(index));
            scoring.insert("chunk_count".into(), json!(count));
            scoring.insert("join".into(), json!("append"));
            scoring.insert("test_path".into(), json!(c.test_path));
            scoring.insert("header_path".into(), json!(c.header_path));
            scoring.insert(
                "shots".into(),
                json!(shots
                    .iter()
                    .map(|d| d.problem_id.as_str())
                    .collect::<Vec<_>>()),
            );
            let draft = Draft {
                problem_id: rec.id.clone(),
                repo: input.repo.to_string(),
                task: Task::CppUnitTest,
                id_suffix: Some(index.to_string()),
                answer_format: "file".into(),
                system: system_message(Language::Cpp).into(),
                problem_section: format!("{intro}{header}{shown}"),
                instruction: format!(
                    "Write GoogleTest unit tests for {which}. Answer with C++ test code \
                     (includes, fixtures and TEST/TEST_F cases) in one ```cpp code block. The \
                     answers for all parts of a source file are appended into one test file \
                     that is linked with gtest_main, so do not define `main`.\n"
                ),
                instruction_po: None,
                reserve: WRITE_RESERVE,
                required: Vec::new(),
                reference: c.unit_test.clone(),
                exec: ExecSpec {
                    repo: input.repo.to_string(),
                    language: Some(Language::Cpp),
                    candidate_path: candidate.clone(),
                    prefix: String::new(),
                    suffix: String::new(),
                    selectors: Vec::new(),
                },
                scoring,
            };
            if input.fits(&draft, &settings)? {
                out.push((pi, draft));
            } else {
                input.skip("cpp_unit_test: chunk does not fit the smallest setting");
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An assertion already shown above the mask (a copy would answer it) is found whole,
    /// over one line or several, indentation aside; a longer or different line is not it.
    #[test]
    fn an_assertion_that_stands_above_the_mask_is_found() {
        let above =
            "def test_a():\n    x = f()\n    assert x == {\n        1: 2}\n    assert y == 10\n";
        assert!(stands_above("    assert x == {\n            1: 2}", above));
        assert!(stands_above("assert y == 10", above));
        assert!(!stands_above("assert y == 1", above));
        assert!(!stands_above("assert x == {\n    1: 3}", above));
        assert!(!stands_above("assert y == 10", ""));
    }

    fn cand(reference: &str) -> ClozeCandidate {
        ClozeCandidate {
            problem: 0,
            site: 0,
            operand: 0,
            ordinal: 0,
            reference: reference.into(),
        }
    }

    /// "More than 1%": of 200 candidates, a reference seen 3 times (1.5%) goes, one seen
    /// twice (exactly 1%) stays.
    #[test]
    fn frequency_filter_drops_references_over_the_share() {
        let mut cands: Vec<ClozeCandidate> = (0..195).map(|i| cand(&format!("v{i}"))).collect();
        cands.extend(["True", "True", "True", "x", "x"].map(cand));
        let (kept, dropped) = frequency_filter(cands, 0.01);
        assert_eq!(dropped, 3);
        assert_eq!(kept.len(), 197);
        assert!(kept.iter().all(|c| c.reference != "True"));
        assert_eq!(kept.iter().filter(|c| c.reference == "x").count(), 2);
    }

    /// markupsafe has 88 candidates: each is over 1% of them, but one seen once is never a
    /// frequent reference; one seen twice (2.3%) is.
    #[test]
    fn frequency_filter_keeps_single_references_in_small_repositories() {
        let mut cands: Vec<ClozeCandidate> = (0..86).map(|i| cand(&format!("v{i}"))).collect();
        cands.extend(["True", "True"].map(cand));
        let (kept, dropped) = frequency_filter(cands, 0.01);
        assert_eq!((kept.len(), dropped), (86, 2));
        assert!(kept.iter().all(|c| c.reference != "True"));
    }
}
