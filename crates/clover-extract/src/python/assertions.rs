//! `assert` statements of a test: unary or binary, the operator, the operands, and whether each
//! operand is a constant.

use clover_protocol::AssertionForm;
use tree_sitter::Node;

/// One `assert` found in a test body, still as syntax nodes.
#[derive(Debug)]
pub(crate) struct RawAssertion<'t> {
    pub node: Node<'t>,
    pub form: AssertionForm,
    pub operator: Option<String>,
    pub operands: Vec<Node<'t>>,
}

/// The `assert` statements in a function body, in source order. Those inside nested functions,
/// lambdas and classes are left out: they run only if something calls them.
pub(crate) fn find<'t>(body: Node<'t>) -> Vec<RawAssertion<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![body];
    let mut found = Vec::new();
    while let Some(n) = stack.pop() {
        match n.kind() {
            "assert_statement" => {
                found.push(n);
                continue;
            }
            "function_definition" | "class_definition" | "lambda" => continue,
            _ => {}
        }
        let mut c = n.walk();
        for child in n.named_children(&mut c) {
            stack.push(child);
        }
    }
    found.sort_by_key(|n| n.start_byte());
    for node in found {
        let Some(test) = node.named_child(0) else {
            continue;
        };
        let test = unwrap_parens(test);
        let mut form = AssertionForm::Unary;
        let mut operator = None;
        let mut operands = vec![test];
        if test.kind() == "comparison_operator" {
            let mut c = test.walk();
            let parts: Vec<Node> = test.named_children(&mut c).collect();
            let mut c = test.walk();
            let ops: Vec<Node> = test.children_by_field_name("operators", &mut c).collect();
            // A chained comparison (`a < b < c`) has no single operator: it stays unary.
            if parts.len() == 2 && ops.len() == 1 {
                form = AssertionForm::Binary;
                operator = Some(ops[0].kind().to_string());
                operands = parts;
            }
        }
        out.push(RawAssertion {
            node,
            form,
            operator,
            operands,
        });
    }
    out
}

fn unwrap_parens(mut n: Node) -> Node {
    while n.kind() == "parenthesized_expression" && n.named_child_count() == 1 {
        match n.named_child(0) {
            Some(inner) if inner.kind() != "comment" => n = inner,
            _ => break,
        }
    }
    n
}

/// Whether an expression is a constant as Python's compiler sees it: a number, a string or
/// bytes (not an f-string with fields), `True`, `False`, `None`, `...`, a sign applied to a
/// number (folded to a constant), or a tuple of constants.
pub(crate) fn is_constant(n: Node, text: &str) -> bool {
    let mut c = n.walk();
    match n.kind() {
        "integer" | "float" | "true" | "false" | "none" | "ellipsis" => true,
        // An f-string is a JoinedStr to Python's compiler even without fields.
        "string" => {
            let f_prefix = n
                .child(0)
                .filter(|s| s.kind() == "string_start")
                .and_then(|s| text.get(s.byte_range()))
                .is_some_and(|prefix| prefix.contains(['f', 'F']));
            let fields = n
                .named_children(&mut c)
                .any(|x| x.kind() == "interpolation");
            !fields && !f_prefix
        }
        "concatenated_string" | "tuple" => n
            .named_children(&mut c)
            .filter(|x| x.kind() != "comment")
            .all(|x| is_constant(x, text)),
        "unary_operator" => {
            let sign = n
                .child_by_field_name("operator")
                .is_some_and(|o| matches!(o.kind(), "-" | "+"));
            sign && n
                .child_by_field_name("argument")
                .is_some_and(|a| matches!(a.kind(), "integer" | "float"))
        }
        "parenthesized_expression" => {
            let inner: Vec<Node> = n
                .named_children(&mut c)
                .filter(|x| x.kind() != "comment")
                .collect();
            inner.len() == 1 && is_constant(inner[0], text)
        }
        _ => false,
    }
}

/// Whether a Python expression, given as text, is a constant in the sense of
/// [`AssertionSite`](clover_protocol::AssertionSite) operands. Text that does not parse as one
/// expression is not a constant. Scoring uses this on model answers.
pub fn is_constant_operand(text: &str) -> bool {
    let mut parser = tree_sitter::Parser::new();
    if parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .is_err()
    {
        return false;
    }
    let trimmed = text.trim();
    let Some(tree) = parser.parse(trimmed, None) else {
        return false;
    };
    let root = tree.root_node();
    if root.has_error() || root.named_child_count() != 1 {
        return false;
    }
    let stmt = root.named_child(0).unwrap();
    if stmt.kind() != "expression_statement" || stmt.named_child_count() != 1 {
        return false;
    }
    is_constant(stmt.named_child(0).unwrap(), trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_follow_python_ast_rules() {
        for yes in [
            "1",
            "1.5",
            "-3",
            "+2.0",
            "1j",
            "'a'",
            "b'x'",
            "'a' 'b'",
            "True",
            "False",
            "None",
            "...",
            "(1, 'a', None)",
            "()",
            "((1, 2), 3)",
            "(4)",
            "r'\\d'",
            "0x1F",
            "(  7  )",
            "\"\"\"doc\"\"\"",
            "(1500, 0)",
            "(1, ('a', None))",
        ] {
            assert!(is_constant_operand(yes), "{yes} should be a constant");
        }
        for no in [
            "x",
            "f(1)",
            "[1, 2]",
            "{1: 2}",
            "{1}",
            "f'{x}'",
            "(1, x)",
            "-x",
            "not True",
            "a.b",
            "1 + 2",
            "Money(5)",
            "",
            "x = 1",
            "f'plain'",
            "F'x'",
            "rf'a'",
            "1 ==",
            "x if y else z",
        ] {
            assert!(!is_constant_operand(no), "{no} should not be a constant");
        }
    }
}
