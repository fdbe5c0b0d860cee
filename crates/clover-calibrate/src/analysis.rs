//! What per-test coverage says about a test among its peers: context tiers, unique blocks and
//! targets. Pure functions of coverage data and source text; nothing here runs anything.

use std::collections::BTreeMap;

use clover_protocol::{
    ContextTier, FileCoverage, FileTier, LineRanges, RepoRef, Target, TargetKind, UniqueBlock,
};

/// Covered lines per source file (repository-relative path).
pub type CoverageMap = BTreeMap<String, LineRanges>;

/// A unique block must hold at least this many executable lines.
pub const MIN_BLOCK_LINES: usize = 5;
/// At most this many unique blocks are kept per problem.
pub const MAX_BLOCKS: usize = 10;

/// A coverage map as wire records, files in path order, empty files left out.
pub fn to_records(map: &CoverageMap) -> Vec<FileCoverage> {
    map.iter()
        .filter(|(_, lines)| !lines.is_empty())
        .map(|(path, lines)| FileCoverage {
            path: path.clone(),
            lines: lines.clone(),
        })
        .collect()
}

/// Lines of `base` in `path` that no peer covers.
fn unique_lines(path: &str, base: &CoverageMap, peers: &[&CoverageMap]) -> LineRanges {
    let Some(mine) = base.get(path) else {
        return LineRanges::new();
    };
    let mut covered_by_peers = LineRanges::new();
    for peer in peers {
        if let Some(lines) = peer.get(path) {
            covered_by_peers = covered_by_peers.union(lines);
        }
    }
    mine.difference(&covered_by_peers)
}

/// The tier of every source file for one test: `repo` when the test covers exactly what the
/// empty test covers, `peer` when it covers a line no peer covers, `other` otherwise.
pub fn tiers(
    source_files: &[String],
    base: &CoverageMap,
    empty: &CoverageMap,
    peers: &[&CoverageMap],
) -> Vec<FileTier> {
    tiers_by(source_files, base, empty, |path| {
        !unique_lines(path, base, peers).is_empty()
    })
}

/// The tiers of `source_files`: `repo` where `base` equals `empty`, else `peer` where
/// `has_unique(path)` says some line of the file is covered by this test alone, else `other`.
pub fn tiers_by(
    source_files: &[String],
    base: &CoverageMap,
    empty: &CoverageMap,
    has_unique: impl Fn(&str) -> bool,
) -> Vec<FileTier> {
    let none = LineRanges::new();
    let mut out: Vec<FileTier> = source_files
        .iter()
        .map(|path| {
            let mine = base.get(path).unwrap_or(&none);
            let tier = if mine == empty.get(path).unwrap_or(&none) {
                ContextTier::Repo
            } else if has_unique(path) {
                ContextTier::Peer
            } else {
                ContextTier::Other
            };
            FileTier {
                path: path.clone(),
                tier,
            }
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Maximal runs of at least [`MIN_BLOCK_LINES`] executable lines covered by this test and by
/// no peer. Lines that are not executable (blank lines, comments, a `def` continuation) do not
/// break a run and do not count, even when a tracer reported them; the run's span goes from
/// its first to its last executable line. At most [`MAX_BLOCKS`], the largest first, ties by
/// path and line.
pub fn unique_blocks(
    base: &CoverageMap,
    peers: &[&CoverageMap],
    executable: &CoverageMap,
    source: impl Fn(&str) -> Option<String>,
) -> Vec<UniqueBlock> {
    select_blocks(block_runs(base, peers, executable), source)
}

/// A run of executable lines covered by one test and no peer, long enough to be a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockRun {
    /// Executable lines in the run.
    pub lines: usize,
    /// Those lines.
    pub executable: Vec<u32>,
    pub path: String,
    pub start: u32,
    pub end: u32,
}

/// Every run of [`unique_blocks`], before the choice of the largest.
pub fn block_runs(
    base: &CoverageMap,
    peers: &[&CoverageMap],
    executable: &CoverageMap,
) -> Vec<BlockRun> {
    let mut found = Vec::new();
    for path in base.keys() {
        let unique = unique_lines(path, base, peers);
        if unique.is_empty() {
            continue;
        }
        // Only executable lines make or break a run. Without the file's executable lines, the
        // covered lines are the executable ones known.
        let exec_lines: Vec<u32> = match executable.get(path) {
            Some(e) => e.iter().collect(),
            None => base[path].iter().collect(),
        };
        let mut run: Vec<u32> = Vec::new();
        let mut flush = |run: &mut Vec<u32>| {
            if run.len() >= MIN_BLOCK_LINES {
                found.push(BlockRun {
                    lines: run.len(),
                    executable: run.clone(),
                    path: path.clone(),
                    start: run[0],
                    end: *run.last().expect("non-empty"),
                });
            }
            run.clear();
        };
        for line in exec_lines {
            if unique.contains(line) {
                run.push(line);
            } else {
                flush(&mut run);
            }
        }
        flush(&mut run);
    }
    found
}

/// The blocks kept from `runs`: at most [`MAX_BLOCKS`], the most executable lines first, ties
/// by path and line, with their source text.
pub fn select_blocks(
    mut runs: Vec<BlockRun>,
    source: impl Fn(&str) -> Option<String>,
) -> Vec<UniqueBlock> {
    runs.sort_by(|a, b| {
        b.lines
            .cmp(&a.lines)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.start.cmp(&b.start))
    });
    runs.dedup_by(|a, b| a.path == b.path && a.start == b.start);
    runs.truncate(MAX_BLOCKS);
    runs.into_iter()
        .map(|r| {
            let code = source(&r.path)
                .map(|text| {
                    text.lines()
                        .skip(r.start as usize - 1)
                        .take((r.end - r.start + 1) as usize)
                        .collect::<Vec<_>>()
                        .join("\n")
                        + "\n"
                })
                .unwrap_or_default();
            UniqueBlock {
                path: r.path,
                start_line: r.start,
                end_line: r.end,
                code,
                lines: LineRanges::from_lines(r.executable),
            }
        })
        .collect()
}

/// The first file (in path order) whose lines differ between two coverage maps.
pub fn differing_file(a: &CoverageMap, b: &CoverageMap) -> Option<String> {
    a.keys()
        .chain(b.keys())
        .filter(|f| a.get(*f) != b.get(*f))
        .min()
        .cloned()
}

/// Adds `from`'s lines to `into`, file by file.
pub fn merge_lines(into: &mut CoverageMap, from: &CoverageMap) {
    for (path, lines) in from {
        let merged = into
            .get(path)
            .map_or_else(|| lines.clone(), |l| l.union(lines));
        into.insert(path.clone(), merged);
    }
}

/// A top-level class or function of a Python module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub name: String,
    pub kind: TargetKind,
    /// The whole definition with its decorators.
    pub start_line: u32,
    pub end_line: u32,
    /// The body only: what runs when the function is called (or, for a class, its methods and
    /// class-level statements).
    pub body_start: u32,
    pub body_end: u32,
}

/// The syntax tree of a Python source; `None` if tree-sitter cannot parse at all.
fn parse_python(source: &str) -> Option<tree_sitter::Tree> {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .ok()?;
    parser.parse(source, None)
}

/// The lines of `source` that run when the module is imported, whatever test imports it:
/// module-level statements, class bodies, decorators and the header of every `def` (its
/// defaults included), but no function body. Importing alone covers them, so they are never
/// offered as a unique block: an empty test run where a candidate runs (a fresh process, as in
/// sandbox-run) covers them too. A function body that runs at import (a registration helper
/// called at module level) is not seen here.
pub fn import_time_lines(source: &str) -> LineRanges {
    let Some(tree) = parse_python(source) else {
        return LineRanges::new();
    };
    let mut lines = Vec::new();
    import_time_of(tree.root_node(), &mut lines);
    LineRanges::from_lines(lines)
}

fn import_time_of(node: tree_sitter::Node, lines: &mut Vec<u32>) {
    let rows = |from: usize, to: usize, lines: &mut Vec<u32>| {
        lines.extend((from..=to).map(|r| r as u32 + 1));
    };
    let start = node.start_position().row;
    match node.kind() {
        "function_definition" => {
            // The header runs at import; the body when called. A body on the header's own
            // line (`def f(): return 1`) counts as the header.
            let header_end = node.child_by_field_name("body").map_or(start, |b| {
                b.start_position().row.saturating_sub(1).max(start)
            });
            rows(start, header_end, lines);
        }
        "class_definition" => {
            let body = node.child_by_field_name("body");
            let header_end = body.map_or(start, |b| {
                b.start_position().row.saturating_sub(1).max(start)
            });
            rows(start, header_end, lines);
            if let Some(body) = body {
                import_time_of(body, lines);
            }
        }
        _ if !holds_definition(node) => rows(start, node.end_position().row, lines),
        _ => {
            // A compound statement holding a definition (`if TYPE_CHECKING:`, `try:`): its own
            // line, and its children by their kind.
            if node.kind() != "module" && node.kind() != "block" {
                lines.push(start as u32 + 1);
            }
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                import_time_of(child, lines);
            }
        }
    }
}

/// The lines of `source` a run that covered `covered` reached, so that only mutants the run
/// could notice are drawn. coverage.py reports a statement by its first line, so a statement
/// whose first line is covered brings all its lines (a call written over three lines), and a
/// compound statement or clause (`if`, `elif`, `for`, `while`, `with`, `except`, `def`) brings
/// its header up to its block (a condition over two lines), never the block, whose statements
/// count for themselves. A source tree-sitter cannot parse is reached where it was covered.
pub fn reached_lines(source: &str, covered: &LineRanges) -> LineRanges {
    let Some(tree) = parse_python(source) else {
        return covered.clone();
    };
    let mut lines = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        let start = node.start_position().row;
        let mut cursor = node.walk();
        let children: Vec<_> = node.named_children(&mut cursor).collect();
        let block = children.iter().find(|c| c.kind() == "block");
        let simple = block.is_none() && node.kind().ends_with("_statement");
        let end = match block {
            Some(b) => Some(b.start_position().row.saturating_sub(1).max(start)),
            None => simple.then(|| node.end_position().row),
        };
        if let Some(end) = end.filter(|_| covered.contains(start as u32 + 1)) {
            lines.extend((start..=end).map(|r| r as u32 + 1));
        }
        if !simple {
            stack.extend(children);
        }
    }
    LineRanges::from_lines(lines)
}

/// Whether a function or class is defined anywhere below `node`.
fn holds_definition(node: tree_sitter::Node) -> bool {
    if matches!(node.kind(), "function_definition" | "class_definition") {
        return true;
    }
    let mut cursor = node.walk();
    let found = node.named_children(&mut cursor).any(holds_definition);
    found
}

/// The top-level classes and functions of a Python source, found with tree-sitter.
pub fn definitions(source: &str) -> Vec<Definition> {
    let Some(tree) = parse_python(source) else {
        return Vec::new();
    };
    let root = tree.root_node();
    let mut out = Vec::new();
    let mut cursor = root.walk();
    for node in root.named_children(&mut cursor) {
        let (outer, def) = if node.kind() == "decorated_definition" {
            match node.child_by_field_name("definition") {
                Some(d) => (node, d),
                None => continue,
            }
        } else {
            (node, node)
        };
        let kind = match def.kind() {
            "function_definition" => TargetKind::Function,
            "class_definition" => TargetKind::Class,
            _ => continue,
        };
        let (Some(name), Some(body)) = (
            def.child_by_field_name("name"),
            def.child_by_field_name("body"),
        ) else {
            continue;
        };
        let Ok(name) = name.utf8_text(source.as_bytes()) else {
            continue;
        };
        out.push(Definition {
            name: name.to_string(),
            kind,
            start_line: outer.start_position().row as u32 + 1,
            end_line: outer.end_position().row as u32 + 1,
            body_start: body.start_position().row as u32 + 1,
            body_end: body.end_position().row as u32 + 1,
        });
    }
    out
}

/// The repository classes and functions a test references whose body it executes beyond what
/// the empty test executes and what importing runs (`import_time`, per file: see
/// [`import_time_lines`]). One target per referenced name, in the order of the references;
/// each carries the import-time lines of its span, which score does not count as a call.
pub fn targets(
    refs: &[RepoRef],
    definitions_in: impl Fn(&str) -> Vec<Definition>,
    base: &CoverageMap,
    empty: &CoverageMap,
    import_time: &CoverageMap,
) -> Vec<Target> {
    let none = LineRanges::new();
    let mut out: Vec<Target> = Vec::new();
    for r in refs {
        let Some(path) = &r.file else { continue };
        let at_import = import_time.get(path).unwrap_or(&none);
        let beyond_empty = base
            .get(path)
            .unwrap_or(&none)
            .difference(empty.get(path).unwrap_or(&none))
            .difference(at_import);
        if beyond_empty.is_empty() {
            continue;
        }
        for def in definitions_in(path) {
            if def.name != r.name {
                continue;
            }
            let runs_body = (def.body_start..=def.body_end).any(|l| beyond_empty.contains(l));
            let seen = out.iter().any(|t| t.name == def.name && &t.path == path);
            if runs_body && !seen {
                out.push(Target {
                    name: def.name.clone(),
                    kind: def.kind,
                    path: path.clone(),
                    start_line: def.start_line,
                    end_line: def.end_line,
                    import_lines: LineRanges::from_lines(
                        at_import
                            .iter()
                            .filter(|l| (def.start_line..=def.end_line).contains(l)),
                    ),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cov(entries: &[(&str, &[u32])]) -> CoverageMap {
        entries
            .iter()
            .map(|(p, l)| (p.to_string(), LineRanges::from_lines(l.iter().copied())))
            .collect()
    }

    #[test]
    fn tiers_follow_the_three_rules() {
        let files: Vec<String> = ["a.py", "b.py", "c.py", "d.py"].map(String::from).to_vec();
        let empty = cov(&[("a.py", &[1, 2])]);
        // a.py: same as empty -> repo. b.py: line 7 only t covers -> peer.
        // c.py: t covers 3, a peer covers 3 too -> other. d.py: nothing -> repo (equals empty).
        let base = cov(&[("a.py", &[1, 2]), ("b.py", &[5, 7]), ("c.py", &[3])]);
        let peer = cov(&[("a.py", &[1, 2]), ("b.py", &[5]), ("c.py", &[3, 4])]);
        let got = tiers(&files, &base, &empty, &[&peer]);
        let got: Vec<(&str, ContextTier)> = got.iter().map(|t| (t.path.as_str(), t.tier)).collect();
        assert_eq!(
            got,
            vec![
                ("a.py", ContextTier::Repo),
                ("b.py", ContextTier::Peer),
                ("c.py", ContextTier::Other),
                ("d.py", ContextTier::Repo),
            ]
        );
    }

    #[test]
    fn blocks_need_five_executable_lines_and_skip_non_executable_ones() {
        let source = (1..=40)
            .map(|i| format!("line{i}"))
            .collect::<Vec<_>>()
            .join("\n");
        // Executable: 1..=20 except 13 and 14 (a comment and a blank line inside the run).
        let executable = cov(&[(
            "m.py",
            &(1..=20)
                .filter(|l| *l != 13 && *l != 14)
                .collect::<Vec<_>>(),
        )]);
        // t covers 10..=18 (the executable ones), and 2..=5 (four lines: too short).
        let mut lines: Vec<u32> = (10..=18).filter(|l| *l != 13 && *l != 14).collect();
        lines.extend(2..=5);
        let base = cov(&[("m.py", &lines)]);
        let peer = cov(&[("m.py", &[1, 6, 9, 19])]);
        let blocks = unique_blocks(&base, &[&peer], &executable, |_| Some(source.clone()));
        assert_eq!(blocks.len(), 1, "{blocks:?}");
        let b = &blocks[0];
        assert_eq!((b.start_line, b.end_line), (10, 18));
        assert!(b.code.starts_with("line10\n") && b.code.ends_with("line18\n"));
        assert_eq!(b.code.lines().count(), 9);
        // What a coverage test must run: the executable lines, not the comment and the blank.
        assert_eq!(
            b.lines.iter().collect::<Vec<_>>(),
            [10, 11, 12, 15, 16, 17, 18]
        );
        // A peer covering one line in the middle splits it into 10..12 (3) and 15..18 (4): none.
        let peer2 = cov(&[("m.py", &[15])]);
        assert!(unique_blocks(&base, &[&peer, &peer2], &executable, |_| None).len() <= 1);
        let blocks = unique_blocks(
            &base,
            &[&peer, &cov(&[("m.py", &[12])])],
            &executable,
            |_| None,
        );
        assert!(blocks.is_empty(), "{blocks:?}");
    }

    #[test]
    fn only_executable_lines_make_or_break_a_block() {
        // Executable: 1..=8 and 10..=30. t alone covers 5..=9, where 9 is no statement (a
        // continuation line a tracer may report): four executable lines, no block. And
        // 11..=22 except 17, which no test runs: executable, so it splits them into 11..=16
        // (six) and 18..=22 (five).
        let exec: Vec<u32> = (1..=30).filter(|l| *l != 9).collect();
        let executable = cov(&[("m.py", &exec)]);
        let mut lines: Vec<u32> = (5..=9).collect();
        lines.extend((11..=22).filter(|l| *l != 17));
        let base = cov(&[("m.py", &lines)]);
        let spans = |blocks: Vec<UniqueBlock>| -> Vec<(u32, u32)> {
            blocks.iter().map(|b| (b.start_line, b.end_line)).collect()
        };
        let blocks = unique_blocks(&base, &[], &executable, |_| None);
        assert_eq!(spans(blocks), vec![(11, 16), (18, 22)]);
        // Without executable lines (none known for the file), the covered lines are all
        // there is, and nothing breaks them: one run from 5 to 22.
        let blocks = unique_blocks(&base, &[], &CoverageMap::new(), |_| None);
        assert_eq!(spans(blocks), vec![(5, 22)]);
    }

    #[test]
    fn at_most_ten_blocks_largest_first_ties_by_path_and_line() {
        // Twelve blocks: in b.py, sizes 5..=10 at lines 100k; in a.py six blocks of 5 lines.
        let mut a = Vec::new();
        let mut b = Vec::new();
        let mut exec_a = Vec::new();
        let mut exec_b = Vec::new();
        for k in 0..6u32 {
            let start = 1 + k * 20;
            a.extend(start..start + 5);
            exec_a.extend(start..start + 7);
            let size = 5 + k;
            let start = 1 + k * 20;
            b.extend(start..start + size);
            exec_b.extend(start..start + size + 2);
        }
        let base = cov(&[("a.py", &a), ("b.py", &b)]);
        let executable = cov(&[("a.py", &exec_a), ("b.py", &exec_b)]);
        let blocks = unique_blocks(&base, &[], &executable, |_| None);
        assert_eq!(blocks.len(), MAX_BLOCKS);
        let got: Vec<(&str, u32, u32)> = blocks
            .iter()
            .map(|b| (b.path.as_str(), b.start_line, b.end_line))
            .collect();
        assert_eq!(
            got,
            vec![
                ("b.py", 101, 110),
                ("b.py", 81, 89),
                ("b.py", 61, 68),
                ("b.py", 41, 47),
                ("b.py", 21, 26),
                ("a.py", 1, 5),
                ("a.py", 21, 25),
                ("a.py", 41, 45),
                ("a.py", 61, 65),
                ("a.py", 81, 85),
            ]
        );
    }

    const MODULE: &str = "\
import os

LIMIT = 3


@decorate
def parse(text):
    value = int(text)
    return value


class Ledger:
    rate = 2

    def add(self, x):
        return x * self.rate


def unused():
    return 1
";

    #[test]
    fn reached_lines_are_whole_statements_and_headers_from_their_first_line() {
        let src = "\
def f(a, b):
    if (a and
            b):
        g(1,
          2)
    elif a:
        return 3
    for x in (1,
              2):
        pass
    return h(
        4)
";
        // coverage.py's lines of a run with `a` and `b` true, the loop never reached.
        let covered = LineRanges::from_lines([2, 4, 11]);
        let got: Vec<u32> = reached_lines(src, &covered).iter().collect();
        // The `if` header (2-3), the whole call (4-5), the whole return (11-12); not the
        // `elif` (6), its body (7) or the loop (8-10).
        assert_eq!(got, [2, 3, 4, 5, 11, 12]);
    }

    #[test]
    fn import_time_lines_leave_function_bodies_out() {
        let src = "\
import os
HANDLERS = {}


def register(name,
             default=os.sep):
    def wrap(f):
        return f
    return wrap


@register(
    \"a\")
class Handler:
    kind = \"a\"

    def handle(self):
        return self.kind


if os.name:
    def fast(): return 1
ORDER = [
    \"a\",
]
";
        let got: Vec<u32> = import_time_lines(src).iter().collect();
        assert_eq!(
            got,
            vec![1, 2, 5, 6, 12, 13, 14, 15, 17, 21, 22, 23, 24, 25]
        );
    }

    #[test]
    fn finds_top_level_definitions_with_decorators_and_bodies() {
        let defs = definitions(MODULE);
        let got: Vec<(&str, TargetKind, u32, u32, u32, u32)> = defs
            .iter()
            .map(|d| {
                (
                    d.name.as_str(),
                    d.kind,
                    d.start_line,
                    d.end_line,
                    d.body_start,
                    d.body_end,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("parse", TargetKind::Function, 6, 9, 8, 9),
                ("Ledger", TargetKind::Class, 12, 16, 13, 16),
                ("unused", TargetKind::Function, 19, 20, 20, 20),
            ]
        );
    }

    #[test]
    fn targets_are_referenced_and_executed_beyond_the_empty_test() {
        let refs = |names: &[&str]| -> Vec<RepoRef> {
            names
                .iter()
                .map(|n| RepoRef {
                    name: n.to_string(),
                    module: "pkg.m".into(),
                    file: Some("pkg/m.py".into()),
                })
                .collect()
        };
        let defs = |_: &str| definitions(MODULE);
        let empty = cov(&[("pkg/m.py", &[16])]);
        // parse's body runs; Ledger.add's line 16 runs but the empty test runs it too; unused
        // is referenced but never called; os is not a repository definition.
        let base = cov(&[("pkg/m.py", &[8, 9, 16])]);
        let none = CoverageMap::new();
        let got = targets(
            &refs(&["parse", "Ledger", "unused", "os", "parse"]),
            defs,
            &base,
            &empty,
            &none,
        );
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            (
                got[0].name.as_str(),
                got[0].kind,
                got[0].start_line,
                got[0].end_line
            ),
            ("parse", TargetKind::Function, 6, 9)
        );
        // Once the class body runs beyond the empty test, the class is a target too.
        let base = cov(&[("pkg/m.py", &[8, 9, 16])]);
        let got = targets(&refs(&["Ledger"]), defs, &base, &none, &none);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].kind, TargetKind::Class);
        // What importing the module runs (the class body's statements and headers) is not a
        // use: a test that only imported the class (lazily, inside it) has no target, and a
        // target records its import-time lines for score.
        let import_time = cov(&[(
            "pkg/m.py",
            &import_time_lines(MODULE).iter().collect::<Vec<_>>(),
        )]);
        let imported = cov(&[("pkg/m.py", &[12, 13, 15])]);
        assert!(targets(&refs(&["Ledger"]), defs, &imported, &none, &import_time).is_empty());
        let got = targets(&refs(&["Ledger"]), defs, &base, &none, &import_time);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].import_lines.iter().collect::<Vec<_>>(), [12, 13, 15]);
        // A reference without a file (a name from outside the repository) is never a target.
        let outside = vec![RepoRef {
            name: "parse".into(),
            module: "json".into(),
            file: None,
        }];
        assert!(targets(&outside, defs, &base, &empty, &none).is_empty());
    }
}
