//! Just enough of C++'s lexical rules to tell comments from literals: `//` and `/* */`
//! comments (a `//` comment goes on past a backslash-newline), string and character literals
//! with escapes and encoding prefixes, raw strings `R"delim(...)delim"`, and digit separators
//! (`1'000`), which are not character literals.

use std::ops::Range;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Comment,
    Literal,
}

/// The comments and literals of `text`, in order, as byte ranges.
pub(crate) fn scan(text: &str) -> Vec<(Range<usize>, TokenKind)> {
    let b = text.as_bytes();
    let n = b.len();
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let c = b[i];
        let next = b.get(i + 1).copied().unwrap_or(0);
        if c == b'/' && next == b'/' {
            let start = i;
            i += 2;
            while i < n {
                if b[i] == b'\n' {
                    // A backslash before the newline splices the next line into the comment.
                    let mut j = i;
                    if j > start && b[j - 1] == b'\r' {
                        j -= 1;
                    }
                    if j > start && b[j - 1] == b'\\' {
                        i += 1;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            out.push((start..i, TokenKind::Comment));
        } else if c == b'/' && next == b'*' {
            let start = i;
            i += 2;
            while i < n && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i = (i + 2).min(n);
            out.push((start..i, TokenKind::Comment));
        } else if c == b'"' || c == b'\'' {
            let start = i;
            i = quoted_end(b, i);
            out.push((start..i, TokenKind::Literal));
        } else if c.is_ascii_digit() || (c == b'.' && next.is_ascii_digit()) {
            // A pp-number, which may hold digit separators and signed exponents.
            i += 1;
            while i < n {
                let d = b[i];
                let part = d.is_ascii_alphanumeric() || d == b'_' || d == b'.';
                let separator =
                    d == b'\'' && b.get(i + 1).is_some_and(|x| x.is_ascii_alphanumeric());
                let exponent_sign =
                    (d == b'+' || d == b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P');
                if !(part || separator || exponent_sign) {
                    break;
                }
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < n && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let ident = &text[start..i];
            let quote = b.get(i).copied();
            if quote == Some(b'"') && matches!(ident, "R" | "u8R" | "uR" | "UR" | "LR") {
                let end = raw_string_end(b, i);
                out.push((start..end, TokenKind::Literal));
                i = end;
            } else if matches!(quote, Some(b'"') | Some(b'\''))
                && matches!(ident, "L" | "u" | "U" | "u8")
            {
                let end = quoted_end(b, i);
                out.push((start..end, TokenKind::Literal));
                i = end;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The end of a `"..."` or `'...'` literal starting at `i`; an unterminated one ends at the
/// line's end, so one stray quote cannot swallow the file.
fn quoted_end(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'\n' => return j,
            x if x == q => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// The end of a raw string whose `"` is at `i`.
fn raw_string_end(b: &[u8], i: usize) -> usize {
    let open = i + 1;
    let Some(paren) = b[open..].iter().take(17).position(|&x| x == b'(') else {
        return quoted_end(b, i);
    };
    let delim = &b[open..open + paren];
    let mut closing = Vec::with_capacity(delim.len() + 2);
    closing.push(b')');
    closing.extend_from_slice(delim);
    closing.push(b'"');
    let body = open + paren + 1;
    b[body..]
        .windows(closing.len())
        .position(|w| w == closing.as_slice())
        .map_or(b.len(), |p| body + p + closing.len())
}

/// The text with every comment removed. Lines stay where they were: a comment that spans
/// lines leaves its newlines, a comment inside a line becomes one space (so `a/**/b` stays two
/// tokens), and whitespace left at the end of a line by a removed comment is trimmed. String,
/// character and raw-string literals are never touched, whatever they hold.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (range, kind) in scan(text) {
        if kind != TokenKind::Comment {
            continue;
        }
        out.push_str(&text[last..range.start]);
        let comment = &text[range.clone()];
        let newlines = comment.matches('\n').count();
        let is_line_comment = comment.starts_with("//");
        if newlines == 0 {
            if !is_line_comment {
                out.push(' ');
            }
        } else {
            for _ in 0..newlines {
                trim_line_end(&mut out);
                out.push('\n');
            }
        }
        last = range.end;
        // Whitespace that the comment leaves at the end of its line goes too.
        let rest = &text[last..];
        let line_rest = rest.split('\n').next().unwrap_or("");
        if line_rest.trim().is_empty() {
            trim_line_end(&mut out);
            last += line_rest.len();
        }
    }
    out.push_str(&text[last..]);
    out
}

fn trim_line_end(out: &mut String) {
    while out.ends_with(' ') || out.ends_with('\t') {
        out.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_comments_but_not_literals() {
        let src = concat!(
            "#include \"a.h\"  // the header\n",
            "const char* k = \"// not a comment /* nor this */\";\n",
            "char c = '/'; char d = '\\''; // tail\n",
            "/* block\n   over lines */ int x = 1'000'000;\n",
            "auto r = R\"x(raw // text /* here */)x\";\n",
            "int a/**/b;\n",
            "// continued \\\n still comment\n",
            "auto u = u8\"//\"; auto w = L'/';\n",
        );
        let want = concat!(
            "#include \"a.h\"\n",
            "const char* k = \"// not a comment /* nor this */\";\n",
            "char c = '/'; char d = '\\'';\n",
            "\n int x = 1'000'000;\n",
            "auto r = R\"x(raw // text /* here */)x\";\n",
            "int a b;\n",
            "\n\n",
            "auto u = u8\"//\"; auto w = L'/';\n",
        );
        let got = strip_comments(src);
        assert_eq!(got, want);
        assert_eq!(got.lines().count(), src.lines().count());
    }

    #[test]
    fn digit_separators_are_not_char_literals() {
        let src = "int n = 1'000; // c\nint m = 0x1'f; /* d */\n";
        assert_eq!(strip_comments(src), "int n = 1'000;\nint m = 0x1'f;\n");
    }
}
