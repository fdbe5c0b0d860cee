//! Cutting a long C++ source into chunks along its syntax tree.
//!
//! The tree is read as a list of atomic line ranges ("units"): each top-level node is one,
//! unless it is longer than the limit, in which case its children are (so a namespace, an
//! `extern "C"` block or a preprocessor conditional is opened up when it has to be, and a
//! function or class body only when it alone exceeds the limit). Chunks are then packed
//! greedily: a chunk ends just before the first unit that would take it past the limit, so no
//! cut ever falls inside a unit. A unit that is still too long is cut by lines.

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
    for (s, e) in merged {
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
