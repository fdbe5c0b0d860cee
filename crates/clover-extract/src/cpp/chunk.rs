//! Cutting a long C++ source into chunks along its syntax tree.
//!
//! The tree is read as a list of atomic line ranges ("units"): each top-level node is one,
//! unless it is longer than the limit, in which case its children are (so a namespace, an
//! `extern "C"` block or a preprocessor conditional is opened up when it has to be, and a
//! function or class body only when it alone exceeds the limit). Chunks are then packed
//! greedily: a chunk ends just before the first unit that would take it past the limit, so no
//! cut ever falls inside a unit. A unit that is still too long is cut by lines. A last chunk
//! under [`MIN_CHUNK_LINES`] is folded into the one before, or the cut before it moved back, so
//! no prompt is a closing brace and a one-line function.

use clover_protocol::{Chunk, Span};
use tree_sitter::{Node, Parser};

/// Splits `code` into chunks of at most `limit` lines; one chunk holding everything when the
/// code is short. Chunks are trimmed of blank lines at both ends, and empty ones are left out.
pub(crate) fn chunks(code: &str, limit: u32) -> Vec<Chunk> {
    let limit = limit.max(1) as usize;
    let starts = line_starts(code);
    let n_lines = starts.len() - 1;
    if n_lines <= limit {
        return vec![Chunk {
            index: 0,
            span: Span {
                start_line: 1,
                end_line: n_lines.max(1) as u32,
                start_byte: 0,
                end_byte: code.len() as u32,
            },
            code: code.to_string(),
        }];
    }
    let mut units = Vec::new();
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_cpp::LANGUAGE.into())
        .is_ok()
    {
        if let Some(tree) = parser.parse(code, None) {
            collect_units(tree.root_node(), limit, &mut units);
        }
    }
    units.sort_unstable();
    // Units sharing a line cannot be separated.
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (s, e) in units {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    let push_split = |ranges: &mut Vec<(usize, usize)>, mut s: usize, e: usize| {
        while e + 1 - s > limit {
            ranges.push((s, s + limit - 1));
            s += limit;
        }
        if s <= e {
            ranges.push((s, e));
        }
    };
    for &(s, e) in &merged {
        if e + 1 - start > limit && s > start {
            push_split(&mut ranges, start, s - 1);
            start = s;
        }
        while e + 1 - start > limit {
            ranges.push((start, start + limit - 1));
            start += limit;
        }
    }
    if start < n_lines {
        push_split(&mut ranges, start, n_lines - 1);
    }
    let blank = |l: usize| code[starts[l]..starts[l + 1]].trim().is_empty();
    fold_tail(&mut ranges, &merged, limit, &blank);
    let mut out = Vec::new();
    for (mut s, mut e) in ranges {
        while s <= e && blank(s) {
            s += 1;
        }
        while e > s && blank(e) {
            e -= 1;
        }
        if s > e || blank(s) {
            continue;
        }
        let (sb, eb) = (starts[s], starts[e + 1]);
        out.push(Chunk {
            index: out.len() as u32,
            span: Span {
                start_line: s as u32 + 1,
                end_line: e as u32 + 1,
                start_byte: sb as u32,
                end_byte: eb as u32,
            },
            code: code[sb..eb].to_string(),
        });
    }
    out
}

/// A last chunk shorter than this many lines (blank lines not counted) is not left alone:
/// `cache.cc`'s last 3 lines (a one-line function and a closing brace) made a prompt of their
/// own. Ten lines is about the smallest function worth asking a model to test.
pub(crate) const MIN_CHUNK_LINES: usize = 10;

/// Folds a last range shorter than [`MIN_CHUNK_LINES`] into the one before when both fit in
/// `limit` lines; when they do not (the greedy packing filled the one before), moves the cut
/// between them back to the latest place where the last range reaches the minimum, so both
/// stay within the limit. A cut still falls only between units, or inside a unit longer than
/// the limit (which is cut by lines anyway).
fn fold_tail(
    ranges: &mut Vec<(usize, usize)>,
    units: &[(usize, usize)],
    limit: usize,
    blank: &dyn Fn(usize) -> bool,
) {
    let n = ranges.len();
    if n < 2 {
        return;
    }
    let size = |s: usize, e: usize| (s..=e).filter(|&l| !blank(l)).count();
    let span = |s: usize, e: usize| {
        let first = (s..=e).find(|&l| !blank(l));
        let last = (s..=e).rev().find(|&l| !blank(l));
        match (first, last) {
            (Some(f), Some(l)) => l + 1 - f,
            _ => 0,
        }
    };
    let (ps, pe) = ranges[n - 2];
    let (ls, le) = ranges[n - 1];
    if size(ls, le) >= MIN_CHUNK_LINES || pe + 1 != ls {
        return;
    }
    if span(ps, le) <= limit {
        ranges.truncate(n - 2);
        ranges.push((ps, le));
        return;
    }
    let can_cut = |l: usize| {
        units
            .iter()
            .all(|&(s, e)| !(s < l && l <= e) || e + 1 - s > limit)
    };
    let cut = (ps + 1..=ls).rev().find(|&l| {
        can_cut(l) && size(l, le) >= MIN_CHUNK_LINES && span(l, le) <= limit && size(ps, l - 1) > 0
    });
    if let Some(l) = cut {
        ranges[n - 2] = (ps, l - 1);
        ranges[n - 1] = (l, le);
    }
}

fn line_starts(code: &str) -> Vec<usize> {
    let mut starts = vec![0];
    for (i, b) in code.bytes().enumerate() {
        if b == b'\n' && i + 1 < code.len() {
            starts.push(i + 1);
        }
    }
    starts.push(code.len());
    starts
}

fn last_row(n: Node) -> usize {
    let end = n.end_position();
    if end.column == 0 && end.row > n.start_position().row {
        end.row - 1
    } else {
        end.row
    }
}

fn collect_units(node: Node, limit: usize, out: &mut Vec<(usize, usize)>) {
    let mut c = node.walk();
    for child in node.named_children(&mut c) {
        let (s, e) = (child.start_position().row, last_row(child));
        if e + 1 - s > limit && child.named_child_count() > 0 {
            collect_units(child, limit, out);
        } else {
            out.push((s, e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(name: &str, body_lines: usize) -> String {
        let mut s = format!("int {name}(int x) {{\n");
        for i in 0..body_lines {
            s.push_str(&format!("  x += {i};\n"));
        }
        s.push_str("  return x;\n}\n\n");
        s
    }

    #[test]
    fn short_code_is_one_chunk() {
        let code = function("f", 3);
        let c = chunks(&code, 200);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].code, code);
    }

    #[test]
    fn cuts_between_functions_inside_namespaces() {
        let mut code = String::from("#include <x>\n\nnamespace a {\nnamespace {\n\n");
        for i in 0..6 {
            code.push_str(&function(&format!("f{i}"), 12));
        }
        code.push_str("}  \n}  \n");
        let c = chunks(&code, 40);
        assert!(c.len() > 1);
        for ch in &c {
            assert!(ch.span.end_line - ch.span.start_line < 40, "{:?}", ch.span);
            // Every function that starts in a chunk ends in it.
            let opens = ch.code.matches("int f").count();
            let closes = ch.code.matches("return x;\n}").count();
            assert_eq!(
                opens, closes,
                "chunk {} cuts a function:\n{}",
                ch.index, ch.code
            );
        }
        let joined: String = c.iter().map(|ch| ch.code.as_str()).collect();
        assert_eq!(joined.matches("int f").count(), 6);
    }

    /// `cache.cc`'s shape: chunks full up to the limit, then a one-line function and the
    /// namespace's closing brace left over as a 2-line chunk.
    #[test]
    fn a_tiny_last_chunk_is_folded_or_rebalanced() {
        let mut code = String::from("namespace a {\n\n");
        for i in 0..4 {
            code.push_str(&function(&format!("f{i}"), 15));
        }
        code.push_str("int last() {\n  return 1;\n}\n}\n");
        let n_lines = code.lines().count();
        // Two functions of 18 lines fill each chunk of 40; packed greedily, the last function
        // and the namespace's brace would be a chunk of 4 lines.
        let c = chunks(&code, 40);
        assert!(c.len() >= 2, "{c:?}");
        for ch in &c {
            let lines = (ch.span.end_line - ch.span.start_line + 1) as usize;
            assert!(lines <= 40, "{:?}", ch.span);
            let nonblank = ch.code.lines().filter(|l| !l.trim().is_empty()).count();
            assert!(
                nonblank >= MIN_CHUNK_LINES,
                "chunk {}:\n{}",
                ch.index,
                ch.code
            );
            assert_eq!(
                ch.code.matches("int f").count(),
                ch.code.matches("return x;\n}").count(),
                "a function is cut:\n{}",
                ch.code
            );
        }
        assert_eq!(c.last().unwrap().span.end_line as usize, n_lines);
        // When the last piece fits beside the range before it (blank lines made the packing
        // cut early), the two become one.
        let blank = |l: usize| l < 10;
        let mut ranges = vec![(0, 29), (30, 33)];
        fold_tail(&mut ranges, &[(10, 29), (30, 33)], 25, &blank);
        assert_eq!(ranges, vec![(0, 33)]);
        // A unit is never cut to feed the last range.
        let mut ranges = vec![(0, 39), (40, 41)];
        fold_tail(&mut ranges, &[(0, 39), (40, 41)], 40, &|_| false);
        assert_eq!(ranges, vec![(0, 39), (40, 41)]);
    }

    #[test]
    fn a_function_longer_than_the_limit_is_split_inside() {
        let code = format!("{}{}", function("big", 60), function("small", 2));
        let c = chunks(&code, 25);
        assert!(c
            .iter()
            .all(|ch| ch.span.end_line - ch.span.start_line < 25));
        let small: Vec<&Chunk> = c
            .iter()
            .filter(|ch| ch.code.contains("int small"))
            .collect();
        assert_eq!(small.len(), 1);
        assert!(small[0].code.contains("return x;\n}"));
    }
}
