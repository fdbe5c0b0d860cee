//! C++: sources paired with their GoogleTest files, as CPP-UT-Bench builds them.

mod chunk;
mod gtest;
mod lex;

use std::collections::BTreeMap;

use clover_protocol::{CppPairing, CppProblem, Language, Problem, RecordKind, SCHEMA_VERSION};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

pub use lex::strip_comments;

use crate::error::{ExtractError, FileIssue, IssueKind};
use crate::options::ExtractOptions;
use crate::walk::{find_files, read_source, Globs};
use crate::Extraction;

const SOURCE_EXTS: &[&str] = &["cc", "cpp", "cxx", "c++"];
const HEADER_EXTS: &[&str] = &["h", "hh", "hpp", "hxx"];
/// Test-file suffixes, preferred first.
const TEST_SUFFIXES: &[&str] = &["_test", "_unittest"];

/// A source file paired with its test file. Paths are relative to the repository root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CppPair {
    /// The code under test: a `.cc`/`.cpp` file, or a header when there is no such file.
    pub source: String,
    pub test: String,
    /// The header with the source's base name, when there is one besides the source.
    pub header: Option<String>,
}

/// One row of the CPP-UT-Bench dataset, with its exact column names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CppUtBenchRow {
    #[serde(rename = "ID")]
    pub id: String,
    #[serde(rename = "Language")]
    pub language: String,
    #[serde(rename = "Repository Name")]
    pub repository_name: String,
    #[serde(rename = "File Name")]
    pub file_name: String,
    #[serde(rename = "File Path in Repository")]
    pub file_path: String,
    #[serde(rename = "File Path for Unit Test")]
    pub test_path: String,
    #[serde(rename = "Code")]
    pub code: String,
    #[serde(rename = "Unit Test - (Ground Truth)")]
    pub unit_test: String,
}

impl CppUtBenchRow {
    /// The row for a C++ problem; `None` for a Python one.
    pub fn from_problem(p: &Problem) -> Option<Self> {
        let cpp = p.cpp.as_ref()?;
        Some(CppUtBenchRow {
            id: p.id.clone(),
            language: "cpp".into(),
            repository_name: p.repo.clone(),
            file_name: cpp.file_name.clone(),
            file_path: cpp.file_path.clone(),
            test_path: cpp.test_path.clone(),
            code: cpp.code.clone(),
            unit_test: cpp.unit_test.clone(),
        })
    }
}

fn split_name(path: &str) -> (&str, &str, &str) {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    let (stem, ext) = file.rsplit_once('.').unwrap_or((file, ""));
    (dir, stem, ext)
}

/// How far apart two files are: the folders one has to go up and down between them.
fn distance(a: &str, b: &str) -> usize {
    let da: Vec<&str> = split_name(a)
        .0
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let db: Vec<&str> = split_name(b)
        .0
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let common = da.iter().zip(&db).take_while(|(x, y)| x == y).count();
    (da.len() - common) + (db.len() - common)
}

/// The candidate nearest to `to` (fewest folders apart, then by path).
fn nearest<'a>(candidates: &[&'a str], to: &str) -> Option<&'a str> {
    candidates
        .iter()
        .copied()
        .min_by_key(|c| (distance(c, to), *c))
}

/// Pairs test files with sources by base name: `foo_test.cc` (preferred) or
/// `foo_unittest.cc` with `foo.cc`/`foo.cpp`, else `foo.h`; the nearest when a base name
/// occurs in several folders. Returns the pairs sorted by source path, and an issue for every
/// test without a source and every test that lost to a preferred one.
pub fn pair_cpp_files(
    paths: &[String],
    is_test: &dyn Fn(&str) -> bool,
) -> (Vec<CppPair>, Vec<FileIssue>) {
    let mut sources: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut headers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut tests: Vec<(&str, &str, usize)> = Vec::new();
    for p in paths {
        let (_, stem, ext) = split_name(p);
        if is_test(p) {
            let base = TEST_SUFFIXES
                .iter()
                .enumerate()
                .find_map(|(rank, s)| stem.strip_suffix(s).map(|b| (b, rank)));
            if let Some((base, rank)) = base {
                tests.push((p, base, rank));
                continue;
            }
        }
        if SOURCE_EXTS.contains(&ext) {
            sources.entry(stem).or_default().push(p);
        } else if HEADER_EXTS.contains(&ext) {
            headers.entry(stem).or_default().push(p);
        }
    }
    let mut issues = Vec::new();
    // source → (rank, distance, test)
    let mut best: BTreeMap<&str, Vec<(usize, usize, &str)>> = BTreeMap::new();
    for (test, base, rank) in tests {
        // Among equally near sources, one with its header beside it is the likelier match.
        let with_header = |src: &str| {
            let dir = split_name(src).0;
            headers
                .get(base)
                .is_some_and(|hs| hs.iter().any(|h| split_name(h).0 == dir))
        };
        let chosen = match sources.get(base) {
            Some(c) => c
                .iter()
                .copied()
                .min_by_key(|s| (distance(s, test), !with_header(s), *s)),
            None => headers.get(base).and_then(|c| nearest(c, test)),
        };
        match chosen {
            Some(src) => best
                .entry(src)
                .or_default()
                .push((rank, distance(src, test), test)),
            None => issues.push(FileIssue {
                path: test.to_string(),
                kind: IssueKind::TestWithoutSource,
                detail: format!("no {base}.cc, {base}.cpp or {base}.h found"),
            }),
        }
    }
    let mut pairs = Vec::new();
    for (src, mut cands) in best {
        cands.sort();
        let chosen = cands[0].2;
        for (_, _, other) in &cands[1..] {
            issues.push(FileIssue {
                path: other.to_string(),
                kind: IssueKind::Superseded,
                detail: format!("{src} is paired with {chosen}"),
            });
        }
        let (_, stem, ext) = split_name(src);
        let header = if HEADER_EXTS.contains(&ext) {
            None
        } else {
            headers
                .get(stem)
                .and_then(|h| nearest(h, src))
                .map(str::to_string)
        };
        pairs.push(CppPair {
            source: src.to_string(),
            test: chosen.to_string(),
            header,
        });
    }
    issues.sort();
    (pairs, issues)
}

pub(crate) fn extract(opts: &ExtractOptions) -> Result<Extraction, ExtractError> {
    let globs = Globs::new(&opts.test_globs)?;
    let excludes = Globs::new(&opts.excludes)?;
    let files = find_files(&opts.root, &[], &excludes, &|p| {
        let ext = split_name(p).2;
        SOURCE_EXTS.contains(&ext) || HEADER_EXTS.contains(&ext)
    })?;
    let is_test = |p: &str| globs.matches(p);
    let (pairs, mut issues) = pair_cpp_files(&files, &is_test);
    let mut out = Extraction {
        test_files: files.iter().filter(|p| is_test(p)).cloned().collect(),
        ..Extraction::default()
    };
    out.summary.test_files = out.test_files.len() as u64;
    let results: Vec<Result<(Problem, u64), FileIssue>> = pairs
        .par_iter()
        .map(|pair| {
            let code = read_source(&opts.root, &pair.source, opts.max_file_bytes)?;
            let test = read_source(&opts.root, &pair.test, opts.max_file_bytes)?;
            let bytes = (code.len() + test.len()) as u64;
            Ok((
                problem(&opts.repo, pair, &code, &test, opts.chunk_lines),
                bytes,
            ))
        })
        .collect();
    for r in results {
        match r {
            Ok((p, bytes)) => {
                out.summary.bytes += bytes;
                out.summary.used_files += 1;
                out.problems.push(p);
            }
            Err(issue) => issues.push(issue),
        }
    }
    issues.sort();
    out.summary.problems = out.problems.len() as u64;
    out.summary.issues = issues.len() as u64;
    out.issues = issues;
    Ok(out)
}

/// The problem for one pair, from the two files' text.
fn problem(repo: &str, pair: &CppPair, code: &str, test: &str, chunk_lines: u32) -> Problem {
    let code = strip_comments(code);
    let unit_test = strip_comments(test);
    let file_name = pair
        .source
        .rsplit('/')
        .next()
        .unwrap_or(&pair.source)
        .to_string();
    Problem {
        kind: RecordKind::Problem,
        schema_version: SCHEMA_VERSION,
        id: format!("{repo}/{}", pair.source),
        repo: repo.to_string(),
        language: Language::Cpp,
        python: None,
        cpp: Some(CppProblem {
            file_name,
            file_path: pair.source.clone(),
            test_path: pair.test.clone(),
            header_path: pair.header.clone(),
            tests: gtest::find_tests(&unit_test),
            chunks: chunk::chunks(&code, chunk_lines),
            pairing: CppPairing::BaseName,
            code,
            unit_test,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_by_base_name_preferring_test_over_unittest() {
        let paths: Vec<String> = [
            "src/tokenizer.cc",
            "src/tokenizer.h",
            "src/ring_buffer.cc",
            "src/ring_buffer.h",
            "lib/only_header.h",
            "other/tokenizer.cc",
            "tests/tokenizer_test.cc",
            "tests/tokenizer_unittest.cc",
            "tests/ring_buffer_unittest.cc",
            "tests/only_header_test.cc",
            "tests/orphan_test.cc",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let is_test = |p: &str| p.ends_with("_test.cc") || p.ends_with("_unittest.cc");
        let (pairs, issues) = pair_cpp_files(&paths, &is_test);
        let got: Vec<(&str, &str, Option<&str>)> = pairs
            .iter()
            .map(|p| (p.source.as_str(), p.test.as_str(), p.header.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("lib/only_header.h", "tests/only_header_test.cc", None),
                (
                    "src/ring_buffer.cc",
                    "tests/ring_buffer_unittest.cc",
                    Some("src/ring_buffer.h")
                ),
                (
                    "src/tokenizer.cc",
                    "tests/tokenizer_test.cc",
                    Some("src/tokenizer.h")
                ),
            ]
        );
        let kinds: Vec<(&str, &IssueKind)> =
            issues.iter().map(|i| (i.path.as_str(), &i.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                ("tests/orphan_test.cc", &IssueKind::TestWithoutSource),
                ("tests/tokenizer_unittest.cc", &IssueKind::Superseded),
            ]
        );
    }

    #[test]
    fn bench_row_uses_the_dataset_column_names() {
        let pair = CppPair {
            source: "src/a.cc".into(),
            test: "src/a_test.cc".into(),
            header: None,
        };
        let p = problem("r", &pair, "int f(); // c\n", "TEST(A, B) {}\n", 200);
        let row = serde_json::to_value(CppUtBenchRow::from_problem(&p).unwrap()).unwrap();
        let keys: Vec<&String> = row.as_object().unwrap().keys().collect();
        let mut want = vec![
            "Code",
            "File Name",
            "File Path for Unit Test",
            "File Path in Repository",
            "ID",
            "Language",
            "Repository Name",
            "Unit Test - (Ground Truth)",
        ];
        want.sort();
        assert_eq!(keys, want);
        assert_eq!(row["Code"], "int f();\n");
    }
}
