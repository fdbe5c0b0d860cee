//! A problem's sample of mutants: every mutation site of its focus, drawn without
//! replacement by its seed, each mutated file parsed again and kept only when it parses.

use std::collections::BTreeMap;

use clover_protocol::Language;
use tree_sitter::{InputEdit, Node, Parser, Point, Tree};

use crate::error::MutateError;
use crate::operator::Operator;
use crate::rng::{Draws, SplitMix64};
use crate::sites::{Site, Sites};
use crate::source::{LineIndex, SourceFile};
use crate::{cpp, python};

/// How many mutants a problem gets unless told otherwise (`--mutants K`).
pub const DEFAULT_MAX_MUTANTS: usize = 20;

/// How to sample a problem's mutants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    /// At most this many mutants (K).
    pub max_mutants: usize,
    /// The problem's seed (see [`problem_seed`]).
    pub seed: u64,
}

impl Default for Sampling {
    fn default() -> Sampling {
        Sampling {
            max_mutants: DEFAULT_MAX_MUTANTS,
            seed: 0,
        }
    }
}

/// One mutant: a file of the problem with one span replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutant {
    /// `path:line:column:operator:n`, unique within a problem (`n` counts the mutants of one
    /// operator at one place: an integer has up to three).
    pub id: String,
    /// The file, as [`SourceFile::path`] named it.
    pub path: String,
    pub operator: Operator,
    /// 1-based line and 1-based byte column where the replaced span starts.
    pub line: u32,
    pub column: u32,
    /// The replaced span of the original text, 0-based, end exclusive.
    pub start_byte: usize,
    pub end_byte: usize,
    pub original: String,
    pub replacement: String,
    /// The whole mutated file.
    pub text: String,
}

/// A problem's sample, with what it was drawn from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutants {
    /// In source order: by file (as given), then by position.
    pub mutants: Vec<Mutant>,
    /// Every mutation site the focus holds, parsable or not.
    pub candidates: usize,
    /// Candidates drawn but dropped because their text did not parse.
    pub unparsable: usize,
}

/// A site of one file, numbered in source order across the problem.
struct Candidate {
    file: usize,
    site: Site,
    id: String,
    line: u32,
    column: u32,
}

/// What is known of one file while sampling.
struct Parsed<'a> {
    file: &'a SourceFile<'a>,
    tree: Tree,
    lines: LineIndex,
    errors: usize,
}

/// A seeded sample of at most `sampling.max_mutants` mutants of `files`' focused regions.
pub fn mutants(files: &[SourceFile<'_>], sampling: &Sampling) -> Result<Mutants, MutateError> {
    let mut parsers = Parsers::default();
    let mut parsed = Vec::with_capacity(files.len());
    let mut candidates = Vec::new();
    for (index, file) in files.iter().enumerate() {
        let tree = parsers.parse(file.language, file.text, file.path, None)?;
        let lines = LineIndex::new(file.text);
        let focus = file.focus.resolve(file, &lines)?;
        let mut sites = Sites::new(file.text, &focus);
        match file.language {
            Language::Python => python::find(tree.root_node(), &mut sites),
            Language::Cpp => cpp::find(tree.root_node(), &mut sites),
        }
        // Numbers the mutants of one operator at one place, for ids that stay unique.
        let mut at_place: BTreeMap<(usize, Operator), u32> = BTreeMap::new();
        for site in sites.found {
            let (line, column) = lines.position(site.span.start);
            let n = at_place
                .entry((site.span.start, site.operator))
                .or_insert(0);
            let id = format!("{}:{line}:{column}:{}:{n}", file.path, site.operator);
            *n += 1;
            candidates.push(Candidate {
                file: index,
                site,
                id,
                line,
                column,
            });
        }
        parsed.push(Parsed {
            file,
            errors: syntax_errors(tree.root_node()),
            tree,
            lines,
        });
    }

    let mut groups: BTreeMap<Operator, Vec<usize>> = BTreeMap::new();
    for (i, c) in candidates.iter().enumerate() {
        groups.entry(c.site.operator).or_default().push(i);
    }
    let mut rng = SplitMix64::new(sampling.seed);
    let mut groups: Vec<std::vec::IntoIter<usize>> = groups
        .into_values()
        .map(|mut g| {
            rng.shuffle(&mut g);
            g.into_iter()
        })
        .collect();

    let mut chosen: Vec<(usize, String)> = Vec::new();
    let mut unparsable = 0;
    'draw: while chosen.len() < sampling.max_mutants {
        let mut drew = false;
        for group in &mut groups {
            // Each operator in turn gives its next candidate that parses.
            for i in group.by_ref() {
                drew = true;
                let c = &candidates[i];
                let p = &parsed[c.file];
                let Some(text) = mutate(&mut parsers, p, &c.site)? else {
                    unparsable += 1;
                    continue;
                };
                chosen.push((i, text));
                if chosen.len() == sampling.max_mutants {
                    break 'draw;
                }
                break;
            }
        }
        if !drew {
            break;
        }
    }
    chosen.sort_by_key(|&(i, _)| {
        let c = &candidates[i];
        (c.file, c.site.span.start, c.site.span.end, i)
    });

    let mutants = chosen
        .into_iter()
        .map(|(i, text)| {
            let c = &candidates[i];
            let file = parsed[c.file].file;
            Mutant {
                id: c.id.clone(),
                path: file.path.to_string(),
                operator: c.site.operator,
                line: c.line,
                column: c.column,
                start_byte: c.site.span.start,
                end_byte: c.site.span.end,
                original: file.text[c.site.span.clone()].to_string(),
                replacement: c.site.replacement.clone(),
                text,
            }
        })
        .collect();
    Ok(Mutants {
        mutants,
        candidates: candidates.len(),
        unparsable,
    })
}

fn splice(text: &str, site: &Site) -> String {
    let mut out = String::with_capacity(text.len() + site.replacement.len());
    out.push_str(&text[..site.span.start]);
    out.push_str(&site.replacement);
    out.push_str(&text[site.span.end..]);
    out
}

/// The text of `site`'s mutant of `parsed`'s file, when it reads with no syntax error the
/// original did not have.
fn mutate(
    parsers: &mut Parsers,
    parsed: &Parsed<'_>,
    site: &Site,
) -> Result<Option<String>, MutateError> {
    let text = splice(parsed.file.text, site);
    // Reparsing from the original tree, told of the edit, reads only what changed: a whole
    // fresh parse per mutant was most of the time spent on a large C++ source.
    let point = |byte: usize| {
        let (line, column) = parsed.lines.position(byte);
        Point::new(line as usize - 1, column as usize - 1)
    };
    let start_position = point(site.span.start);
    let new_end_position = match site.replacement.rfind('\n') {
        Some(last) => Point::new(
            start_position.row + site.replacement.matches('\n').count(),
            site.replacement.len() - last - 1,
        ),
        None => Point::new(
            start_position.row,
            start_position.column + site.replacement.len(),
        ),
    };
    let mut old = parsed.tree.clone();
    old.edit(&InputEdit {
        start_byte: site.span.start,
        old_end_byte: site.span.end,
        new_end_byte: site.span.start + site.replacement.len(),
        start_position,
        old_end_position: point(site.span.end),
        new_end_position,
    });
    let tree = parsers.parse(parsed.file.language, &text, parsed.file.path, Some(&old))?;
    Ok((syntax_errors(tree.root_node()) <= parsed.errors).then_some(text))
}

/// Error and missing nodes in a tree.
fn syntax_errors(root: Node<'_>) -> usize {
    if !root.has_error() {
        return 0;
    }
    let mut count = 0;
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            count += 1;
        }
        if node.has_error() {
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }
    count
}

/// One tree-sitter parser per language, made when first needed.
#[derive(Default)]
struct Parsers {
    python: Option<Parser>,
    cpp: Option<Parser>,
}

impl Parsers {
    fn parse(
        &mut self,
        language: Language,
        text: &str,
        path: &str,
        old: Option<&Tree>,
    ) -> Result<Tree, MutateError> {
        let slot = match language {
            Language::Python => &mut self.python,
            Language::Cpp => &mut self.cpp,
        };
        let parser = slot.get_or_insert_with(|| {
            let grammar: tree_sitter::Language = match language {
                Language::Python => tree_sitter_python::LANGUAGE.into(),
                Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            };
            let mut parser = Parser::new();
            parser
                .set_language(&grammar)
                .expect("the tree-sitter grammars are built for this tree-sitter version");
            parser
        });
        parser.parse(text, old).ok_or_else(|| MutateError::Parse {
            path: path.to_string(),
        })
    }
}

impl std::fmt::Debug for Parsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parsers").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
