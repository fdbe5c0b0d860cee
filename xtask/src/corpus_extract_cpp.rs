//! `cargo xtask corpus-extract-cpp`: does extract pair and chunk real C++ code as it should?
//! On the GoogleTest samples and snappy, which nobody here wrote.
//!
//! For each repository of the C++ corpus: run the extract library with the manifest's options,
//! then check that
//!
//! - the source/test pairs found are exactly the ones expected by base name, and the test
//!   files left unpaired are exactly the known ones;
//! - comment stripping keeps the line count of every source and test file;
//! - every source over the chunk limit is cut into more than one chunk, each of at most the
//!   limit, in order, not overlapping, with its text at its span, leaving out only blank
//!   lines; and no chunk boundary falls inside a function, class, struct, union or enum that
//!   is itself no longer than the limit (tree-sitter-cpp spans, read independently of
//!   extract's own chunker).
//!
//! Unless told not to, it then builds and runs each pair's ground-truth test bare (no
//! sandbox: `g++ --coverage`, GoogleTest's XML report, gcovr's JSON summary), with the library
//! under test made of every non-test translation unit as the sandbox makes it, and checks the
//! pass counts against the pinned ones. The figures go into `docs/BENCHMARKS.md`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clover_extract::IssueKind;
use clover_manifest::RepoConfig;
use clover_protocol::{Chunk, TestOutcome};
use rayon::prelude::*;

use crate::corpus::{self, CppRepo};

/// One repository's figures.
pub struct CppFigures {
    pub name: String,
    pub version: String,
    pub pairs_expected: usize,
    pub pairs_found: usize,
    pub unpaired_tests: Vec<String>,
    pub tests_listed: usize,
    pub sources_over_limit: usize,
    pub sources_chunked: usize,
    pub chunks: usize,
    pub largest_chunk: u32,
    /// Functions and classes no longer than the limit, checked to lie in one chunk.
    pub nodes_checked: usize,
    /// Functions and classes longer than the limit (they may be cut), as `file:line kind`.
    pub nodes_over_limit: Vec<String>,
    pub bare: Vec<BareRun>,
    pub failures: Vec<String>,
}

/// One ground-truth test file built and run outside the sandbox.
pub struct BareRun {
    pub test: String,
    pub focal: String,
    pub passed: usize,
    pub failed: usize,
    pub expected: usize,
    pub focal_line_percent: Option<f64>,
    pub secs: f64,
}

/// Checks the named C++ repositories (default: the ones the test suite uses), prints the
/// figures (and with `write`, writes them), and fails when a check failed.
pub fn run(root: &Path, names: &[String], run_tests: bool, write: bool) -> Result<Vec<CppFigures>> {
    let names: Vec<String> = if names.is_empty() {
        corpus::CPP_FOR_TESTS
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        names.to_vec()
    };
    let ready = corpus::ensure_cpp(root, &names)?;
    let manifest = root.join("target/corpus/clover.toml");
    let mut all = Vec::new();
    for r in &ready {
        let spec = corpus::CPP_REPOS
            .iter()
            .find(|c| c.name == r.name)
            .expect("ensure_cpp returns corpus repositories");
        let repo = RepoConfig::resolve(Some(&manifest), Some(&r.name), None)?.remove(0);
        let mut fig = check(&repo, spec)?;
        fig.version = r.version.clone();
        if run_tests {
            let build = root.join("target/corpus/build").join(&r.name);
            bare_runs(&repo, spec, &build, &mut fig)?;
        }
        print(&fig);
        all.push(fig);
    }
    // A run without the ground truth leaves the recorded figures as they are.
    if run_tests && write {
        write_section(root, &all)?;
    }
    let failures: Vec<String> = all
        .iter()
        .flat_map(|f| f.failures.iter().map(move |x| format!("{}: {x}", f.name)))
        .collect();
    if !failures.is_empty() {
        bail!("the C++ corpus check failed:\n{}", failures.join("\n"));
    }
    Ok(all)
}

fn print(f: &CppFigures) {
    println!(
        "{} ({}): {}/{} pairs found, {} tests listed; unpaired tests: {}",
        f.name,
        f.version,
        f.pairs_found,
        f.pairs_expected,
        f.tests_listed,
        if f.unpaired_tests.is_empty() {
            "none".to_string()
        } else {
            f.unpaired_tests.join(" ")
        }
    );
    println!(
        "  {}/{} sources over the limit chunked into {} chunks (largest {} lines); {} functions/classes lie whole in one chunk; longer than the limit: {}",
        f.sources_chunked,
        f.sources_over_limit,
        f.chunks,
        f.largest_chunk,
        f.nodes_checked,
        if f.nodes_over_limit.is_empty() {
            "none".to_string()
        } else {
            f.nodes_over_limit.join(", ")
        }
    );
    for b in &f.bare {
        println!(
            "  bare {}: {} passed, {} failed (expected {} passed); {} line coverage {}; {:.1} s",
            b.test,
            b.passed,
            b.failed,
            b.expected,
            b.focal,
            b.focal_line_percent
                .map_or("n/a".to_string(), |p| format!("{p:.1}%")),
            b.secs
        );
    }
    for x in &f.failures {
        println!("  FAIL {x}");
    }
}

fn check(repo: &RepoConfig, spec: &CppRepo) -> Result<CppFigures> {
    let opts = clover_extract::ExtractOptions::from_repo(repo);
    let limit = opts.chunk_lines;
    let extraction = clover_extract::extract(&opts)?;
    let mut fig = CppFigures {
        name: repo.name.clone(),
        version: String::new(),
        pairs_expected: spec.pairs.len(),
        pairs_found: 0,
        unpaired_tests: Vec::new(),
        tests_listed: 0,
        sources_over_limit: 0,
        sources_chunked: 0,
        chunks: 0,
        largest_chunk: 0,
        nodes_checked: 0,
        nodes_over_limit: Vec::new(),
        bare: Vec::new(),
        failures: Vec::new(),
    };

    let found: BTreeSet<(String, String)> = extraction
        .problems
        .iter()
        .filter_map(|p| p.cpp.as_ref())
        .map(|c| (c.file_path.clone(), c.test_path.clone()))
        .collect();
    let expected: BTreeSet<(String, String)> = spec
        .pairs
        .iter()
        .map(|(s, t)| (s.to_string(), t.to_string()))
        .collect();
    fig.pairs_found = found.intersection(&expected).count();
    for (s, t) in expected.difference(&found) {
        fig.failures.push(format!("pair {s} ↔ {t} not found"));
    }
    for (s, t) in found.difference(&expected) {
        fig.failures.push(format!("unexpected pair {s} ↔ {t}"));
    }
    for issue in &extraction.issues {
        match issue.kind {
            IssueKind::TestWithoutSource => fig.unpaired_tests.push(issue.path.clone()),
            _ => fig.failures.push(format!(
                "{}: {:?}: {}",
                issue.path, issue.kind, issue.detail
            )),
        }
    }
    let want_unpaired: Vec<String> = spec.unpaired_tests.iter().map(|s| s.to_string()).collect();
    if fig.unpaired_tests != want_unpaired {
        fig.failures.push(format!(
            "unpaired tests are {:?}, expected {want_unpaired:?}",
            fig.unpaired_tests
        ));
    }

    for p in &extraction.problems {
        let Some(c) = &p.cpp else { continue };
        fig.tests_listed += c.tests.len();
        for (path, stripped) in [(&c.file_path, &c.code), (&c.test_path, &c.unit_test)] {
            let original = std::fs::read_to_string(repo.root.join(path))
                .with_context(|| format!("cannot read {path}"))?;
            let (a, b) = (
                original.matches('\n').count(),
                stripped.matches('\n').count(),
            );
            if a != b {
                fig.failures.push(format!(
                    "{path}: comment stripping changed the line count from {a} to {b}"
                ));
            }
        }
        let lines = line_count(&c.code);
        if lines > limit as usize {
            fig.sources_over_limit += 1;
            if c.chunks.len() > 1 {
                fig.sources_chunked += 1;
            } else {
                fig.failures.push(format!(
                    "{}: {lines} lines but {} chunk",
                    c.file_path,
                    c.chunks.len()
                ));
            }
        }
        fig.chunks += c.chunks.len();
        for ch in &c.chunks {
            fig.largest_chunk = fig
                .largest_chunk
                .max(ch.span.end_line + 1 - ch.span.start_line);
        }
        let (checked, over, problems) = chunk_problems(&c.code, &c.chunks, limit);
        fig.nodes_checked += checked;
        fig.nodes_over_limit.extend(
            over.into_iter()
                .map(|(line, kind)| format!("{}:{line} {kind}", c.file_path)),
        );
        fig.failures.extend(
            problems
                .into_iter()
                .map(|x| format!("{}: {x}", c.file_path)),
        );
    }
    Ok(fig)
}

/// Lines as the chunker counts them: a last line without a newline still counts.
fn line_count(code: &str) -> usize {
    code.matches('\n').count() + usize::from(!code.is_empty() && !code.ends_with('\n'))
}

/// Node kinds a chunk boundary must not cut when they fit within the limit.
const WHOLE_KINDS: &[&str] = &[
    "function_definition",
    "class_specifier",
    "struct_specifier",
    "union_specifier",
    "enum_specifier",
];

/// How many functions and classes were checked to lie whole in one chunk, those longer than
/// the limit (start line, kind), and what is wrong with `chunks` as a cover of `code`.
fn chunk_problems(
    code: &str,
    chunks: &[Chunk],
    limit: u32,
) -> (usize, Vec<(u32, &'static str)>, Vec<String>) {
    let (mut checked, mut over) = (0, Vec::new());
    let mut out = Vec::new();
    let lines: Vec<&str> = code.split_inclusive('\n').collect();
    let mut next_line = 1u32;
    for (i, ch) in chunks.iter().enumerate() {
        let s = &ch.span;
        if ch.index as usize != i {
            out.push(format!("chunk {i} has index {}", ch.index));
        }
        if s.end_line < s.start_line || s.end_line + 1 - s.start_line > limit {
            out.push(format!(
                "chunk {i} spans lines {}-{} (limit {limit})",
                s.start_line, s.end_line
            ));
        }
        if s.start_line < next_line {
            out.push(format!("chunk {i} overlaps the one before"));
        }
        // Only blank lines may fall between chunks.
        for l in next_line..s.start_line.min(lines.len() as u32 + 1) {
            if !lines[l as usize - 1].trim().is_empty() {
                out.push(format!("line {l} is in no chunk"));
                break;
            }
        }
        next_line = s.end_line + 1;
        if code.get(s.start_byte as usize..s.end_byte as usize) != Some(ch.code.as_str()) {
            out.push(format!("chunk {i}'s text is not the code at its byte span"));
        }
        let text: String = lines
            .get(s.start_line as usize - 1..s.end_line as usize)
            .map(|ls| ls.concat())
            .unwrap_or_default();
        if text != ch.code {
            out.push(format!("chunk {i}'s text is not the code at its line span"));
        }
    }
    for l in next_line..=lines.len() as u32 {
        if !lines[l as usize - 1].trim().is_empty() {
            out.push(format!("line {l} is in no chunk"));
            break;
        }
    }
    if chunks.len() < 2 {
        return (checked, over, out);
    }

    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_cpp::LANGUAGE.into())
        .expect("tree-sitter-cpp loads");
    let Some(tree) = parser.parse(code, None) else {
        out.push("tree-sitter-cpp did not parse it".into());
        return (checked, over, out);
    };
    let chunk_of = |line: u32| {
        chunks
            .iter()
            .position(|c| c.span.start_line <= line && line <= c.span.end_line)
    };
    let mut cursor = tree.walk();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        stack.extend(node.named_children(&mut cursor));
        let Some(kind) = WHOLE_KINDS.iter().find(|k| **k == node.kind()) else {
            continue;
        };
        let start = node.start_position().row as u32 + 1;
        let end_pos = node.end_position();
        // A node ending at column 0 ends on the line before.
        let end = if end_pos.column == 0 && end_pos.row > node.start_position().row {
            end_pos.row as u32
        } else {
            end_pos.row as u32 + 1
        };
        if end + 1 - start > limit {
            over.push((start, *kind));
            continue;
        }
        checked += 1;
        let (a, b) = (chunk_of(start), chunk_of(end));
        if a.is_none() || a != b {
            let name = node
                .child_by_field_name("declarator")
                .or_else(|| node.child_by_field_name("name"))
                .and_then(|n| n.utf8_text(code.as_bytes()).ok())
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
                .to_string();
            out.push(format!(
                "{} `{name}` at lines {start}-{end} is cut (chunks {a:?} and {b:?})",
                node.kind()
            ));
        }
    }
    over.sort();
    (checked, over, out)
}

/// Builds the library under test once and each pair's test against it, runs each test with
/// a GoogleTest XML report, and reads the focal file's line coverage from gcovr.
fn bare_runs(repo: &RepoConfig, spec: &CppRepo, build: &Path, fig: &mut CppFigures) -> Result<()> {
    if build.exists() {
        std::fs::remove_dir_all(build)?;
    }
    std::fs::create_dir_all(build)?;
    let root = &repo.root;
    let is_test = |name: &str| {
        repo.test_globs.iter().any(|g| {
            g.strip_prefix('*')
                .is_some_and(|suffix| name.ends_with(suffix))
        })
    };
    let mut library: Vec<PathBuf> = Vec::new();
    for dir in &repo.source_dirs {
        collect_units(&root.join(dir), &mut library)?;
    }
    library.retain(|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        !is_test(name) && !spec.excludes.contains(&name)
    });
    library.sort();
    library.dedup();
    let mut flags: Vec<String> = repo.cxxflags.clone();
    flags.extend(
        repo.include_dirs
            .iter()
            .map(|d| format!("-I{}", root.join(d).display())),
    );
    flags.push("--coverage".into());
    let object = |src: &Path| {
        build.join(format!(
            "{}.o",
            src.file_stem().and_then(|s| s.to_str()).unwrap_or("unit")
        ))
    };
    let compile = |src: &Path| -> Result<PathBuf> {
        let obj = object(src);
        let mut args = flags.clone();
        args.extend([
            "-c".into(),
            src.display().to_string(),
            "-o".into(),
            obj.display().to_string(),
        ]);
        duct::cmd(&repo.cxx, &args)
            .run()
            .with_context(|| format!("cannot compile {}", src.display()))?;
        Ok(obj)
    };
    let started = Instant::now();
    let objects: Vec<PathBuf> = library
        .par_iter()
        .map(|s| compile(s))
        .collect::<Result<_>>()?;
    let library_secs = started.elapsed().as_secs_f64();
    for (focal, test) in spec.pairs {
        let started = Instant::now();
        let test_obj = compile(&root.join(test))?;
        // Tests below folders (`test/node/node_test.cpp`) build into the one build folder.
        let flat = test.replace('/', "__");
        let binary = build.join(
            Path::new(&flat)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("test"),
        );
        let mut args: Vec<String> = vec![test_obj.display().to_string()];
        args.extend(objects.iter().map(|o| o.display().to_string()));
        args.extend(repo.cxxflags.iter().cloned());
        args.extend([
            "--coverage".into(),
            "-o".into(),
            binary.display().to_string(),
        ]);
        args.extend(repo.link.iter().map(|l| format!("-l{l}")));
        duct::cmd(&repo.cxx, &args)
            .run()
            .with_context(|| format!("cannot link {test}"))?;
        // Counts accumulate in the library's .gcda files: each test starts from none.
        for e in std::fs::read_dir(build)?.flatten() {
            if e.path().extension().is_some_and(|x| x == "gcda") {
                std::fs::remove_file(e.path())?;
            }
        }
        let xml = build.join(format!("{flat}.xml"));
        let mut cmd = duct::cmd!(&binary, format!("--gtest_output=xml:{}", xml.display()))
            .dir(build)
            .stdout_null()
            .unchecked();
        for (k, v) in &repo.env {
            cmd = cmd.env(k, v);
        }
        let status = cmd.run()?.status;
        let cases = std::fs::read(&xml)
            .ok()
            .map(|x| clover_report::parse_junit(&x))
            .transpose()?
            .unwrap_or_default();
        let passed = cases
            .iter()
            .filter(|c| c.outcome == TestOutcome::Passed)
            .count();
        let failed = cases.len() - passed;
        let expected = spec
            .passing
            .iter()
            .find(|(t, _)| t == test)
            .map_or(0, |(_, n)| *n);
        if passed != expected || failed > 0 || !status.success() {
            fig.failures.push(format!(
                "bare run of {test}: {passed} passed, {failed} failed, exit {status}; expected {expected} passed"
            ));
        }
        let json = build.join(format!("{flat}.coverage.json"));
        duct::cmd!("gcovr", "--root", root, "--json-summary", &json, build)
            .dir(build)
            .stdout_null()
            .run()
            .context("gcovr failed")?;
        let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&json)?)?;
        let focal_line_percent = summary["files"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["filename"].as_str() == Some(*focal))
            .and_then(|f| f["line_percent"].as_f64());
        fig.bare.push(BareRun {
            test: test.to_string(),
            focal: focal.to_string(),
            passed,
            failed,
            expected,
            focal_line_percent,
            // The library is built once; each test is charged an even share of it.
            secs: started.elapsed().as_secs_f64() + library_secs / spec.pairs.len() as f64,
        });
    }
    Ok(())
}

/// Translation units below `dir`, skipping hidden folders (quilt's `.pc` holds pre-patch
/// copies).
fn collect_units(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let e = e?;
        let path = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        let ft = e.file_type()?;
        if ft.is_dir() && !name.starts_with('.') {
            collect_units(&path, out)?;
        } else if ft.is_file() && [".cc", ".cpp", ".cxx"].iter().any(|x| name.ends_with(x)) {
            out.push(path);
        }
    }
    Ok(())
}

const BEGIN: &str = "<!-- corpus-extract-cpp: begin -->";
const END: &str = "<!-- corpus-extract-cpp: end -->";

/// Replaces this command's section of `docs/BENCHMARKS.md`.
fn write_section(root: &Path, figs: &[CppFigures]) -> Result<()> {
    let mut s = String::new();
    writeln!(s, "{BEGIN}")?;
    writeln!(s, "## C++ pairing and chunking on real code\n")?;
    writeln!(
        s,
        "Measured by `cargo xtask corpus-extract-cpp --write {}`: clover-extract on each repository; every",
        figs.iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    )?;
    writeln!(
        s,
        "pair expected by base name found, comment stripping keeping line counts, and no chunk"
    )?;
    writeln!(
        s,
        "boundary inside a function or class that fits the 200-line limit (tree-sitter-cpp spans).\n"
    )?;
    writeln!(
        s,
        "| repository | source | pairs found | unpaired tests | TESTs listed | sources > 200 lines | chunked | chunks | largest chunk | functions/classes of chunked sources kept whole |"
    )?;
    writeln!(s, "|---|---|---|---|---|---|---|---|---|---|")?;
    for f in figs {
        writeln!(
            s,
            "| {} | {} | {}/{} | {} | {} | {} | {} | {} | {} lines | {} (+{} over 200 lines) |",
            f.name,
            f.version,
            f.pairs_found,
            f.pairs_expected,
            f.unpaired_tests.len(),
            f.tests_listed,
            f.sources_over_limit,
            f.sources_chunked,
            f.chunks,
            f.largest_chunk,
            f.nodes_checked,
            f.nodes_over_limit.len()
        )?;
    }
    let unpaired: Vec<String> = figs
        .iter()
        .filter(|f| !f.unpaired_tests.is_empty())
        .map(|f| format!("{}: {}", f.name, f.unpaired_tests.join(", ")))
        .collect();
    if !unpaired.is_empty() {
        writeln!(
            s,
            "\nTests with no source of their base name (they test headers of other names): {}.",
            unpaired.join("; ")
        )?;
    }
    {
        writeln!(
            s,
            "\nGround truth built and run bare (`g++ --coverage`, no sandbox), the library under test"
        )?;
        writeln!(
            s,
            "being every non-test translation unit; seconds include an even share of the library build.\n"
        )?;
        writeln!(
            s,
            "| repository | test file | passed | failed | expected passed | focal file line coverage | seconds |"
        )?;
        writeln!(s, "|---|---|---|---|---|---|---|")?;
        for f in figs {
            for b in &f.bare {
                writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {}: {} | {:.1} |",
                    f.name,
                    b.test,
                    b.passed,
                    b.failed,
                    b.expected,
                    b.focal,
                    b.focal_line_percent
                        .map_or("n/a".to_string(), |p| format!("{p:.1}%")),
                    b.secs
                )?;
            }
        }
    }
    let failures: Vec<String> = figs
        .iter()
        .flat_map(|f| f.failures.iter().map(move |x| format!("{}: {x}", f.name)))
        .collect();
    if !failures.is_empty() {
        writeln!(s, "\nFailures:\n")?;
        for x in failures {
            writeln!(s, "- {x}")?;
        }
    }
    writeln!(s, "{END}")?;
    crate::docs::replace_section(root, BEGIN, END, &s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clover_protocol::Span;

    fn chunk(code: &str, index: u32, start_line: u32, end_line: u32) -> Chunk {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(code.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let (sb, eb) = (starts[start_line as usize - 1], starts[end_line as usize]);
        Chunk {
            index,
            span: Span {
                start_line,
                end_line,
                start_byte: sb as u32,
                end_byte: eb as u32,
            },
            code: code[sb..eb].to_string(),
        }
    }

    const CODE: &str = "int f(int x) {\n  return x;\n}\n\nstruct S {\n  int a;\n};\n";

    #[test]
    fn chunks_along_nodes_pass() {
        let chunks = [chunk(CODE, 0, 1, 3), chunk(CODE, 1, 5, 7)];
        let (checked, over, problems) = chunk_problems(CODE, &chunks, 4);
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!((checked, over.len()), (2, 0));
    }

    #[test]
    fn a_cut_function_a_lost_line_and_an_overlong_chunk_are_found() {
        let chunks = [chunk(CODE, 0, 1, 2), chunk(CODE, 1, 3, 7)];
        let (_, _, problems) = chunk_problems(CODE, &chunks, 4);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("chunk 1 spans lines 3-7"));
        assert!(problems[1].contains("function_definition `f(int x)` at lines 1-3 is cut"));
        let chunks = [chunk(CODE, 0, 1, 3), chunk(CODE, 1, 6, 7)];
        let (_, _, problems) = chunk_problems(CODE, &chunks, 4);
        assert!(
            problems.iter().any(|p| p == "line 5 is in no chunk"),
            "{problems:?}"
        );
    }
}
