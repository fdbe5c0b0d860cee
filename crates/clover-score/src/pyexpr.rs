//! Facts about a Python expression or snippet the scorer needs: how it reads without layout,
//! which names it uses. Whether it is a constant is `clover_extract::is_constant_operand`, the
//! rule extract applies to the operands it records.

use std::collections::BTreeSet;

/// `expr` without whitespace outside string literals: `x  in d` and `x in  d` read the same,
/// `'a b'` keeps its space. What exact match compares.
pub fn normalize(expr: &str) -> String {
    let mut out = String::with_capacity(expr.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut last_kept: Option<char> = None;
    let mut pending_space = false;
    for c in expr.trim().chars() {
        match quote {
            Some(q) => {
                out.push(c);
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
                last_kept = Some(c);
            }
            None if c.is_whitespace() => pending_space = true,
            None => {
                // A space between two word characters carries meaning (`x in d`, `not x`).
                if pending_space && last_kept.is_some_and(is_word) && is_word(c) {
                    out.push(' ');
                }
                pending_space = false;
                if c == '\'' || c == '"' {
                    quote = Some(c);
                }
                out.push(c);
                last_kept = Some(c);
            }
        }
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifiers `code` uses (names and attribute names), from a parse of the dedented code
/// ([`clover_extract::identifiers`]).
pub fn identifiers(code: &str) -> BTreeSet<String> {
    clover_extract::identifiers(&clover_answer::reindent(code, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_forms() {
        assert_eq!(normalize(" Money( 5 ,'USD' ) "), "Money(5,'USD')");
        assert_eq!(normalize("x  in  d"), "x in d");
        assert_eq!(normalize("'a  b' + \"c \\\" d\""), "'a  b'+\"c \\\" d\"");
        assert_ne!(normalize("d"), normalize("d.keys()"));
    }

    #[test]
    fn names() {
        let ids = identifiers("    led = ledger.Ledger()\n    assert led.balance('x') == 0\n");
        for n in ["led", "ledger", "Ledger", "balance"] {
            assert!(ids.contains(n), "{n}");
        }
        assert!(!ids.contains("x"));
    }
}
