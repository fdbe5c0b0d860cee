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
    let mut out = match opts.language {
        Language::Python => python::extract(opts)?,
        Language::Cpp => cpp::extract(opts)?,
    };
    if !opts.deselect.is_empty() {
        let before = out.problems.len();
        out.problems.retain(|p| {
            // The original test's node id: the record's own is its problem file's.
            p.python.as_ref().is_none_or(|py| {
                let id = match &py.class {
                    Some(class) => format!("{}::{class}::{}", py.test_file, py.name),
                    None => format!("{}::{}", py.test_file, py.name),
                };
                !deselected(&id, &opts.deselect)
            })
        });
        out.summary.deselected = (before - out.problems.len()) as u64;
        out.summary.problems = out.problems.len() as u64;
    }
    Ok(out)
}

/// Whether `pytest --deselect` of one of `deselect` would leave out the test `node_id`: the
/// same id, or a file, class or folder it lies in (`a.py` takes `a.py::T::t`, `tests` takes
/// `tests/a.py::t`, `a.py::T` takes `a.py::T::t` but `a.py::Tx` does not).
fn deselected(node_id: &str, deselect: &[String]) -> bool {
    deselect.iter().any(|d| {
        let d = d.trim_end_matches('/');
        node_id == d
            || node_id
                .strip_prefix(d)
                .is_some_and(|rest| rest.starts_with("::") || rest.starts_with('/'))
    })
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

#[cfg(test)]
mod tests {
    use super::deselected;

    #[test]
    fn deselect_takes_a_test_its_class_file_or_folder_and_no_namesake() {
        let d = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let id = "tests/a.py::T::test_x";
        for takes in [
            "tests/a.py::T::test_x",
            "tests/a.py::T",
            "tests/a.py",
            "tests",
            "tests/",
        ] {
            assert!(deselected(id, &d(&[takes])), "{takes}");
        }
        for not in [
            "tests/a.py::T::test",
            "tests/a.py::Tx",
            "tests/a.p",
            "test",
            "tests/b.py",
        ] {
            assert!(!deselected(id, &d(&[not])), "{not}");
        }
    }
}
