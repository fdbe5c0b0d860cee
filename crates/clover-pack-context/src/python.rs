//! Where things stand in a Python problem file, and how a candidate file is put together.

use clover_protocol::{fnv1a64, PythonProblem};

/// The byte offset where the line holding `byte` starts.
pub fn line_start(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1)
}

/// The byte offset where the line holding `byte` ends (at its newline, or the end of text).
pub fn line_end(text: &str, byte: usize) -> usize {
    let byte = byte.min(text.len());
    text[byte..].find('\n').map_or(text.len(), |i| byte + i)
}

/// The leading spaces and tabs of `line`.
pub fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Removes `indent` from the start of every line that has it.
pub fn dedent(text: &str, indent: &str) -> String {
    if indent.is_empty() {
        return text.to_string();
    }
    text.split_inclusive('\n')
        .map(|l| l.strip_prefix(indent).unwrap_or(l))
        .collect()
}

/// A test function's body cut out of its problem file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodySplit {
    /// The problem file up to the start of the body's first line: setup code and declaration.
    pub prefix: String,
    /// The body's lines with the body indentation removed.
    pub body: String,
    /// The indentation of the body's first line.
    pub indent: String,
    /// The problem file after the body.
    pub suffix: String,
}

/// Finds the body of `p` in its problem file.
pub fn split_body(p: &PythonProblem) -> Result<BodySplit, String> {
    let text = &p.problem_text;
    let body = p.body.trim_end_matches('\n');
    let trimmed = body.trim_start();
    if trimmed.is_empty() {
        return Err("the test has an empty body".into());
    }
    let decl_line = p.problem_declaration_line.max(1) as usize;
    let decl_start = text
        .split_inclusive('\n')
        .take(decl_line - 1)
        .map(str::len)
        .sum::<usize>();
    let found = text[decl_start..]
        .find(trimmed)
        .map(|i| decl_start + i)
        .ok_or("the body is not in the problem file after its declaration")?;
    let start = line_start(text, found);
    let end = found + trimmed.len();
    let end = if text[end..].starts_with('\n') {
        end + 1
    } else {
        end
    };
    let indent = indent_of(&text[start..]).to_string();
    Ok(BodySplit {
        prefix: text[..start].to_string(),
        body: dedent(&text[start..end], &indent),
        indent,
        suffix: text[end..].to_string(),
    })
}

/// Where a candidate file goes: next to the problem file (so `conftest.py` applies), named
/// from a hash of `key` so that instances never share a file.
pub fn candidate_path(problem_file: &str, key: &str) -> String {
    let dir = problem_file.rfind('/').map_or("", |i| &problem_file[..=i]);
    format!("{dir}tmp_cand_{:016x}.py", fnv1a64(key.as_bytes()))
}

/// The problem's pytest node id pointed at the candidate file instead.
pub fn candidate_selector(node_id: &str, candidate: &str) -> String {
    match node_id.find("::") {
        Some(i) => format!("{candidate}{}", &node_id[i..]),
        None => candidate.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_dedent() {
        let t = "a\n    bb\nc";
        assert_eq!(line_start(t, 6), 2);
        assert_eq!(line_end(t, 6), 8);
        assert_eq!(line_end(t, 9), 10);
        assert_eq!(indent_of("    x"), "    ");
        assert_eq!(dedent("    a\n      b\nc\n", "    "), "a\n  b\nc\n");
    }

    #[test]
    fn candidates_sit_next_to_the_problem() {
        let c = candidate_path("tests/tmp_test_money_3.py", "x");
        assert!(
            c.starts_with("tests/tmp_cand_") && c.ends_with(".py"),
            "{c}"
        );
        assert_eq!(
            candidate_selector("tests/tmp_test_a_1.py::TestA::test_b", "tests/c.py"),
            "tests/c.py::TestA::test_b"
        );
    }
}
