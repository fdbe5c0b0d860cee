//! A file to mutate, and the part of it that may be mutated.

use std::ops::Range;

use clover_protocol::Language;

use crate::error::MutateError;

/// One file of a problem's focal code.
#[derive(Debug, Clone)]
pub struct SourceFile<'a> {
    /// Relative to the repository root; it names the file in mutant ids and errors.
    pub path: &'a str,
    pub language: Language,
    /// The whole file, as it is on disk: mutants are this text with one span replaced.
    pub text: &'a str,
    pub focus: Focus,
}

/// Where in a file mutants may be made. A mutated span must lie wholly inside one region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Focus {
    /// The whole file (a C++ focal source).
    Whole,
    /// 1-based inclusive line ranges (a Task II target's body, Task III's unique blocks).
    Lines(Vec<[u32; 2]>),
    /// 0-based byte ranges, end exclusive.
    Bytes(Vec<Range<usize>>),
}

/// Byte offsets of line starts, for turning lines into bytes and bytes into lines.
#[derive(Debug)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        // A final newline does not begin another line.
        if starts.len() > 1 && *starts.last().unwrap() == text.len() {
            starts.pop();
        }
        LineIndex { starts }
    }

    pub(crate) fn lines(&self) -> u32 {
        self.starts.len() as u32
    }

    /// 1-based line and 1-based byte column of `byte`.
    pub(crate) fn position(&self, byte: usize) -> (u32, u32) {
        let line = self.starts.partition_point(|&s| s <= byte);
        let column = byte - self.starts[line - 1] + 1;
        (line as u32, column as u32)
    }

    fn line_start(&self, line: u32) -> usize {
        self.starts[line as usize - 1]
    }

    fn line_end(&self, line: u32, len: usize) -> usize {
        self.starts.get(line as usize).copied().unwrap_or(len)
    }
}

impl Focus {
    /// The byte ranges this focus covers in `file`, sorted.
    pub(crate) fn resolve(
        &self,
        file: &SourceFile<'_>,
        index: &LineIndex,
    ) -> Result<Vec<Range<usize>>, MutateError> {
        let len = file.text.len();
        let mut ranges = match self {
            Focus::Whole => std::iter::once(0..len).collect(),
            Focus::Lines(lines) => {
                let mut out = Vec::with_capacity(lines.len());
                for &[start, end] in lines {
                    if start == 0 || end < start || end > index.lines() {
                        return Err(MutateError::FocusLines {
                            path: file.path.to_string(),
                            start,
                            end,
                            lines: index.lines(),
                        });
                    }
                    out.push(index.line_start(start)..index.line_end(end, len));
                }
                out
            }
            Focus::Bytes(ranges) => {
                for r in ranges {
                    if r.start > r.end
                        || r.end > len
                        || !file.text.is_char_boundary(r.start)
                        || !file.text.is_char_boundary(r.end)
                    {
                        return Err(MutateError::FocusBytes {
                            path: file.path.to_string(),
                            start: r.start,
                            end: r.end,
                            len,
                        });
                    }
                }
                ranges.clone()
            }
        };
        ranges.sort_by_key(|r| (r.start, r.end));
        Ok(ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_resolve_to_whole_lines_with_their_newlines() {
        let text = "a\nbb\nccc\n";
        let file = SourceFile {
            path: "x.py",
            language: Language::Python,
            text,
            focus: Focus::Lines(vec![[2, 3]]),
        };
        let index = LineIndex::new(text);
        assert_eq!(index.lines(), 3);
        assert_eq!(file.focus.resolve(&file, &index).unwrap(), vec![2..9]);
        assert_eq!(index.position(5), (3, 1));
        assert_eq!(index.position(3), (2, 2));
    }

    #[test]
    fn lines_past_the_end_are_an_error_naming_the_file() {
        let file = SourceFile {
            path: "pkg/x.py",
            language: Language::Python,
            text: "a\n",
            focus: Focus::Lines(vec![[1, 2]]),
        };
        let err = file
            .focus
            .resolve(&file, &LineIndex::new(file.text))
            .unwrap_err();
        assert!(
            err.to_string().starts_with("pkg/x.py: focus lines 1-2"),
            "{err}"
        );
    }
}
