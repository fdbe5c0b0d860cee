//! Mutants of a problem's focal code, for the mutation score: does a test notice when the code
//! is wrong, not only run it?
//!
//! Given the files of a problem's focal code — a Task II target's body ([`target_bodies`]),
//! Task III's unique blocks ([`block_spans`]), a C++ focal source ([`Focus::Whole`]) — each
//! with the regions that may change ([`Focus`]), [`mutants`]
//! finds every mutation site with tree-sitter, in source order, and returns a seeded sample of
//! at most [`Sampling::max_mutants`]. The operators are the usual ones of mutmut, cosmic-ray and
//! Mull ([`Operator`]): arithmetic, comparison and boolean operator replacement, constant
//! replacement, negated conditions, statement deletion, return-value replacement and boundary
//! changes. Each [`Mutant`] is the original text with one span replaced, so formatting, comments
//! and line numbers outside the span survive.
//!
//! Every mutant re-parses: a candidate whose text tree-sitter reads with a syntax error (more
//! errors than the original had, for a file tree-sitter already stumbles on, as C++ with macros
//! can be) is dropped and the next one drawn. Nothing inside a part the parser could not read
//! is mutated.
//!
//! The sample is a pure function of the files, the focus and [`Sampling`]: sites are found in
//! tree order, grouped by operator (in [`Operator::ALL`]'s order), each group shuffled by
//! [`SplitMix64`] from the seed, and the groups drawn round-robin, so each operator that has
//! sites is represented before any has a second mutant. No `HashMap` order, no `rand`: the
//! same seed gives the same bytes on every platform. [`problem_seed`] mixes a run's seed with a
//! problem id.
//!
//! [`keep_killed`] is calibrate's half: it runs the ground truth (a closure) against each
//! mutant and keeps those it kills, with the tests that killed them; [`problem_mutants`] makes
//! the sidecar record of the result (`clover_protocol::ProblemMutants`), [`judge_problem`] does
//! the three in one call, and [`apply`] turns a recorded mutant back into its file's text,
//! refusing a file that changed since.
//!
//! This crate deliberately runs nothing itself and reads no files: running a mutant is the
//! caller's (in the sandbox), and so is reading the focal files. It does not check
//! types, so a C++ mutant may not compile (`+` → `-` on a `std::string`); the runner reports
//! that as [`Verdict::Invalid`] and [`keep_killed`] drops it.

mod calibrate;
mod cpp;
mod error;
mod focal;
mod operator;
mod python;
mod record;
mod rng;
mod sites;
mod source;

use std::collections::BTreeMap;

use clover_protocol::Language;
use tree_sitter::{InputEdit, Node, Parser, Point, Tree};

pub use calibrate::{keep_killed, Calibration, Verdict};
pub use error::MutateError;
pub use focal::{block_spans, problem_focus, target_bodies};
pub use operator::Operator;
pub use record::{apply, file_hash, judge_problem, problem_mutants};
pub use rng::{problem_seed, Draws, SplitMix64};
pub use source::{Focus, SourceFile};

use sites::{Site, Sites};
use source::LineIndex;

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
