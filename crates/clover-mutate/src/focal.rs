//! The focal code of a calibrated problem, as the regions [`crate::mutants`] may change.
//!
//! Task II asks for a test of one target, but which one pack-context picks later (seeded per
//! instance); calibrate knows only the problem's targets. So the Task II focus is every
//! target's body, and a runner takes the kept mutants inside the instance's target
//! (`clover_protocol::KeptMutant`s carry their path and line).

use std::collections::BTreeMap;

use clover_protocol::{LineRanges, Target, UniqueBlock};

use crate::Focus;

/// Task II: the bodies of `targets`, by file — each target's lines without those importing the
/// module runs (decorators, `def` and `class` headers, class-level statements): a mutant
/// there changes what every test imports, not what the target does when called.
pub fn target_bodies(targets: &[Target]) -> BTreeMap<String, Focus> {
    join(targets.iter().map(body))
}

/// Task III: the spans of `blocks`, by file.
pub fn block_spans(blocks: &[UniqueBlock]) -> BTreeMap<String, Focus> {
    join(blocks.iter().map(block))
}

/// Both tasks' focus of one calibrated problem, by file: every target's body
/// ([`target_bodies`]) and the unique blocks ([`block_spans`]) joined. Calibrate draws one
/// sample from it, and a scorer keeps the recorded mutants that lie inside its instance's own
/// focus (its target's body, or the blocks), by their path and line.
pub fn problem_focus(targets: &[Target], blocks: &[UniqueBlock]) -> BTreeMap<String, Focus> {
    join(targets.iter().map(body).chain(blocks.iter().map(block)))
}

fn body(t: &Target) -> (&str, LineRanges) {
    let span = LineRanges::from_lines(t.start_line..=t.end_line);
    (&t.path, span.difference(&t.import_lines))
}

fn block(b: &UniqueBlock) -> (&str, LineRanges) {
    (&b.path, LineRanges::from_lines(b.start_line..=b.end_line))
}

/// The lines of each file joined, as a focus; a file left with no line has none.
fn join<'a>(parts: impl Iterator<Item = (&'a str, LineRanges)>) -> BTreeMap<String, Focus> {
    let mut by_file: BTreeMap<String, LineRanges> = BTreeMap::new();
    for (path, lines) in parts {
        let all = by_file.entry(path.to_string()).or_default();
        *all = all.union(&lines);
    }
    by_file
        .into_iter()
        .filter(|(_, lines)| !lines.is_empty())
        .map(|(path, lines)| (path, Focus::Lines(lines.ranges().to_vec())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clover_protocol::TargetKind;

    fn target(path: &str, start: u32, end: u32, import: &[u32]) -> Target {
        Target {
            name: "t".into(),
            kind: TargetKind::Function,
            path: path.into(),
            start_line: start,
            end_line: end,
            import_lines: LineRanges::from_lines(import.iter().copied()),
        }
    }

    #[test]
    fn a_target_body_leaves_out_its_import_time_lines() {
        // A decorated function (lines 3-4 run at import), and a class whose method header
        // (line 12) and attribute (line 11) run at import too.
        let bodies = target_bodies(&[
            target("a.py", 3, 8, &[3, 4]),
            target("a.py", 10, 14, &[10, 11, 12]),
            target("b.py", 1, 2, &[1]),
        ]);
        assert_eq!(
            bodies,
            BTreeMap::from([
                ("a.py".to_string(), Focus::Lines(vec![[5, 8], [13, 14]])),
                ("b.py".to_string(), Focus::Lines(vec![[2, 2]])),
            ])
        );
    }

    fn block(path: &str, start: u32, end: u32) -> UniqueBlock {
        UniqueBlock {
            path: path.into(),
            start_line: start,
            end_line: end,
            code: String::new(),
            lines: LineRanges::new(),
        }
    }

    #[test]
    fn a_problem_focus_joins_target_bodies_and_blocks() {
        // A block overlaps the second target's body and reaches past it, another is in a file
        // with no target; the targets' import-time lines (3, 10) stay out.
        let focus = problem_focus(
            &[target("a.py", 3, 8, &[3]), target("a.py", 10, 14, &[10])],
            &[block("a.py", 12, 18), block("b.py", 1, 5)],
        );
        assert_eq!(
            focus,
            BTreeMap::from([
                ("a.py".to_string(), Focus::Lines(vec![[4, 8], [11, 18]])),
                ("b.py".to_string(), Focus::Lines(vec![[1, 5]])),
            ])
        );
        assert_eq!(problem_focus(&[], &[]), BTreeMap::new());
    }

    #[test]
    fn blocks_of_one_file_join() {
        assert_eq!(
            block_spans(&[
                block("a.py", 5, 9),
                block("a.py", 10, 12),
                block("a.py", 20, 24)
            ]),
            BTreeMap::from([("a.py".to_string(), Focus::Lines(vec![[5, 12], [20, 24]]))])
        );
    }
}
