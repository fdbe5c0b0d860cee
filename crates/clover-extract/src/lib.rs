//! Turns a repository into benchmark problems, statically: it parses source and never runs it.
//!
//! For a **Python** repository ([`Language::Python`]) every test function becomes one
//! [`Problem`]: module-level `test*` functions and the `test*` methods of pytest `Test*` classes
//! and `unittest.TestCase` subclasses (a parametrized test is one problem, since its node id
//! runs every parameter set). Each problem carries a **self-contained problem file**
//! (`tmp_test_<stem>_<n>.py`, meant to sit next to the original so `conftest.py` still applies)
//! that keeps only what the one test needs: the imports, assignments, helpers, fixtures and
//! side-effect statements it reaches transitively from the module, and for a method the class
//! header, class attributes, setup/teardown and the class's fixtures. The record also holds the
//! pieces that later stages cut prompts from (setup code, declaration, body), every `assert`
//! with its operator and operands (and whether each is a constant in Python's AST sense), and
//! the names the test takes from the repository's own modules, followed to the file that
//! defines them.
//!
//! For a **C++** repository ([`Language::Cpp`]) every source (under `source_dirs`) paired with
//! a GoogleTest file (under `test_dirs`) by base name (`foo.cc` ↔ `foo_test.cc`, else
//! `foo_unittest.cc`), or — clover's extension, marked in the record and off with
//! [`ExtractOptions::pair_by_includes`] — through the headers a test includes
//! ([`pair_cpp_files`]), becomes one problem with the
//! CPP-UT-Bench fields: comment-stripped code and ground truth, the header, each
//! `TEST`/`TEST_F`/`TEST_P`/`TYPED_TEST` with its span, and chunks of at most
//! [`ExtractOptions::chunk_lines`] lines cut along top-level syntax nodes. [`CppUtBenchRow`]
//! is the same pair under CPP-UT-Bench's own column names.
//!
//! Files that cannot be used (syntax errors, non-UTF-8, empty, over the size limit) become
//! [`FileIssue`]s in the [`Extraction`], and extraction goes on with the next file. The output
//! is a pure function of the files: sorted by path, then by position, whatever the thread count.
//!
//! What it deliberately does not do: run anything (whether a ground truth passes is
//! calibrate's question), write files (the caller decides whether problem files are written;
//! [`write_problem_files`] is the helper), or read `clover.toml` (the binary maps the manifest
//! to [`ExtractOptions`]).
//!
//! ```no_run
//! use clover_extract::{extract, ExtractOptions};
//! use clover_protocol::Language;
//!
//! let opts = ExtractOptions::new("repo/toolz", "toolz", Language::Python);
//! let out = extract(&opts).unwrap();
//! for problem in &out.problems {
//!     println!("{}", problem.id);
//! }
//! eprintln!("{}", out.summary);
//! ```

pub mod cli;
mod cpp;
mod error;
mod options;
mod python;
mod walk;

pub use clover_protocol::Language;
pub use cpp::{pair_cpp_files, strip_comments, CppPair, CppUtBenchRow, IncludesOf, PairRules};
pub use error::{ExtractError, FileIssue, IssueKind, Summary};
pub use options::{ExtractOptions, DEFAULT_CHUNK_LINES, DEFAULT_MAX_FILE_BYTES};
pub use python::{
    identifiers, is_constant_operand, is_constant_operand_as, python_problems, ConstantReading,
};

use std::path::Path;

use clover_protocol::Problem;

/// What [`extract`] found in one repository.
#[derive(Debug, Clone, Default)]
pub struct Extraction {
    /// Problems sorted by file path, then position in the file.
    pub problems: Vec<Problem>,
    /// Files that were skipped or only partly used, with the reason, sorted by path.
    pub issues: Vec<FileIssue>,
    /// Every test file the test folders and globs found (before any was left out), sorted.
    pub test_files: Vec<String>,
    pub summary: Summary,
}

/// Extracts every problem of the repository `opts` describes.
///
/// Fails only when the repository itself cannot be read (missing root, bad glob); a bad file
/// is a [`FileIssue`] in the result.
pub fn extract(opts: &ExtractOptions) -> Result<Extraction, ExtractError> {
    opts.validate()?;
    match opts.language {
        Language::Python => python::extract(opts),
        Language::Cpp => cpp::extract(opts),
    }
}

/// Writes each Python problem's file (`problem_file`, relative to `root`) with its
/// `problem_text`. Returns how many files were written. C++ problems have none and are skipped.
pub fn write_problem_files(root: &Path, problems: &[Problem]) -> Result<usize, ExtractError> {
    let mut n = 0;
    for p in problems {
        if let Some(py) = &p.python {
            let path = root.join(&py.problem_file);
            std::fs::write(&path, &py.problem_text).map_err(|source| ExtractError::Write {
                path: path.clone(),
                source,
            })?;
            n += 1;
        }
    }
    Ok(n)
}
