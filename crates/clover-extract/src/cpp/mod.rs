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
    /// The rule that paired them.
    pub pairing: CppPairing,
}

/// The quoted `#include`s of a test file, given its repository-relative path.
pub type IncludesOf<'a> = &'a dyn Fn(&str) -> Vec<String>;

/// What [`pair_cpp_files`] may pair: which files are tests, which are the repository's own
/// sources (the files of `source_dirs`, the ones the library build compiles), and, for the
/// include rule, the quoted `#include`s of a test file (`None` keeps CPP-UT-Bench's base-name
/// rule alone).
pub struct PairRules<'a> {
    pub is_test: &'a dyn Fn(&str) -> bool,
    pub is_source: &'a dyn Fn(&str) -> bool,
    pub includes: Option<IncludesOf<'a>>,
}

impl std::fmt::Debug for PairRules<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairRules")
            .field("by_includes", &self.includes.is_some())
            .finish_non_exhaustive()
    }
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
/// occurs in several folders. Only files `rules.is_source` accepts are sources, so a test is
/// never paired with an interface header outside the source folders (`db_test.cc` with
/// `include/leveldb/db.h`).
///
/// With `rules.includes`, a test no base name pairs is paired through its own includes:
/// every header of the repository it `#include`s whose base name shares a word (split at
/// `_` and `-`) with the test's, taken to its source file (`log_test.cc` includes
/// `log_reader.h` and `log_writer.h`, so it tests `log_reader.cc` and `log_writer.cc`). The
/// shared word keeps out the helpers every test includes (`testutil.h`); a header without a
/// `.cc` of its name gives nothing, and a source the base-name rule paired keeps its test.
///
/// Returns the pairs sorted by source path, and an issue for every test without a source and
/// every test that lost to a preferred one.
pub fn pair_cpp_files(paths: &[String], rules: &PairRules) -> (Vec<CppPair>, Vec<FileIssue>) {
    let mut sources: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut headers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut tests: Vec<(&str, &str, usize)> = Vec::new();
    for p in paths {
        let (_, stem, ext) = split_name(p);
        if (rules.is_test)(p) {
            let base = TEST_SUFFIXES
                .iter()
                .enumerate()
                .find_map(|(rank, s)| stem.strip_suffix(s).map(|b| (b, rank)));
            if let Some((base, rank)) = base {
                tests.push((p, base, rank));
                continue;
            }
        }
        if !(rules.is_source)(p) {
            continue;
        }
        if SOURCE_EXTS.contains(&ext) {
            sources.entry(stem).or_default().push(p);
        } else if HEADER_EXTS.contains(&ext) {
            headers.entry(stem).or_default().push(p);
        }
    }
    let mut unpaired: Vec<(&str, &str)> = Vec::new();
    // source → (rank, distance, test)
    let mut best: BTreeMap<&str, Vec<(usize, usize, &str)>> = BTreeMap::new();
    for &(test, base, rank) in &tests {
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
            None => unpaired.push((test, base)),
        }
    }
    let mut issues = Vec::new();
    let mut pairs = Vec::new();
    let header_of = |src: &str| {
        let (_, stem, ext) = split_name(src);
        if HEADER_EXTS.contains(&ext) {
            None
        } else {
            headers
                .get(stem)
                .and_then(|h| nearest(h, src))
                .map(str::to_string)
        }
    };
    for (src, mut cands) in best.iter().map(|(s, c)| (*s, c.clone())) {
        cands.sort();
        let chosen = cands[0].2;
        for (_, _, other) in &cands[1..] {
            issues.push(FileIssue {
                path: other.to_string(),
                kind: IssueKind::Superseded,
                detail: format!("{src} is paired with {chosen}"),
            });
        }
        pairs.push(CppPair {
            source: src.to_string(),
            test: chosen.to_string(),
            header: header_of(src),
            pairing: CppPairing::BaseName,
        });
    }
    // The include rule: source → (distance, test), for sources the base name left free.
    let mut by_includes: BTreeMap<&str, Vec<(usize, &str)>> = BTreeMap::new();
    let mut still_unpaired = Vec::new();
    for (test, base) in unpaired {
        let found: Vec<&str> = match rules.includes {
            Some(includes) => included_sources(test, base, &includes(test), paths, &sources)
                .into_iter()
                .filter(|s| !best.contains_key(s))
                .collect(),
            None => Vec::new(),
        };
        if found.is_empty() {
            still_unpaired.push((test, base));
        }
        for src in found {
            by_includes
                .entry(src)
                .or_default()
                .push((distance(src, test), test));
        }
    }
    for (src, mut cands) in by_includes {
        cands.sort();
        pairs.push(CppPair {
            source: src.to_string(),
            test: cands[0].1.to_string(),
            header: header_of(src),
            pairing: CppPairing::Includes,
        });
    }
    for (test, base) in still_unpaired {
        let mut detail = format!("no {base}.cc, {base}.cpp or {base}.h in the source folders");
        if rules.includes.is_some() {
            detail.push_str(", and no header it includes names a source");
        }
        issues.push(FileIssue {
            path: test.to_string(),
            kind: IssueKind::TestWithoutSource,
            detail,
        });
    }
    pairs.sort_by(|a, b| a.source.cmp(&b.source));
    issues.sort();
    (pairs, issues)
}

/// The sources a test reaches through its quoted includes: each include resolved to a
/// repository header (beside the test, else the nearest path ending in it), kept when its
/// base name shares a word with the test's, then taken to the nearest source of its name.
fn included_sources<'a>(
    test: &str,
    base: &str,
    includes: &[String],
    paths: &'a [String],
    sources: &BTreeMap<&str, Vec<&'a str>>,
) -> Vec<&'a str> {
    let words = |s: &str| -> Vec<String> {
        s.split(['_', '-'])
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let test_words = words(base);
    let test_dir = split_name(test).0;
    let mut out: Vec<&str> = Vec::new();
    for inc in includes {
        let inc = inc.trim_start_matches("./");
        let beside = if test_dir.is_empty() {
            inc.to_string()
        } else {
            format!("{test_dir}/{inc}")
        };
        let ends: Vec<&str> = paths
            .iter()
            .map(String::as_str)
            .filter(|p| *p == beside || *p == inc || p.ends_with(&format!("/{inc}")))
            .collect();
        let Some(header) = ends
            .iter()
            .find(|p| **p == beside)
            .copied()
            .or_else(|| nearest(&ends, test))
        else {
            continue;
        };
        let (_, stem, ext) = split_name(header);
        if !HEADER_EXTS.contains(&ext) || !words(stem).iter().any(|w| test_words.contains(w)) {
            continue;
        }
        if let Some(src) = sources.get(stem).and_then(|c| nearest(c, header)) {
            if !out.contains(&src) {
                out.push(src);
            }
        }
    }
    out
}

/// The quoted `#include "..."` paths of a C++ text, comments already stripped.
fn quoted_includes(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let rest = rest.strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

/// Whether `rel` lies in one of `dirs` (relative to the root); no folders means everywhere.
fn under(dirs: &[std::path::PathBuf], rel: &str) -> bool {
    dirs.is_empty()
        || dirs.iter().any(|d| {
            let d = d.to_string_lossy();
            let d = d.trim_start_matches("./").trim_end_matches('/');
            d.is_empty() || d == "." || rel == d || rel.starts_with(&format!("{d}/"))
        })
}

pub(crate) fn extract(opts: &ExtractOptions) -> Result<Extraction, ExtractError> {
    let globs = Globs::new(&opts.test_globs)?;
    let excludes = Globs::new(&opts.excludes)?;
    let files = find_files(&opts.root, &[], &excludes, &|p| {
        let ext = split_name(p).2;
        SOURCE_EXTS.contains(&ext) || HEADER_EXTS.contains(&ext)
    })?;
    // Tests are found in test_dirs and sources in source_dirs, as the library build finds
    // them, so extract and the build mean one thing by each.
    let is_test = |p: &str| globs.matches(p) && under(&opts.test_dirs, p);
    let is_source = |p: &str| !globs.matches(p) && under(&opts.source_dirs, p);
    let includes = |test: &str| {
        std::fs::read_to_string(opts.root.join(test))
            .map(|t| quoted_includes(&strip_comments(&t)))
            .unwrap_or_default()
    };
    let rules = PairRules {
        is_test: &is_test,
        is_source: &is_source,
        includes: opts.pair_by_includes.then_some(&includes as IncludesOf),
    };
    let (pairs, mut issues) = pair_cpp_files(&files, &rules);
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
            pairing: pair.pairing,
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
        let rules = PairRules {
            is_test: &is_test,
            is_source: &|_| true,
            includes: None,
        };
        let (pairs, issues) = pair_cpp_files(&paths, &rules);
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
            pairing: CppPairing::BaseName,
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
