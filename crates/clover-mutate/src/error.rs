//! What stops mutant generation for a file.

/// A file could not be mutated as asked.
#[derive(Debug, thiserror::Error)]
pub enum MutateError {
    #[error("{path}: focus lines {start}-{end} are not within the file's {lines} lines: pass 1-based inclusive lines of this text")]
    FocusLines {
        path: String,
        start: u32,
        end: u32,
        lines: u32,
    },
    #[error("{path}: focus bytes {start}..{end} are not within the file's {len} bytes or split a character: pass byte offsets of this text")]
    FocusBytes {
        path: String,
        start: usize,
        end: usize,
        len: usize,
    },
    #[error("{path}: tree-sitter gave no tree for the file (it was cancelled or timed out)")]
    Parse { path: String },
    #[error("mutant {id}: {path} is not the file it was made from (hash {found}, recorded {recorded}): calibrate the problem again")]
    Stale {
        id: String,
        path: String,
        recorded: String,
        found: String,
    },
}
