//! Errors that stop extraction, and per-file issues that do not.

use std::fmt;
use std::path::PathBuf;

/// Extraction could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("repository root {path} is not a folder: check --repo or the manifest's path")]
    Root { path: PathBuf },
    #[error("invalid glob `{glob}`: {message}")]
    Glob { glob: String, message: String },
    #[error("invalid options: {message}")]
    Options { message: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write problem file {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why a file was skipped or only partly used.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IssueKind {
    /// The parser found a syntax error; the position is in the detail.
    SyntaxError,
    /// The file is not valid UTF-8.
    NotUtf8,
    /// The file holds a NUL byte: it is binary, not source.
    Binary,
    /// The file is empty or holds only whitespace.
    Empty,
    /// The file is larger than the size limit.
    TooLarge,
    /// The file could not be read.
    Unreadable,
    /// A C++ test file whose source file was not found.
    TestWithoutSource,
    /// A C++ test file not used because a preferred one (`_test.cc`) pairs with its source.
    Superseded,
    /// A test that could not be turned into a problem (a duplicate id, say).
    Skipped,
    /// A test file a `conftest.py`'s `collect_ignore` or `collect_ignore_glob` covers: pytest
    /// never collects it, so it gives no problems.
    CollectIgnored,
}

impl IssueKind {
    /// Whether the issue means a test file that should have given problems gave none (or
    /// fewer): a bad input, reported as an error and counted in the exit code. The others
    /// (an empty file, an unpaired or superseded C++ test) are notes about a normal layout.
    pub fn is_error(&self) -> bool {
        !matches!(
            self,
            IssueKind::Empty
                | IssueKind::TestWithoutSource
                | IssueKind::Superseded
                | IssueKind::CollectIgnored
        )
    }
}

impl fmt::Display for IssueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IssueKind::SyntaxError => "syntax error",
            IssueKind::NotUtf8 => "not UTF-8",
            IssueKind::Binary => "binary file",
            IssueKind::Empty => "empty file",
            IssueKind::TooLarge => "too large",
            IssueKind::Unreadable => "unreadable",
            IssueKind::TestWithoutSource => "test without source",
            IssueKind::Superseded => "superseded test file",
            IssueKind::Skipped => "skipped test",
            IssueKind::CollectIgnored => "never collected by pytest",
        })
    }
}

/// A file (or a test in it) that extraction reported and went past.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileIssue {
    /// Relative to the repository root.
    pub path: String,
    pub kind: IssueKind,
    pub detail: String,
}

impl fmt::Display for FileIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.kind)?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Counts for the end-of-run summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Test files found by the globs (Python) or test files considered (C++).
    pub test_files: u64,
    /// Files that produced at least one problem.
    pub used_files: u64,
    pub problems: u64,
    /// Files reported as issues.
    pub issues: u64,
    /// Test files left out because a `conftest.py` tells pytest not to collect them (also
    /// counted in `issues`).
    pub collect_ignored: u64,
    /// Test functions the manifest's `deselect` left out (not counted in `problems`).
    pub deselected: u64,
    /// Bytes of source read.
    pub bytes: u64,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} problem(s) from {} of {} test file(s), {} issue(s), {} bytes read",
            self.problems, self.used_files, self.test_files, self.issues, self.bytes
        )?;
        if self.collect_ignored > 0 {
            write!(
                f,
                "; {} test file(s) left out by conftest collect_ignore",
                self.collect_ignored
            )?;
        }
        if self.deselected > 0 {
            write!(
                f,
                "; {} test(s) deselected by the manifest",
                self.deselected
            )?;
        }
        Ok(())
    }
}
