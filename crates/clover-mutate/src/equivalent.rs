//! An equivalent mutant: a change to a focal file that alters its bytes and its bytecode and
//! not what it does. An honest test cannot kill it; a test that does fingerprints the code
//! (hashes a function's bytecode or its file) or tells a mutant's run from the plain one (no
//! coverage tracer), not its behaviour. The mutation pass runs it among the kept mutants,
//! indistinguishable from them, and a candidate that kills it earns no kill.

use clover_protocol::KeptMutant;
use tree_sitter::{Node, Parser};

use crate::record::file_hash;

/// What the mutant inserts before a statement inside a function: an assignment to a local no
/// code reads (a dunder name, so no class mangles it).
pub const EQUIVALENT_INSERT: &str = "__clover_equivalent__ = None; ";

/// The id of the equivalent mutant of a problem's pass.
pub const EQUIVALENT_ID: &str = "equivalent";

/// Simple statements an assignment may go before on their line.
const SIMPLE: &[&str] = &[
    "expression_statement",
    "return_statement",
    "assert_statement",
    "pass_statement",
    "raise_statement",
    "delete_statement",
];

/// The equivalent mutant of Python `text` (at `path`): [`EQUIVALENT_INSERT`] before the first
/// simple statement, on a line `within` holds, that starts its line inside a function's body
/// (not a docstring); `None` when there is none or the file does not parse.
pub fn equivalent_python(
    path: &str,
    text: &str,
    within: impl Fn(u32) -> bool,
) -> Option<KeptMutant> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .ok()?;
    let tree = parser.parse(text, None)?;
    if tree.root_node().has_error() {
        return None;
    }
    let node = first_site(tree.root_node(), text, &within)?;
    let line = node.start_position().row as u32 + 1;
    Some(KeptMutant {
        id: EQUIVALENT_ID.into(),
        path: path.into(),
        operator: EQUIVALENT_ID.into(),
        line,
        start_byte: node.start_byte() as u32,
        end_byte: node.start_byte() as u32,
        original: String::new(),
        replacement: EQUIVALENT_INSERT.into(),
        file_hash: file_hash(text),
        killed_by: Vec::new(),
    })
}

fn first_site<'t>(node: Node<'t>, text: &str, within: &impl Fn(u32) -> bool) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if is_site(child, text, within) {
            return Some(child);
        }
        if let Some(found) = first_site(child, text, within) {
            return Some(found);
        }
    }
    None
}

fn is_site(node: Node<'_>, text: &str, within: &impl Fn(u32) -> bool) -> bool {
    if !SIMPLE.contains(&node.kind()) || !within(node.start_position().row as u32 + 1) {
        return false;
    }
    let Some(parent) = node.parent().filter(|p| p.kind() == "block") else {
        return false;
    };
    // Inside a function (a local), not a class body or the module (an attribute, a global).
    if parent.parent().map(|p| p.kind()) != Some("function_definition") {
        let mut up = parent.parent();
        let mut in_function = false;
        while let Some(n) = up {
            match n.kind() {
                "function_definition" => {
                    in_function = true;
                    break;
                }
                "class_definition" | "module" => break,
                _ => up = n.parent(),
            }
        }
        if !in_function {
            return false;
        }
    }
    // A string alone is a docstring where it comes first: it stays one.
    if node.kind() == "expression_statement"
        && node.named_child(0).is_some_and(|c| c.kind() == "string")
    {
        return false;
    }
    // It starts its line: only indentation before it.
    let line_start = text[..node.start_byte()].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..node.start_byte()]
        .chars()
        .all(|c| c == ' ' || c == '\t')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply;

    const SRC: &str = "\
import os

X = 1

class C:
    y = 2

    def m(self):
        \"\"\"Doc.\"\"\"
        if self.y:
            return os.sep
        return None

def f(a): return a

def g(a):
    b = [a,
         a]
    return b
";

    #[test]
    fn the_insert_goes_before_a_statement_inside_a_function_and_parses() {
        let m = equivalent_python("p.py", SRC, |_| true).unwrap();
        // Not the module's `X = 1`, not the class's `y = 2`, not the docstring: the return
        // inside `if`.
        assert_eq!(m.line, 11);
        let mutated = apply(&m, SRC).unwrap();
        assert!(mutated.contains("            __clover_equivalent__ = None; return os.sep\n"));
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_python::LANGUAGE.into())
            .unwrap();
        assert!(!parser
            .parse(&mutated, None)
            .unwrap()
            .root_node()
            .has_error());
        // Within other lines: `f`'s one-line body does not start its line; `g`'s first
        // statement does.
        let m = equivalent_python("p.py", SRC, |l| l >= 14).unwrap();
        assert_eq!(m.line, 17);
        assert!(equivalent_python("p.py", SRC, |l| l == 14).is_none());
        assert!(equivalent_python("p.py", "def f(:\n", |_| true).is_none());
    }
}
