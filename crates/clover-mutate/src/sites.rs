//! Mutation sites: a byte span of the original text, an operator and the replacement text,
//! found by walking the syntax tree of the focused regions.

use std::collections::BTreeSet;
use std::ops::Range;

use tree_sitter::Node;

use crate::operator::Operator;

/// One possible mutation, before its text is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Site {
    pub(crate) span: Range<usize>,
    pub(crate) operator: Operator,
    pub(crate) replacement: String,
}

/// Collects the sites of one file, keeping only those wholly inside the focus and dropping
/// repeats: two operators may propose the same text for the same span (`return true` in a
/// `bool` function is both a constant and a return value), and the first found stays.
#[derive(Debug)]
pub(crate) struct Sites<'t> {
    pub(crate) text: &'t str,
    focus: &'t [Range<usize>],
    seen: BTreeSet<(usize, usize, String)>,
    pub(crate) found: Vec<Site>,
}

impl<'t> Sites<'t> {
    pub(crate) fn new(text: &'t str, focus: &'t [Range<usize>]) -> Sites<'t> {
        Sites {
            text,
            focus,
            seen: BTreeSet::new(),
            found: Vec::new(),
        }
    }

    /// The source text of `node`.
    pub(crate) fn text_of(&self, node: Node<'_>) -> &'t str {
        &self.text[node.byte_range()]
    }

    /// Whether any focused region overlaps `node`, so its subtree may hold sites.
    fn touches(&self, node: Node<'_>) -> bool {
        let r = node.byte_range();
        self.focus
            .iter()
            .any(|f| f.start < r.end && r.start < f.end)
            || (r.is_empty() && self.focus.iter().any(|f| f.contains(&r.start)))
    }

    fn inside(&self, span: &Range<usize>) -> bool {
        self.focus
            .iter()
            .any(|f| f.start <= span.start && span.end <= f.end)
    }

    /// Proposes replacing `node`'s text.
    pub(crate) fn replace(
        &mut self,
        node: Node<'_>,
        operator: Operator,
        replacement: impl Into<String>,
    ) {
        let span = node.byte_range();
        let replacement = replacement.into();
        if span.is_empty() || !self.inside(&span) || self.text[span.clone()] == replacement {
            return;
        }
        if self
            .seen
            .insert((span.start, span.end, replacement.clone()))
        {
            self.found.push(Site {
                span,
                operator,
                replacement,
            });
        }
    }
}

/// What a language's rules say about a node met in the walk.
pub(crate) enum Descend {
    Yes,
    /// The subtree holds nothing to mutate (a type annotation, a template argument, a
    /// preprocessor condition) or nothing safe to (a part the parser could not read).
    No,
}

/// Walks `root` in source order, skipping subtrees outside the focus; `visit` gets each node
/// with the field name under which its parent holds it.
pub(crate) fn walk<'t>(
    root: Node<'t>,
    sites: &mut Sites<'_>,
    errors: Errors,
    mut visit: impl FnMut(Node<'t>, Option<&'static str>, &mut Sites<'_>) -> Descend,
) {
    // An explicit stack: a long chain of `a + b + c …` nests as deep as it is long.
    let mut stack: Vec<(Node<'t>, Option<&'static str>)> = vec![(root, None)];
    let mut children = Vec::new();
    while let Some((node, field)) = stack.pop() {
        if (node.is_error() && errors == Errors::Skip) || !sites.touches(node) {
            continue;
        }
        if let Descend::No = visit(node, field, sites) {
            continue;
        }
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                children.push((cursor.node(), cursor.field_name()));
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        stack.extend(children.drain(..).rev());
    }
}

/// What [`walk`] does with a node tree-sitter could not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Errors {
    /// Passes it by, sites and all.
    Skip,
    /// Looks for sites in it as anywhere else. For C++, whose macros tree-sitter does not
    /// expand: a source full of them (snappy.cc) can sit whole inside one error node, and a
    /// mutant that no longer compiles is judged invalid, never killed.
    Enter,
}

/// The children of `node` under field `field`.
pub(crate) fn field_children<'t>(node: Node<'t>, field: &str) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children_by_field_name(field, &mut cursor).collect()
}

/// The replacement of a string literal's content: empty, or `XX` when it is empty already
/// (mutmut's choice). `open` and `close` are the delimiters with any prefix (`b'`, `u8"`, `"""`).
pub(crate) fn string_replacement(open: &str, close: &str, empty: bool) -> String {
    if empty {
        format!("{open}XX{close}")
    } else {
        format!("{open}{close}")
    }
}
