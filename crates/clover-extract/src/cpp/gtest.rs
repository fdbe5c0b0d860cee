//! The GoogleTest cases of a test file: `TEST`, `TEST_F`, `TEST_P`, `TYPED_TEST`,
//! `TYPED_TEST_P`, each with the span from the macro to its closing brace.
//!
//! Found lexically rather than with tree-sitter: the macros are not C++ a grammar knows, and
//! a parser's recovery around them varies, while `NAME(Suite, Test) { ... }` outside literals
//! and preprocessor lines is unambiguous.

use clover_protocol::{GTestCase, Span};

use super::lex::{scan, TokenKind};

const MACROS: &[&str] = &["TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P"];

/// The test cases in `code` (comments already stripped), in order. Spans are in `code`.
pub(crate) fn find_tests(code: &str) -> Vec<GTestCase> {
    let literals: Vec<std::ops::Range<usize>> = scan(code)
        .into_iter()
        .filter(|(_, k)| *k == TokenKind::Literal)
        .map(|(r, _)| r)
        .collect();
    let in_literal = |i: usize| literals.iter().any(|r| r.contains(&i));
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !(c.is_ascii_alphabetic() || c == b'_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let word = &code[start..i];
        let boundary =
            start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
        if !boundary
            || !MACROS.contains(&word)
            || in_literal(start)
            || on_directive_line(code, start)
        {
            continue;
        }
        if let Some((suite, name, open)) = header(code, i) {
            if let Some(close) = matching_brace(b, open, &in_literal) {
                out.push(GTestCase {
                    macro_name: word.to_string(),
                    suite,
                    name,
                    span: Span {
                        start_line: line_of(code, start),
                        end_line: line_of(code, close),
                        start_byte: start as u32,
                        end_byte: close as u32 + 1,
                    },
                });
                i = close + 1;
            }
        }
    }
    out
}

fn line_of(code: &str, byte: usize) -> u32 {
    code[..byte].matches('\n').count() as u32 + 1
}

fn on_directive_line(code: &str, at: usize) -> bool {
    let line_start = code[..at].rfind('\n').map_or(0, |p| p + 1);
    code[line_start..at].trim_start().starts_with('#')
}

/// Parses `(Suite, Name)` then whitespace and `{` after a macro name ending at `i`; returns
/// the two names and the position of the brace.
fn header(code: &str, i: usize) -> Option<(String, String, usize)> {
    let rest = &code[i..];
    let open_paren = rest.find(|c: char| !c.is_whitespace())?;
    if !rest[open_paren..].starts_with('(') {
        return None;
    }
    let close_paren = rest[open_paren..].find(')')? + open_paren;
    let args = &rest[open_paren + 1..close_paren];
    let (suite, name) = args.split_once(',')?;
    let ident = |s: &str| {
        let s = s.trim();
        (!s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| s.to_string())
    };
    let (suite, name) = (ident(suite)?, ident(name)?);
    let after = &rest[close_paren + 1..];
    let brace = after.find(|c: char| !c.is_whitespace())?;
    after[brace..]
        .starts_with('{')
        .then_some((suite, name, i + close_paren + 1 + brace))
}

fn matching_brace(b: &[u8], open: usize, in_literal: &dyn Fn(usize) -> bool) -> Option<usize> {
    let mut depth = 0usize;
    for (j, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' if !in_literal(j) => depth += 1,
            b'}' if !in_literal(j) => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_each_macro_with_its_span() {
        let code = concat!(
            "#define TEST_HELPER(x) x\n",
            "TEST(Suite, Plain) {\n  EXPECT_EQ(\"}\", f());\n}\n",
            "\n",
            "TEST_F(Fixture, UsesFixture) { ASSERT_TRUE(ok_); }\n",
            "TEST_P(Param, Each) {\n  if (x) {\n    y();\n  }\n}\n",
            "TYPED_TEST(Typed, Works) {}\n",
            "const char* s = \"TEST(No, Test) {}\";\n",
            "FRIEND_TEST(A, B);\n",
        );
        let tests = find_tests(code);
        let names: Vec<(&str, &str, &str, u32, u32)> = tests
            .iter()
            .map(|t| {
                (
                    t.macro_name.as_str(),
                    t.suite.as_str(),
                    t.name.as_str(),
                    t.span.start_line,
                    t.span.end_line,
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("TEST", "Suite", "Plain", 2, 4),
                ("TEST_F", "Fixture", "UsesFixture", 6, 6),
                ("TEST_P", "Param", "Each", 7, 11),
                ("TYPED_TEST", "Typed", "Works", 12, 12),
            ]
        );
        let t = &tests[0];
        assert!(code[t.span.start_byte as usize..t.span.end_byte as usize].ends_with("f());\n}"));
    }
}
