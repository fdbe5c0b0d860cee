//! Facts about a Python expression or snippet the scorer needs: is it a constant, how does it
//! read without layout, which names does it use. Parsed with tree-sitter-python.

use std::collections::BTreeSet;

use tree_sitter::{Node, Parser, Tree};

fn parse(code: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .ok()?;
    parser.parse(code, None)
}

/// Whether `expr` is a constant: a number (with an optional sign), a string or bytes literal
/// (concatenated or not, but no f-string), `True`, `False`, `None`, `...`, or a tuple of
/// constants. This is Python's `ast.Constant` plus signed numbers and constant tuples, which
/// are just as trivially known.
pub fn is_constant(expr: &str) -> bool {
    if expr.trim().is_empty() {
        return false;
    }
    let wrapped = format!("(\n{expr}\n)\n");
    let Some(tree) = parse(&wrapped) else {
        return false;
    };
    let root = tree.root_node();
    if root.has_error() || root.named_child_count() != 1 {
        return false;
    }
    let Some(stmt) = root
        .named_child(0)
        .filter(|n| n.kind() == "expression_statement")
    else {
        return false;
    };
    if stmt.named_child_count() != 1 {
        return false;
    }
    stmt.named_child(0)
        .is_some_and(|n| constant_node(n, wrapped.as_bytes()))
}

fn constant_node(node: Node, src: &[u8]) -> bool {
    let mut cursor = node.walk();
    match node.kind() {
        "integer" | "float" | "true" | "false" | "none" | "ellipsis" => true,
        "string" => {
            let prefix = node
                .child(0)
                .and_then(|s| s.utf8_text(src).ok())
                .unwrap_or("");
            !prefix.contains(['f', 'F'])
                && !node
                    .named_children(&mut cursor)
                    .any(|c| c.kind() == "interpolation")
        }
        "concatenated_string" => node
            .named_children(&mut cursor)
            .all(|c| constant_node(c, src)),
        "unary_operator" => {
            let op = node
                .child_by_field_name("operator")
                .and_then(|o| o.utf8_text(src).ok());
            matches!(op, Some("-" | "+"))
                && node
                    .child_by_field_name("argument")
                    .is_some_and(|a| matches!(a.kind(), "integer" | "float"))
        }
        "tuple" => node
            .named_children(&mut cursor)
            .filter(|c| c.kind() != "comment")
            .all(|c| constant_node(c, src)),
        "parenthesized_expression" => {
            let inner: Vec<Node> = node
                .named_children(&mut cursor)
                .filter(|c| c.kind() != "comment")
                .collect();
            inner.len() == 1 && constant_node(inner[0], src)
        }
        _ => false,
    }
}

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

/// The identifiers `code` uses (names and attribute names), from a parse of the dedented code.
pub fn identifiers(code: &str) -> BTreeSet<String> {
    let code = crate::extract::reindent(code, "");
    let mut out = BTreeSet::new();
    let Some(tree) = parse(&code) else {
        return out;
    };
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.kind() == "identifier" {
            if let Ok(t) = node.utf8_text(code.as_bytes()) {
                out.insert(t.to_string());
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants() {
        for c in [
            "1",
            "-1",
            "+2.5",
            "1e3",
            "0x1F",
            "1j",
            "'a'",
            "b\"x\"",
            "r'\\d'",
            "'a' 'b'",
            "True",
            "False",
            "None",
            "...",
            "(1500, 0)",
            "()",
            "(1, ('a', None))",
            "(  7  )",
            "\"\"\"doc\"\"\"",
        ] {
            assert!(is_constant(c), "{c} is a constant");
        }
        for c in [
            "x",
            "f(1)",
            "-x",
            "not True",
            "[1, 2]",
            "{'a': 1}",
            "f'{x}'",
            "f'plain'",
            "1 + 2",
            "a.b",
            "(x, 1)",
            "Money(5)",
            "",
            "1 ==",
            "x if y else z",
        ] {
            assert!(!is_constant(c), "{c} is not a constant");
        }
    }

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
