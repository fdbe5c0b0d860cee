//! From a model's text to a candidate test file.
//!
//! Rules, in order:
//! 1. Fenced blocks (```` ``` ```` or `~~~`, three or more, indented or not, with or without an
//!    info string; a block whose closing fence is missing runs to the end of the text; a block
//!    opened and closed on one line counts too). Blocks tagged with another language than the
//!    task's (`bash`, `text`, `output`, …) are left out unless nothing else is there; the
//!    rest are joined with a newline, in order, so imports in one block and the test in the
//!    next both arrive.
//! 2. No fence at all: the whole text is the code (blank text is no code).
//! 3. Task I: the prediction is recovered by aligning each line of the code with the masked
//!    line — the text before `<MASK>` and the text after it must match, ignoring whitespace —
//!    and taking what stands in the mask's place. A one-line answer that does not align is
//!    taken as the operand itself, unless it is a whole `assert` (then the model changed
//!    the assertion and there is no prediction).
//! 4. Python answers for Task II/III are dedented and re-indented to `scoring.indent` (the
//!    body's indentation, set by pack-context for `part` answers), or, when that is missing,
//!    to the indentation the prefix's last line calls for (none for a whole file).

use clover_protocol::{ExecSpec, Language, Response, Task};

/// Why an answer yields no candidate (sandbox-run records it as outcome `no_code`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoCode {
    #[error("the model gave no answer: {0}")]
    ResponseError(String),
    #[error("the answer is empty")]
    Empty,
    #[error("the answer holds no code")]
    NoCodeFound,
    #[error("no line of the answer fills the masked assertion `{masked_line}`")]
    NoPrediction { masked_line: String },
    #[error("none of the {count} chunk answers of this source holds code")]
    NoChunkCode { count: u32 },
}

/// A candidate test built from an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// What was taken from the answer: the predicted operand for Task I, otherwise the code as
    /// placed between prefix and suffix. Goes to `RunResult::answer`.
    pub answer: String,
    /// The whole file: `exec.prefix + answer + exec.suffix`. Goes to `RunResult::candidate`.
    pub text: String,
}

/// One fenced block of a model's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    /// The first word of the info string, lowercased (`""` when untagged).
    pub lang: String,
    pub code: String,
    /// Whether a closing fence was found.
    pub closed: bool,
}

/// The fenced blocks of `text`, in order.
pub fn code_blocks(text: &str) -> Vec<CodeBlock> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim_start();
        let Some(fence_char) = t.chars().next().filter(|c| *c == '`' || *c == '~') else {
            continue;
        };
        let fence_len = t.chars().take_while(|c| *c == fence_char).count();
        if fence_len < 3 {
            continue;
        }
        let info = &t[fence_len..];
        let fence: String = std::iter::repeat_n(fence_char, fence_len).collect();
        // ```x == 1``` on one line.
        if let Some(inner) = info.trim_end().strip_suffix(fence.as_str()) {
            if !inner.trim().is_empty() {
                blocks.push(CodeBlock {
                    lang: String::new(),
                    code: inner.trim().to_string(),
                    closed: true,
                });
                continue;
            }
        }
        let lang = info
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_start_matches('{')
            .trim_start_matches('.')
            .to_ascii_lowercase();
        let mut code = String::new();
        let mut closed = false;
        for body in lines.by_ref() {
            let bt = body.trim();
            if bt.len() >= fence_len && bt.chars().all(|c| c == fence_char) {
                closed = true;
                break;
            }
            // Strip up to the opening fence's indentation, as CommonMark does.
            let strip = body.chars().take(indent).take_while(|c| *c == ' ').count();
            code.push_str(&body[strip..]);
            code.push('\n');
        }
        blocks.push(CodeBlock { lang, code, closed });
    }
    blocks
}

fn is_lang(tag: &str, language: Language) -> bool {
    match language {
        Language::Python => matches!(tag, "python" | "py" | "python3" | "py3" | "pytest"),
        Language::Cpp => matches!(
            tag,
            "cpp" | "c++" | "cc" | "cxx" | "c" | "hpp" | "h" | "gtest"
        ),
    }
}

/// The code of a model's answer, or `None` when it holds none. See the module doc.
pub fn extract_code(text: &str, language: Language) -> Option<String> {
    let blocks: Vec<CodeBlock> = code_blocks(text)
        .into_iter()
        .filter(|b| !b.code.trim().is_empty())
        .collect();
    if blocks.is_empty() {
        let has_fence = text
            .lines()
            .any(|l| l.trim_start().starts_with("```") || l.trim_start().starts_with("~~~"));
        if has_fence || text.trim().is_empty() {
            return None;
        }
        return Some(trim_blank_lines(text).to_string());
    }
    let ours: Vec<&CodeBlock> = blocks
        .iter()
        .filter(|b| b.lang.is_empty() || is_lang(&b.lang, language))
        .collect();
    let chosen = if ours.is_empty() {
        blocks.iter().collect()
    } else {
        ours
    };
    let mut out = String::new();
    for b in chosen {
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str(trim_blank_lines(&b.code));
        out.push('\n');
    }
    Some(out)
}

/// `text` without its leading and trailing blank lines (indentation of the first line kept).
fn trim_blank_lines(text: &str) -> &str {
    let start = text
        .lines()
        .take_while(|l| l.trim().is_empty())
        .map(|l| l.len() + 1)
        .sum::<usize>()
        .min(text.len());
    text[start..].trim_end()
}

/// Task I: what a line puts in the place of `<MASK>` in `masked_line`, comparing the text
/// around the mask without whitespace.
pub fn align_prediction(line: &str, masked_line: &str) -> Option<String> {
    let (before, after) = masked_line.split_once("<MASK>")?;
    let (before, after) = (squash(before), squash(after));
    // The non-whitespace characters of the line with their byte offsets.
    let chars: Vec<(usize, char)> = line
        .char_indices()
        .filter(|(_, c)| !c.is_whitespace())
        .collect();
    let (nb, na) = (before.chars().count(), after.chars().count());
    if chars.len() < nb + na + 1 {
        return None;
    }
    let matches = |from: usize, pat: &str| {
        chars[from..]
            .iter()
            .zip(pat.chars())
            .all(|((_, a), b)| *a == b)
    };
    if !matches(0, &before) || !matches(chars.len() - na, &after) {
        return None;
    }
    let start = chars[nb].0;
    let last = chars[chars.len() - na - 1];
    let end = last.0 + last.1.len_utf8();
    let prediction = line[start..end].trim();
    (!prediction.is_empty()).then(|| prediction.to_string())
}

/// `s` without its whitespace.
fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Lines an assertion may grow by beyond the masked line's own when a model fills the mask
/// with a multi-line operand (click's suite compares 30-line lists with comments in them).
const MAX_EXTRA_LINES: usize = 200;

/// Task I: the first run of consecutive lines of `source` that fills `masked_line` (which may
/// itself span lines) with a complete operand: the fewest lines whose prediction has balanced
/// brackets, so an operand that goes on over the next lines is never cut after its first.
pub fn align_in_lines(source: &str, masked_line: &str) -> Option<String> {
    let before = squash(masked_line.split_once("<MASK>")?.0);
    let lines: Vec<&str> = source.lines().map(|l| l.trim().trim_matches('`')).collect();
    let longest = masked_line.lines().count().max(1) + MAX_EXTRA_LINES;
    for start in 0..lines.len() {
        // What the window holds, without whitespace: it must agree with the text before the
        // mask, else no longer window from this line can align either.
        let mut squashed = String::new();
        for end in start + 1..=(start + longest).min(lines.len()) {
            squashed.push_str(&squash(lines[end - 1]));
            let agrees = if squashed.len() < before.len() {
                before.starts_with(&squashed)
            } else {
                squashed.starts_with(&before)
            };
            if !agrees {
                break;
            }
            let window = lines[start..end].join("\n");
            if let Some(p) = align_prediction(&window, masked_line) {
                // A backslash at the end continues the statement on the next line.
                if brackets_balance(&p) && !p.ends_with('\\') {
                    return Some(p);
                }
            }
        }
    }
    None
}

/// Whether every bracket of Python code `code` is closed, string literals skipped.
fn brackets_balance(code: &str) -> bool {
    let mut depth: Vec<char> = Vec::new();
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                // A string literal, triple-quoted or not, to its closing quote.
                let triple = chars.clone().take(2).all(|n| n == c);
                if triple {
                    chars.next();
                    chars.next();
                }
                let mut run = 0;
                let mut closed = false;
                while let Some(n) = chars.next() {
                    if n == '\\' {
                        chars.next();
                        run = 0;
                    } else if n == c {
                        run += 1;
                        if !triple || run == 3 {
                            closed = true;
                            break;
                        }
                    } else {
                        run = 0;
                    }
                }
                if !closed {
                    return false;
                }
            }
            '#' => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
            }
            '(' | '[' | '{' => depth.push(c),
            ')' | ']' | '}' => {
                let open = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                if depth.pop() != Some(open) {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth.is_empty()
}

/// Task I: the predicted operand in an answer.
pub fn predict_operand(text: &str, masked_line: &str) -> Result<String, NoCode> {
    if text.trim().is_empty() {
        return Err(NoCode::Empty);
    }
    let code = extract_code(text, Language::Python);
    let mut sources: Vec<&str> = Vec::new();
    if let Some(c) = &code {
        sources.push(c);
    }
    sources.push(text);
    for source in &sources {
        if let Some(p) = align_in_lines(source, masked_line) {
            return Ok(p);
        }
    }
    let code = code.ok_or(NoCode::NoCodeFound)?;
    let lines: Vec<&str> = code.lines().filter(|l| !l.trim().is_empty()).collect();
    match lines.as_slice() {
        [one] => {
            let one = one.trim().trim_matches('`').trim();
            if one.is_empty() || one.starts_with("assert ") {
                Err(NoCode::NoPrediction {
                    masked_line: masked_line.trim().to_string(),
                })
            } else {
                Ok(one.to_string())
            }
        }
        lines => {
            // A bare operand over several lines (a dict or list literal, a call with one
            // argument a line) is one logical line of Python: its brackets close only on its
            // last line, or its lines end in backslashes. Lines are trimmed, as aligned
            // predictions are.
            let lines: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
            let operand = lines.join("\n");
            if !operand.starts_with("assert ") && is_one_logical_line(&lines) {
                Ok(operand)
            } else {
                Err(NoCode::NoPrediction {
                    masked_line: masked_line.trim().to_string(),
                })
            }
        }
    }
}

/// Whether `lines` make one logical line of Python: every line but the last leaves a bracket
/// open or ends in a backslash, and the last closes them all.
fn is_one_logical_line(lines: &[&str]) -> bool {
    let ends = |k: usize| {
        let text = lines[..k].join("\n");
        brackets_balance(&text) && !text.ends_with('\\')
    };
    (1..lines.len()).all(|k| !ends(k)) && ends(lines.len())
}

/// Removes the common leading whitespace of non-blank lines and indents each with `indent`.
pub fn reindent(code: &str, indent: &str) -> String {
    let common = code
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(code.len() + 64);
    for line in code.lines() {
        if line.trim().is_empty() {
            out.push('\n');
        } else {
            out.push_str(indent);
            out.push_str(&line[common.min(line.len())..]);
            out.push('\n');
        }
    }
    out
}

/// The indentation code placed after `prefix` needs, when nothing better is known: one level
/// deeper than a header the prefix ends with (`def …:`, `class …:`); inside a class body when
/// the prefix ends in one; otherwise none.
pub fn indent_after(prefix: &str) -> String {
    let lines: Vec<&str> = prefix.lines().filter(|l| !l.trim().is_empty()).collect();
    let indent_of = |l: &str| l[..l.len() - l.trim_start().len()].to_string();
    let Some(last) = lines.last() else {
        return String::new();
    };
    if last.trim_end().ends_with(':') {
        // The header's first line: the nearest `def`/`class` at or above the last line.
        let header = lines
            .iter()
            .rev()
            .find(|l| {
                let t = l.trim_start();
                t.starts_with("def ") || t.starts_with("async def ") || t.starts_with("class ")
            })
            .unwrap_or(last);
        return format!("{}    ", indent_of(header));
    }
    // Still inside a class body: the last top-level line is a `class` header.
    let last_top = lines
        .iter()
        .rev()
        .find(|l| !l.starts_with(' ') && !l.starts_with('\t') && !l.trim_start().starts_with('#'));
    match last_top {
        Some(l) if l.starts_with("class ") => "    ".into(),
        _ => String::new(),
    }
}

fn language_of(response: &Response) -> Language {
    response.exec.language.unwrap_or(match response.task {
        Task::CppUnitTest => Language::Cpp,
        _ => Language::Python,
    })
}

/// The candidate test for a response: the code in its answer, between `exec.prefix` and
/// `exec.suffix`. This is what sandbox-run calls; an `Err` is outcome `no_code` with the
/// error as its message.
pub fn assemble_candidate(response: &Response) -> Result<Candidate, NoCode> {
    if let Some(e) = &response.error {
        return Err(NoCode::ResponseError(e.clone()));
    }
    if response.text.trim().is_empty() {
        return Err(NoCode::Empty);
    }
    let exec = &response.exec;
    let scoring_str = |k: &str| response.scoring.get(k).and_then(|v| v.as_str());
    if response.task == Task::AssertionCloze {
        let answer = match scoring_str("masked_line") {
            Some(masked) => predict_operand(&response.text, masked)?,
            None => {
                let code =
                    extract_code(&response.text, Language::Python).ok_or(NoCode::NoCodeFound)?;
                code.trim().to_string()
            }
        };
        // Two layouts: a prefix that stops at the start of the assertion's line takes the
        // whole filled line (re-indented to `scoring.indent`); one that stops mid-line, right
        // where the mask was, takes the operand alone.
        let middle = match scoring_str("masked_line") {
            Some(masked) if exec.prefix.is_empty() || exec.prefix.ends_with('\n') => {
                let filled = masked.replace("<MASK>", &answer);
                let indent = scoring_str("indent").unwrap_or("");
                let mut line = String::new();
                for (i, l) in filled.lines().enumerate() {
                    if i > 0 {
                        line.push('\n');
                    }
                    if !l.trim().is_empty() {
                        line.push_str(indent);
                    }
                    line.push_str(l);
                }
                if !exec.suffix.is_empty() && !exec.suffix.starts_with('\n') {
                    line.push('\n');
                }
                line
            }
            _ => answer.clone(),
        };
        let text = format!("{}{}{}", exec.prefix, middle, exec.suffix);
        return Ok(Candidate { answer, text });
    }
    let language = language_of(response);
    let code = extract_code(&response.text, language).ok_or(NoCode::NoCodeFound)?;
    let answer = match language {
        Language::Python => {
            let indent = scoring_str("indent")
                .map(str::to_string)
                .unwrap_or_else(|| indent_after(&exec.prefix));
            reindent(&code, &indent)
        }
        Language::Cpp => {
            let mut c = code;
            if !c.ends_with('\n') {
                c.push('\n');
            }
            c
        }
    };
    Ok(Candidate::between(exec, answer))
}

impl Candidate {
    /// The candidate whose code is `answer`: the file is `exec.prefix`, a newline if the
    /// prefix does not end with one, `answer`, `exec.suffix`.
    pub(crate) fn between(exec: &ExecSpec, answer: String) -> Candidate {
        let mut text =
            String::with_capacity(exec.prefix.len() + answer.len() + exec.suffix.len() + 1);
        text.push_str(&exec.prefix);
        if !exec.prefix.is_empty() && !exec.prefix.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&answer);
        text.push_str(&exec.suffix);
        Candidate { answer, text }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_with_and_without_tags_prose_and_missing_close() {
        let t = "Here you go:\n```python\nimport x\n```\nand the test:\n```\ndef test_a():\n    assert x.f()\n```\nDone.";
        assert_eq!(
            extract_code(t, Language::Python).unwrap(),
            "import x\n\ndef test_a():\n    assert x.f()\n"
        );
        let t =
            "Sure!\n```\ndef test_a():\n    assert x.f()\n```\n```\ndef test_b():\n    pass\n```";
        assert_eq!(
            extract_code(t, Language::Python).unwrap(),
            "def test_a():\n    assert x.f()\n\ndef test_b():\n    pass\n"
        );
        let t = "Text\n```py\ndef test_a():\n    assert 1\n";
        let blocks = code_blocks(t);
        assert!(!blocks[0].closed);
        assert_eq!(
            extract_code(t, Language::Python).unwrap(),
            "def test_a():\n    assert 1\n"
        );
        let t = "```bash\npytest -q\n```\n```python\ndef test_a(): pass\n```";
        assert_eq!(
            extract_code(t, Language::Python).unwrap(),
            "def test_a(): pass\n"
        );
        let t = "```cpp\nTEST(A, B) {}\n```\n```python\nx\n```";
        assert_eq!(extract_code(t, Language::Cpp).unwrap(), "TEST(A, B) {}\n");
        assert_eq!(extract_code("  \n", Language::Python), None);
        assert_eq!(extract_code("```python\n```", Language::Python), None);
        assert_eq!(
            extract_code("\n    x = 1\n    assert x\n\n", Language::Python).unwrap(),
            "    x = 1\n    assert x"
        );
        // Indented fences and tildes.
        let t = "  ~~~~ {.python}\n  def f():\n      pass\n  ~~~~\n";
        assert_eq!(
            extract_code(t, Language::Python).unwrap(),
            "def f():\n    pass\n"
        );
        assert_eq!(
            extract_code("```x == 1```", Language::Python).unwrap(),
            "x == 1\n"
        );
    }

    /// Assertions over several lines, as real suites write them (toolz, jinja2, itsdangerous):
    /// a masked line that spans lines, and a one-line mask filled with a multi-line operand.
    #[test]
    fn task_one_multi_line_assertions_are_aligned_whole() {
        let m = "assert list(mapcat(identity, [[1, 2], [3]])) == [\n    <MASK>,\n]";
        let answer =
            "```python\nassert list(mapcat(identity, [[1, 2], [3]])) == [\n    1, 2, 3,\n]\n```";
        assert_eq!(predict_operand(answer, m).unwrap(), "1, 2, 3");
        let m = "assert d == <MASK>";
        let answer = r#"assert d == {
    'a': (1, 2),
    'b': "a ) in a string",  # a ) comment
}
"#;
        assert_eq!(
            predict_operand(answer, m).unwrap(),
            "{\n'a': (1, 2),\n'b': \"a ) in a string\",  # a ) comment\n}"
        );
        // Where the operand never closes, nothing is predicted from a cut-off line.
        assert!(predict_operand("assert d == {\n    'a': 1,\n", m).is_err());
        // A line continued with a backslash (toolz's test_groupby_non_callable).
        let m = "assert <MASK>";
        let answer = "assert f(0) == \\\n        {1: [2]}\n";
        assert_eq!(predict_operand(answer, m).unwrap(), "f(0) == \\\n{1: [2]}");
        // A long list with comments in it (click's test_hiding_of_unset_sentinel_in_callbacks).
        let items: Vec<String> = (0..40)
            .map(|i| format!("    # item {i}, (not a bracket\n    \"v{i}: [x]\","))
            .collect();
        let answer = format!("assert out == [\n{}\n]\nassert done\n", items.join("\n"));
        let p = predict_operand(&answer, "assert out == <MASK>").unwrap();
        assert!(
            p.starts_with("[\n# item 0") && p.ends_with("\"v39: [x]\",\n]"),
            "{p}"
        );
        let m = "assert d == <MASK>";
        let triple = "assert d == '''x\n(y'''";
        assert_eq!(predict_operand(triple, m).unwrap(), "'''x\n(y'''");
    }

    /// A bare operand over several lines is an answer, as a one-line one is (3 of 50 Task I
    /// answers of a held-out baseline were `no_code` for it); several statements are not.
    #[test]
    fn task_one_bare_operands_may_span_lines() {
        let m = "    assert get_type_hints(f) == <MASK>";
        let answer = "```python\n{\n    \"val\": typing.Optional[int],\n    \"x\": int,\n}\n```";
        assert_eq!(
            predict_operand(answer, m).unwrap(),
            "{\n\"val\": typing.Optional[int],\n\"x\": int,\n}"
        );
        assert_eq!(
            predict_operand("Money(\n    5,\n    'USD')", m).unwrap(),
            "Money(\n5,\n'USD')"
        );
        assert_eq!(predict_operand("1 + \\\n2", m).unwrap(), "1 + \\\n2");
        for not_one in [
            "x = {1: 2}\ny = x",
            "{1: 2}\n{3: 4}",
            "assert other(f) == {\n    1: 2}",
            "{\n    1: 2,\n",
        ] {
            assert!(
                matches!(
                    predict_operand(not_one, m),
                    Err(NoCode::NoPrediction { .. })
                ),
                "{not_one:?}"
            );
        }
        // Placed in the filled line, it makes a candidate that runs.
        let mut r = response(Task::AssertionCloze, "{\n    'a': 1,\n}");
        r.exec.prefix = "def test_t():\n    d = {'a': 1}\n".into();
        r.exec.suffix = "\n".into();
        r.scoring
            .insert("masked_line".into(), "assert d == <MASK>".into());
        r.scoring.insert("indent".into(), "    ".into());
        let c = assemble_candidate(&r).unwrap();
        assert_eq!(
            c.text,
            "def test_t():\n    d = {'a': 1}\n    assert d == {\n    'a': 1,\n    }\n"
        );
    }

    #[test]
    fn task_one_predictions_are_aligned() {
        let m = "    assert ledger.balance('cash') == <MASK>";
        assert_eq!(
            align_prediction("assert ledger.balance( 'cash' )==Money(5, 'USD')", m).as_deref(),
            Some("Money(5, 'USD')")
        );
        assert_eq!(align_prediction("assert other == 5", m), None);
        let m = "assert <MASK> in d";
        assert_eq!(align_prediction("assert x in d", m).as_deref(), Some("x"));
        assert_eq!(align_prediction("assert  in d", m), None);
        // Whole-line answers, fenced or not, and bare operands.
        let m = "    assert total == <MASK>";
        assert_eq!(
            predict_operand("```python\nassert total == 42\n```", m).unwrap(),
            "42"
        );
        assert_eq!(
            predict_operand("The answer:\nassert total == 42", m).unwrap(),
            "42"
        );
        assert_eq!(predict_operand("42", m).unwrap(), "42");
        assert_eq!(predict_operand("`42`", m).unwrap(), "42");
        assert!(matches!(
            predict_operand("assert other == 42", m),
            Err(NoCode::NoPrediction { .. })
        ));
        assert!(matches!(
            predict_operand("I think\nit is\nforty-two", m),
            Err(NoCode::NoPrediction { .. })
        ));
        assert_eq!(predict_operand("", m), Err(NoCode::Empty));
    }

    #[test]
    fn indentation() {
        assert_eq!(
            reindent("x = 1\nif x:\n    y()\n", "        "),
            "        x = 1\n        if x:\n            y()\n"
        );
        assert_eq!(reindent("    a\n\n      b", ""), "a\n\n  b\n");
        assert_eq!(indent_after("import x\n\ndef test_a(book):\n"), "    ");
        assert_eq!(
            indent_after("class TestX:\n    def test_a(\n        self,\n    ):\n"),
            "        "
        );
        assert_eq!(
            indent_after(
                "class TestX:\n    start = 1\n\n    def setup_method(self):\n        self.a = 1\n"
            ),
            "    "
        );
        assert_eq!(
            indent_after("import x\n\n\ndef helper():\n    return 1\n"),
            ""
        );
    }

    fn response(task: Task, text: &str) -> Response {
        Response {
            kind: clover_protocol::RecordKind::Response,
            schema_version: clover_protocol::SCHEMA_VERSION,
            id: "i@m".into(),
            instance_id: "i".into(),
            model: "m".into(),
            task,
            setting: "po".into(),
            repo: "r".into(),
            text: text.into(),
            error: None,
            generation: Default::default(),
            exec: Default::default(),
            scoring: Default::default(),
        }
    }

    #[test]
    fn candidates() {
        let mut r = response(Task::AssertionCloze, "```\nassert total == 4 + 2\n```");
        r.exec.prefix = "def test_t():\n    total = 6\n    assert total == ".into();
        r.exec.suffix = "\n".into();
        r.scoring
            .insert("masked_line".into(), "    assert total == <MASK>".into());
        let c = assemble_candidate(&r).unwrap();
        assert_eq!(c.answer, "4 + 2");
        assert_eq!(
            c.text,
            "def test_t():\n    total = 6\n    assert total == 4 + 2\n"
        );
        // pack-context's layout: the prefix stops at the line, which is rebuilt from the mask.
        r.exec.prefix = "def test_t():\n    total = 6\n".into();
        r.exec.suffix = "\n    done()\n".into();
        r.scoring.insert(
            "masked_line".into(),
            "assert total == (\n    <MASK>)".into(),
        );
        r.scoring.insert("indent".into(), "    ".into());
        r.text = "4 + 2".into();
        let c = assemble_candidate(&r).unwrap();
        assert_eq!(
            c.text,
            "def test_t():\n    total = 6\n    assert total == (\n        4 + 2)\n    done()\n"
        );

        let mut r = response(
            Task::TargetedTest,
            "Here:\n```python\nx = f()\nassert x\n```",
        );
        r.exec.prefix = "from m import f\n\ndef test_f():\n".into();
        let c = assemble_candidate(&r).unwrap();
        assert_eq!(
            c.text,
            "from m import f\n\ndef test_f():\n    x = f()\n    assert x\n"
        );
        r.scoring.insert("indent".into(), "        ".into());
        assert_eq!(
            assemble_candidate(&r).unwrap().answer,
            "        x = f()\n        assert x\n"
        );

        let mut r = response(Task::CoverageTest, "no code here");
        r.error = Some("HTTP 500".into());
        assert!(matches!(
            assemble_candidate(&r),
            Err(NoCode::ResponseError(_))
        ));
        let r = response(Task::CppUnitTest, "```cpp\n```\nsorry");
        assert_eq!(assemble_candidate(&r), Err(NoCode::NoCodeFound));
    }
}
