//! Mutation sites in Python (tree-sitter-python).

use tree_sitter::Node;

use crate::operator::{self, Operator};
use crate::sites::{field_children, string_replacement, walk, Descend, Errors, Sites};

pub(crate) fn find(root: Node<'_>, sites: &mut Sites<'_>) {
    // A Python mutant that does not compile would fail its run: kill, not be invalid.
    walk(root, sites, Errors::Skip, |node, _field, sites| {
        visit(node, sites)
    });
}

fn visit(node: Node<'_>, sites: &mut Sites<'_>) -> Descend {
    match node.kind() {
        // Annotations are not run (or only read by tools); decorators run at import, where a
        // mutant breaks every test alike.
        "type" | "decorator" | "comment" => return Descend::No,
        "binary_operator" | "augmented_assignment" => {
            if let Some(op) = node.child_by_field_name("operator") {
                if let Some(r) = operator::arithmetic(sites.text_of(op)) {
                    sites.replace(op, Operator::Arithmetic, r);
                }
            }
        }
        "comparison_operator" => {
            for op in field_children(node, "operators") {
                // `is not` and `not in` may hold any whitespace between their words.
                let words = sites.text_of(op).split_whitespace().collect::<Vec<_>>();
                let op_text = words.join(" ");
                if let Some(r) = operator::negated_comparison(&op_text) {
                    sites.replace(op, Operator::Comparison, r);
                }
                if let Some(r) = operator::boundary(&op_text) {
                    sites.replace(op, Operator::Boundary, r);
                }
            }
        }
        "boolean_operator" => {
            if let Some(op) = node.child_by_field_name("operator") {
                if let Some(r) = operator::boolean(sites.text_of(op)) {
                    sites.replace(op, Operator::Boolean, r);
                }
            }
        }
        "not_operator" => {
            if let Some(arg) = node.child_by_field_name("argument") {
                sites.replace(node, Operator::Boolean, sites.text_of(arg));
            }
        }
        "integer" => {
            for r in operator::integer(sites.text_of(node)) {
                sites.replace(node, Operator::Constant, r);
            }
        }
        "true" => sites.replace(node, Operator::Constant, "False"),
        "false" => sites.replace(node, Operator::Constant, "True"),
        "string" => {
            string(node, sites);
            // Interpolations are code: `f"{a + 1}"` has an arithmetic site.
        }
        "if_statement" | "elif_clause" | "while_statement" => {
            if let Some(cond) = node.child_by_field_name("condition") {
                negate(cond, sites);
            }
        }
        "expression_statement" => delete_statement(node, sites),
        "return_statement" => {
            if let Some(value) = node.named_child(0) {
                if value.kind() != "none" {
                    let r = same_lines(sites, value, "None".into(), Context::Expression);
                    sites.replace(value, Operator::ReturnValue, r);
                }
            }
        }
        _ => {}
    }
    Descend::Yes
}

fn string(node: Node<'_>, sites: &mut Sites<'_>) {
    // A string standing alone as a statement (a docstring) is never read: emptying it is an
    // equivalent mutant.
    let statement = match node.parent() {
        Some(p) if p.kind() == "concatenated_string" => p.parent(),
        p => p,
    };
    if statement.is_some_and(|s| s.kind() == "expression_statement") {
        return;
    }
    let (mut open, mut close, mut empty) = (None, None, true);
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "string_start" => open = Some(child),
            "string_end" => close = Some(child),
            _ => empty = false,
        }
    }
    if let (Some(open), Some(close)) = (open, close) {
        let r = string_replacement(sites.text_of(open), sites.text_of(close), empty);
        let r = same_lines(sites, node, r, Context::Expression);
        sites.replace(node, Operator::Constant, r);
    }
}

/// `not cond`, or `cond` when it is a `not` already.
fn negate(cond: Node<'_>, sites: &mut Sites<'_>) {
    let text = sites.text_of(cond);
    let negated = match cond.kind() {
        "not_operator" => match cond.child_by_field_name("argument") {
            Some(arg) => sites.text_of(arg).to_string(),
            None => return,
        },
        // These bind tighter than `not`, so they need no parentheses.
        "identifier" | "call" | "attribute" | "subscript" | "parenthesized_expression" => {
            format!("not {text}")
        }
        _ => format!("not ({text})"),
    };
    sites.replace(cond, Operator::NegateCondition, negated);
}

/// A statement run for its effect, replaced by `pass`: a call, an `await`, an augmented
/// assignment, a store into an attribute or subscript. A plain `x = …` is left alone: without
/// it the next read of `x` is a `NameError`, a mutant any test that runs the line kills.
fn delete_statement(node: Node<'_>, sites: &mut Sites<'_>) {
    if !node
        .parent()
        .is_some_and(|p| matches!(p.kind(), "block" | "module"))
        || node.named_child_count() != 1
    {
        return;
    }
    let Some(expr) = node.named_child(0) else {
        return;
    };
    let effect = match expr.kind() {
        "call" | "await" | "augmented_assignment" => true,
        "assignment" => expr
            .child_by_field_name("left")
            .is_some_and(|l| matches!(l.kind(), "attribute" | "subscript")),
        _ => false,
    };
    if effect {
        let r = same_lines(sites, node, "pass".into(), Context::Statement);
        sites.replace(node, Operator::DeleteStatement, r);
    }
}

/// Where a replacement stands.
enum Context {
    Expression,
    Statement,
}

/// `replacement` for `node`'s text, spread over as many lines as that text takes, so that
/// every line after the mutant is where it was: the code objects of the rest of the module,
/// their line numbers included, are then those of the original, and a warm worker can patch
/// the mutant's function into a process that imported the original instead of importing the
/// mutant anew (a multi-line call deleted, a multi-line value returned as `None`). An
/// expression is parenthesised with the line breaks inside; a statement is followed by blank
/// lines, or by line continuations when code follows it on its last line.
fn same_lines(sites: &Sites<'_>, node: Node<'_>, replacement: String, at: Context) -> String {
    let lines = |t: &str| t.matches('\n').count();
    let missing = lines(sites.text_of(node)).saturating_sub(lines(&replacement));
    if missing == 0 {
        return replacement;
    }
    match at {
        Context::Expression => format!("({replacement}{})", "\n".repeat(missing)),
        Context::Statement => {
            let rest = sites.text[node.end_byte()..]
                .split('\n')
                .next()
                .unwrap_or("");
            let rest = rest.trim_start();
            if rest.is_empty() || rest.starts_with('#') {
                format!("{replacement}{}", "\n".repeat(missing))
            } else {
                format!("{replacement}{}", " \\\n".repeat(missing))
            }
        }
    }
}
