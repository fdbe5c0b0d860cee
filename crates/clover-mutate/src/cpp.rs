//! Mutation sites in C++ (tree-sitter-cpp).
//!
//! Mull mutates LLVM IR, so its mutants always compile; these are made on the text, so the
//! rules stay away from places where a changed constant or operator is a compile error rather
//! than a behaviour (template arguments, array sizes, `case` labels, `static_assert`,
//! preprocessor lines). A mutant that still does not compile (`+` on a `std::string`) is the
//! caller's to drop: see [`crate::Verdict::Invalid`].

use tree_sitter::Node;

use crate::operator::{self, Operator};
use crate::sites::{string_replacement, walk, Descend, Errors, Sites};

pub(crate) fn find(root: Node<'_>, sites: &mut Sites<'_>) {
    walk(root, sites, Errors::Enter, |node, field, sites| {
        visit(node, field, sites)
    });
}

fn visit(node: Node<'_>, field: Option<&str>, sites: &mut Sites<'_>) -> Descend {
    let parent = node.parent().map(|p| p.kind()).unwrap_or("");
    // A `case` label must stay a distinct constant; a preprocessor condition is not C++.
    let pruned_field = matches!(
        (parent, field),
        ("case_statement", Some("value"))
            | ("preproc_if" | "preproc_elif", Some("condition"))
            | ("linkage_specification", Some("value"))
    );
    if pruned_field {
        return Descend::No;
    }
    match node.kind() {
        "comment"
        | "preproc_include"
        | "preproc_def"
        | "preproc_function_def"
        | "preproc_call"
        | "template_argument_list"
        | "template_parameter_list"
        | "static_assert_declaration"
        | "array_declarator"
        | "bitfield_clause"
        | "sizeof_expression"
        | "alignof_expression"
        | "attribute_declaration"
        | "attribute_specifier"
        | "decltype"
        | "noexcept"
        | "alignas_qualifier"
        | "offsetof_expression"
        | "requires_clause"
        | "requires_expression"
        | "concept_definition"
        | "gnu_asm_expression"
        | "ms_declspec_modifier" => return Descend::No,
        "binary_expression" => {
            if let Some(op) = node.child_by_field_name("operator") {
                let op_text = sites.text_of(op);
                if let Some(r) = operator::arithmetic(op_text) {
                    sites.replace(op, Operator::Arithmetic, r);
                }
                if let Some(r) = operator::negated_comparison(op_text) {
                    sites.replace(op, Operator::Comparison, r);
                }
                if let Some(r) = operator::boundary(op_text) {
                    sites.replace(op, Operator::Boundary, r);
                }
                if let Some(r) = operator::boolean(op_text) {
                    sites.replace(op, Operator::Boolean, r);
                }
            }
        }
        "assignment_expression" | "update_expression" => {
            if let Some(op) = node.child_by_field_name("operator") {
                if let Some(r) = operator::arithmetic(sites.text_of(op)) {
                    sites.replace(op, Operator::Arithmetic, r);
                }
            }
        }
        "unary_expression" => {
            if let Some(arg) = not_argument(node, sites) {
                sites.replace(node, Operator::Boolean, sites.text_of(arg));
            }
        }
        "number_literal" => number(node, sites),
        "true" => sites.replace(node, Operator::Constant, "false"),
        "false" => sites.replace(node, Operator::Constant, "true"),
        "string_literal" => string(node, sites),
        "if_statement" | "while_statement" => {
            // `if constexpr` picks what is compiled: its negation rarely compiles.
            let constexpr = {
                let mut cursor = node.walk();
                let found = node.children(&mut cursor).any(|c| c.kind() == "constexpr");
                found
            };
            let value = node
                .child_by_field_name("condition")
                .and_then(|c| c.child_by_field_name("value"));
            if let (false, Some(value)) = (constexpr, value) {
                // `if (auto p = f())` declares; there is no expression to negate.
                if value.kind() != "declaration" {
                    negate(value, sites);
                }
            }
        }
        "do_statement" => {
            if let Some(inner) = node
                .child_by_field_name("condition")
                .and_then(|c| c.named_child(0))
            {
                negate(inner, sites);
            }
        }
        "for_statement" => {
            if let Some(cond) = node.child_by_field_name("condition") {
                negate(cond, sites);
            }
        }
        "expression_statement" => delete_statement(node, sites),
        "return_statement" => return_value(node, sites),
        _ => {}
    }
    Descend::Yes
}

/// The operand of a `!`.
fn not_argument<'t>(node: Node<'t>, sites: &Sites<'_>) -> Option<Node<'t>> {
    if node.kind() != "unary_expression" {
        return None;
    }
    let op = node.child_by_field_name("operator")?;
    matches!(sites.text_of(op), "!" | "not")
        .then(|| node.child_by_field_name("argument"))
        .flatten()
}

/// A decimal integer keeps its suffix (`10u` → `0u`); other bases and floats are left alone.
fn number(node: Node<'_>, sites: &mut Sites<'_>) {
    // tree-sitter-cpp reads `-5` as one literal.
    let (minus, text) = match sites.text_of(node).strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, sites.text_of(node)),
    };
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    if !suffix
        .chars()
        .all(|c| matches!(c, 'u' | 'U' | 'l' | 'L' | 'z' | 'Z'))
    {
        return;
    }
    for r in operator::integer(digits) {
        let sign = if minus && r != "0" { "-" } else { "" };
        sites.replace(node, Operator::Constant, format!("{sign}{r}{suffix}"));
    }
}

fn string(node: Node<'_>, sites: &mut Sites<'_>) {
    let count = node.child_count();
    if count < 2 {
        return;
    }
    let (Some(open), Some(close)) = (node.child(0), node.child(count - 1)) else {
        return;
    };
    let empty = count == 2;
    let r = string_replacement(sites.text_of(open), sites.text_of(close), empty);
    sites.replace(node, Operator::Constant, r);
}

/// `!(cond)` (`!cond` when it binds tighter), or `cond` when it is a `!` already.
fn negate(cond: Node<'_>, sites: &mut Sites<'_>) {
    let text = sites.text_of(cond);
    let negated = if let Some(arg) = not_argument(cond, sites) {
        sites.text_of(arg).to_string()
    } else {
        match cond.kind() {
            "identifier"
            | "call_expression"
            | "field_expression"
            | "parenthesized_expression"
            | "subscript_expression" => format!("!{text}"),
            _ => format!("!({text})"),
        }
    };
    sites.replace(cond, Operator::NegateCondition, negated);
}

/// A statement of a block run for its effect (a call, an assignment, `++`/`--`), replaced by
/// the empty statement `;`.
fn delete_statement(node: Node<'_>, sites: &mut Sites<'_>) {
    if node
        .parent()
        .is_none_or(|p| p.kind() != "compound_statement")
    {
        return;
    }
    let effect = node.named_child(0).is_some_and(|e| {
        matches!(
            e.kind(),
            "call_expression" | "assignment_expression" | "update_expression"
        )
    });
    if effect && node.named_child_count() == 1 {
        sites.replace(node, Operator::DeleteStatement, ";");
    }
}

/// What a function's declared return type lets a mutant return instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Returns {
    Pointer,
    Bool,
    Number,
    String,
}

fn return_value(node: Node<'_>, sites: &mut Sites<'_>) {
    let Some(value) = node.named_child(0) else {
        return;
    };
    // `return {a, b};` builds an aggregate; nothing typed replaces it.
    if value.kind() == "initializer_list" {
        return;
    }
    let Some(returns) = enclosing_return_type(node, sites) else {
        return;
    };
    let text = sites.text_of(value);
    let replacements: &[&str] = match returns {
        Returns::Pointer if matches!(text, "nullptr" | "NULL" | "0") => &[],
        Returns::Pointer => &["nullptr"],
        Returns::Bool => &["true", "false"],
        Returns::Number if text == "0" => &["1"],
        Returns::Number => &["0"],
        Returns::String => &["\"\""],
    };
    for r in replacements {
        sites.replace(value, Operator::ReturnValue, *r);
    }
}

/// The return type of the function a `return` belongs to, when it is one a literal can stand
/// for; `None` inside a lambda (its type is deduced) and for any other type.
fn enclosing_return_type(node: Node<'_>, sites: &Sites<'_>) -> Option<Returns> {
    let mut at = node.parent();
    let function = loop {
        let n = at?;
        match n.kind() {
            "function_definition" => break n,
            "lambda_expression" => return None,
            _ => at = n.parent(),
        }
    };
    match function.child_by_field_name("declarator")?.kind() {
        "pointer_declarator" => return Some(Returns::Pointer),
        "function_declarator" => {}
        _ => return None,
    }
    let ty = function.child_by_field_name("type")?;
    let text = sites.text_of(ty);
    match ty.kind() {
        "primitive_type" if text == "bool" => Some(Returns::Bool),
        "primitive_type" if text != "void" => Some(Returns::Number),
        "sized_type_specifier" => Some(Returns::Number),
        "type_identifier" | "qualified_identifier" if is_integer_typedef(text) => {
            Some(Returns::Number)
        }
        "qualified_identifier" if text == "std::string" => Some(Returns::String),
        "type_identifier" if text == "string" => Some(Returns::String),
        _ => None,
    }
}

/// `<cstdint>` and `<cstddef>` integer names that tree-sitter reads as plain type names.
fn is_integer_typedef(name: &str) -> bool {
    let name = name.strip_prefix("std::").unwrap_or(name);
    matches!(
        name,
        "int8_t"
            | "int16_t"
            | "int32_t"
            | "int64_t"
            | "uint8_t"
            | "uint16_t"
            | "uint32_t"
            | "uint64_t"
            | "intptr_t"
            | "uintptr_t"
            | "ptrdiff_t"
            | "ssize_t"
            | "size_t"
    )
}
