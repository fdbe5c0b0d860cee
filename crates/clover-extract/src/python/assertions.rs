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

/// What counts as a constant operand, for RER's rules (a constant in a unary assertion, a
/// constant compared with a constant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConstantReading {
    /// CLOVER's definition, Python's `ast.Constant`: a literal number, string or bytes (not
    /// an f-string), `True`, `False`, `None` or `...`, in parentheses or not. `-3` is a
    /// `UnaryOp` and `(1, 2)` a `Tuple` to `ast.parse`, so neither is a constant.
    #[default]
    Ast,
    /// clover's broader reading: also a sign applied to a number and a tuple of constants,
    /// which Python's compiler folds into one constant after parsing.
    Clover,
}

/// Whether an expression is a constant in the given reading (see [`ConstantReading`]).
pub(crate) fn is_constant(n: Node, text: &str, reading: ConstantReading) -> bool {
    let folded = reading == ConstantReading::Clover;
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
        // Adjacent literals are one string to the parser already.
        "concatenated_string" => n
            .named_children(&mut c)
            .filter(|x| x.kind() != "comment")
            .all(|x| is_constant(x, text, reading)),
        "tuple" if folded => n
            .named_children(&mut c)
            .filter(|x| x.kind() != "comment")
            .all(|x| is_constant(x, text, reading)),
        "unary_operator" if folded => {
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
            inner.len() == 1 && is_constant(inner[0], text, reading)
        }
        _ => false,
    }
}

/// Whether a Python expression, given as text, is a constant as `ast.Constant` is, the sense
/// of [`AssertionSite`](clover_protocol::AssertionSite) operands' `is_constant`. Text that does
/// not parse as one expression is not a constant. Scoring uses this on model answers.
pub fn is_constant_operand(text: &str) -> bool {
    is_constant_operand_as(text, ConstantReading::Ast)
}

/// [`is_constant_operand`] in the given reading.
pub fn is_constant_operand_as(text: &str, reading: ConstantReading) -> bool {
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
    is_constant(stmt.named_child(0).unwrap(), trimmed, reading)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expressions `ast.parse` makes a `Constant` of, in both readings.
    const CONSTANTS: &[&str] = &[
        "1",
        "1.5",
        "1j",
        "'a'",
        "b'x'",
        "'a' 'b'",
        "True",
        "False",
        "None",
        "...",
        "(4)",
        "r'\\d'",
        "0x1F",
        "(  7  )",
        "\"\"\"doc\"\"\"",
    ];

    /// Expressions Python's compiler folds into a constant though `ast.parse` does not (a
    /// `UnaryOp`, a `Tuple`): constants only in clover's reading.
    const FOLDED: &[&str] = &[
        "-3",
        "+2.0",
        "(1, 'a', None)",
        "()",
        "((1, 2), 3)",
        "(1500, 0)",
        "(1, ('a', None))",
        "(-1, 2)",
    ];

    /// Never constants.
    const NOT_CONSTANTS: &[&str] = &[
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
    ];

    /// The default reading is `ast.Constant` (checked against Python in
    /// `constants_match_python_ast` when an interpreter is at hand).
    #[test]
    fn constants_follow_python_ast_rules() {
        for yes in CONSTANTS {
            assert!(is_constant_operand(yes), "{yes} should be a constant");
        }
        for no in FOLDED.iter().chain(NOT_CONSTANTS) {
            assert!(!is_constant_operand(no), "{no} is no ast.Constant");
        }
    }

    #[test]
    fn clovers_reading_also_folds_signs_and_tuples() {
        for yes in CONSTANTS.iter().chain(FOLDED) {
            assert!(
                is_constant_operand_as(yes, ConstantReading::Clover),
                "{yes} should be a constant in clover's reading"
            );
        }
        for no in NOT_CONSTANTS {
            assert!(
                !is_constant_operand_as(no, ConstantReading::Clover),
                "{no} should not be a constant"
            );
        }
    }

    /// The lists above are what `ast.parse` says, asked of a real Python.
    #[test]
    fn constants_match_python_ast() {
        let Some(python) = clover_testkit::python() else {
            return;
        };
        let exprs: Vec<&str> = CONSTANTS.iter().chain(FOLDED).copied().collect();
        let script = "import ast, json, sys\nfor e in json.load(sys.stdin):\n    print(type(ast.parse(e, mode='eval').body).__name__)\n";
        let mut child = std::process::Command::new(python)
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(serde_json::to_string(&exprs).unwrap().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let kinds = String::from_utf8(out.stdout).unwrap();
        for (e, kind) in exprs.iter().zip(kinds.lines()) {
            assert_eq!(
                kind == "Constant",
                is_constant_operand(e),
                "{e}: ast.parse gives {kind}"
            );
        }
    }
}
