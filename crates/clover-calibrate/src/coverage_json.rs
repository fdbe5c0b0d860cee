//! Reads per-test line sets from coverage.py's data.
//!
//! Inside the sandbox, the pytest process itself loads [`PLUGIN`] (`_clover_calibrate.py`),
//! which switches coverage.py's dynamic context once per test (`<node id>|test`, from the
//! start of its setup) and, at session end, reads the saved data through coverage.py's public
//! API (`CoverageData.contexts_by_lineno`, `Coverage.analysis2`) and writes
//! `{"files": {FILE: {"executable": [LINE…], "contexts": {CONTEXT: [LINE…]}}}}` for the
//! non-test files some test touched. coverage.py's own `json --show-contexts` lists every
//! context on every line, again for each function and class region, and grows past 100 MB for
//! a test file of a few hundred tests; this form names each context once per file.
//!
//! A test's lines are the union over its contexts: the plugin's one `|test` context, or
//! pytest-cov's `--cov-context=test` phases (`|setup`, `|run`, `|teardown`), which this reader
//! also folds; and, for a parametrized test, over all its parameter sets (`name[a]`,
//! `name[b]`): a problem is the whole parametrized function. Lines run outside any test
//! (loading conftests, importing and collecting the test files: module level, and whatever
//! function bodies that calls) belong to the empty context and are attributed to no test, in
//! every run alike, so one run of many tests and one run per test give the same lines; they
//! are read apart ([`ContextCoverage::imported`]), since any process that imports the same
//! modules runs them.
//!
//! A file's executable lines are coverage.py's parse of it, the same in every run of the
//! repository while the file is unchanged: the plugin reports them once a calibrate run, and
//! each later run names it the files it need not parse again ([`KnownStatements`]), with the
//! size and time of change they had when parsed.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use clover_protocol::LineRanges;
use serde_json::Value;

use crate::analysis::CoverageMap;

/// What one coverage report says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextCoverage {
    /// Executable lines (executed or missing) of every measured source file.
    pub executable: CoverageMap,
    /// Lines per test node id (phases and parameters folded in).
    pub by_test: BTreeMap<String, CoverageMap>,
    /// Lines run before the first test (the empty context): loading conftests, importing
    /// and collecting the test files.
    pub imported: CoverageMap,
}

/// The executable lines of the files the plugin has reported, by repository root and file as
/// the report names it, with the file's size and time of change (nanoseconds) then. Shared by
/// the groups of a calibrate run; a file whose size or time differs in a run (a test rewrote
/// it in its view) is parsed again there.
#[derive(Debug, Default)]
pub struct KnownStatements(Mutex<HashMap<PathBuf, HashMap<String, KnownFile>>>);

type KnownFile = ([u64; 2], Vec<u32>);

/// The environment variable naming the file of [`KnownStatements::listing`] in the run's view.
pub const KNOWN_STATEMENTS_ENV: &str = "CLOVER_KNOWN_STATEMENTS";

impl KnownStatements {
    /// What the plugin reads from `CLOVER_KNOWN_STATEMENTS`: `{FILE: [SIZE, MTIME_NS]}` of
    /// the files of the repository at `root` whose lines are known.
    pub fn listing(&self, root: &Path) -> String {
        let known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let listing: BTreeMap<&str, [u64; 2]> = known
            .get(root)
            .into_iter()
            .flatten()
            .map(|(name, (stat, _))| (name.as_str(), *stat))
            .collect();
        serde_json::to_string(&listing).expect("a map of strings to numbers")
    }

    fn get(&self, root: &Path, name: &str, stat: [u64; 2]) -> Option<Vec<u32>> {
        let known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match known.get(root)?.get(name)? {
            (s, lines) if *s == stat => Some(lines.clone()),
            _ => None,
        }
    }

    fn insert(&self, root: &Path, name: &str, stat: [u64; 2], lines: &[u32]) {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        known
            .entry(root.to_path_buf())
            .or_default()
            .insert(name.to_string(), (stat, lines.to_vec()));
    }
}

/// The report is not what [`PLUGIN`] writes.
#[derive(Debug, thiserror::Error)]
#[error("coverage contexts report: {0}")]
pub struct ReportError(String);

/// The pytest plugin that switches contexts per test and writes the report (loaded with
/// `-p PLUGIN_MODULE`, with `CLOVER_CONTEXTS_OUT` naming the report).
pub const PLUGIN: &str = include_str!("_clover_calibrate.py");
/// The plugin's module name: its file is `PLUGIN_MODULE.py` in a folder on `PYTHONPATH`.
pub const PLUGIN_MODULE: &str = "_clover_calibrate";

/// The test a context belongs to: `tests/t.py::C::test_x[1-2]|run` → `tests/t.py::C::test_x`.
pub fn test_of_context(context: &str) -> Option<&str> {
    let node = context.rsplit_once('|').map_or(context, |(node, _)| node);
    if node.is_empty() {
        return None;
    }
    // Parameters start at the first '[' that follows a '::' (ids may hold '::' and '[' too).
    Some(match node.find('[') {
        Some(i) if node[..i].contains("::") => &node[..i],
        _ => node,
    })
}

/// Parses the report of a run of the repository at `root`, keeping files for which
/// `keep(path)` gives a repository-relative path. A file reported without its executable lines
/// takes them from `known`; those reported with them are added there.
pub fn parse(
    json: &[u8],
    keep: impl Fn(&str) -> Option<String>,
    known: &KnownStatements,
    root: &Path,
) -> Result<ContextCoverage, ReportError> {
    let value: Value = serde_json::from_slice(json).map_err(|e| ReportError(e.to_string()))?;
    let files = value
        .get("files")
        .and_then(Value::as_object)
        .ok_or_else(|| ReportError("no `files` object".into()))?;
    let mut out = ContextCoverage::default();
    for (name, file) in files {
        let stat: Option<[u64; 2]> = file
            .get("stat")
            .and_then(|s| serde_json::from_value(s.clone()).ok());
        let executable: Option<Vec<u32>> =
            file.get("executable")
                .and_then(Value::as_array)
                .map(|lines| {
                    lines
                        .iter()
                        .filter_map(Value::as_u64)
                        .map(|l| l as u32)
                        .collect()
                });
        let executable = match (executable, stat) {
            (Some(lines), Some(stat)) => {
                known.insert(root, name, stat, &lines);
                Some(lines)
            }
            (Some(lines), None) => Some(lines),
            (None, Some(stat)) => known.get(root, name, stat),
            (None, None) => None,
        };
        let Some(path) = keep(name) else { continue };
        let executable = executable.ok_or_else(|| {
            ReportError(format!(
                "file {name} has no `executable` lines, nor known ones"
            ))
        })?;
        out.executable
            .insert(path.clone(), LineRanges::from_lines(executable));
        let contexts = file
            .get("contexts")
            .and_then(Value::as_object)
            .ok_or_else(|| ReportError(format!("file {name} has no `contexts`")))?;
        let mut per_test: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        let mut imported: Vec<u32> = Vec::new();
        for (context, lines) in contexts {
            let into = match test_of_context(context) {
                Some(test) => per_test.entry(test).or_default(),
                None if context.is_empty() => &mut imported,
                None => continue,
            };
            let lines = lines.as_array().ok_or_else(|| {
                ReportError(format!("file {name}: context {context} holds no lines"))
            })?;
            // coverage.py records line 0 for a module whose code starts running in a test (the
            // module is first imported there): no line of the file, and not a valid range.
            into.extend(
                lines
                    .iter()
                    .filter_map(Value::as_u64)
                    .filter(|&l| l > 0)
                    .map(|l| l as u32),
            );
        }
        if !imported.is_empty() {
            out.imported
                .insert(path.clone(), LineRanges::from_lines(imported));
        }
        for (test, lines) in per_test {
            out.by_test
                .entry(test.to_string())
                .or_default()
                .insert(path.clone(), LineRanges::from_lines(lines));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_fold_phases_and_parameters() {
        assert_eq!(
            test_of_context("tests/t.py::test_a|run"),
            Some("tests/t.py::test_a")
        );
        assert_eq!(
            test_of_context("tests/t.py::C::test_a[x|y]|test"),
            Some("tests/t.py::C::test_a")
        );
        assert_eq!(
            test_of_context("tests/t.py::C::test_b[1-x]|setup"),
            Some("tests/t.py::C::test_b")
        );
        assert_eq!(
            test_of_context("tests/t.py::test_c[a::b|c]|teardown"),
            Some("tests/t.py::test_c")
        );
        assert_eq!(test_of_context(""), None);
        assert_eq!(test_of_context("|run"), None);
    }

    #[test]
    fn parses_a_report() {
        let json = br#"{"files": {
            "src/pkg/m.py": {"executable": [1, 2, 5, 6, 8], "contexts": {"": [1, 2],
                "tests/t.py::test_a|run": [0, 5], "tests/t.py::test_b[x]|run": [5],
                "tests/t.py::test_b[y]|setup": [6]}},
            "tests/t.py": {"executable": [1], "contexts": {"": [1]}}}}"#;
        let known = KnownStatements::default();
        let root = Path::new("/r");
        let cov = parse(
            json,
            |p| p.starts_with("src/").then(|| p.to_string()),
            &known,
            root,
        )
        .unwrap();
        assert_eq!(
            cov.executable["src/pkg/m.py"].ranges(),
            &[[1, 2], [5, 6], [8, 8]]
        );
        assert!(!cov.executable.contains_key("tests/t.py"));
        // The empty context is what ran before the first test, apart from every test's.
        assert_eq!(cov.imported["src/pkg/m.py"].ranges(), &[[1, 2]]);
        assert_eq!(cov.imported.len(), 1);
        assert_eq!(cov.by_test.len(), 2);
        assert_eq!(
            cov.by_test["tests/t.py::test_a"]["src/pkg/m.py"].ranges(),
            &[[5, 5]]
        );
        assert_eq!(
            cov.by_test["tests/t.py::test_b"]["src/pkg/m.py"].ranges(),
            &[[5, 6]]
        );
        assert!(parse(b"{}", |p| Some(p.to_string()), &known, root).is_err());
        let no_contexts = br#"{"files": {"m.py": {"executable": [1]}}}"#;
        let err = parse(no_contexts, |p| Some(p.to_string()), &known, root)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `contexts`"), "{err}");
    }

    #[test]
    fn executable_lines_reported_once_are_known_while_the_file_is_unchanged() {
        let known = KnownStatements::default();
        let (root, other) = (Path::new("/r"), Path::new("/other"));
        let keep = |p: &str| Some(p.to_string());
        let first = br#"{"files": {"m.py": {"stat": [10, 7], "executable": [1, 2, 3],
            "contexts": {"t.py::test_a|test": [2]}}}}"#;
        let first = parse(first, keep, &known, root).unwrap();
        assert_eq!(known.listing(root), r#"{"m.py":[10,7]}"#);
        assert_eq!(known.listing(other), "{}");
        let later = br#"{"files": {"m.py": {"stat": [10, 7],
            "contexts": {"t.py::test_b|test": [3]}}}}"#;
        let later = parse(later, keep, &known, root).unwrap();
        assert_eq!(later.executable, first.executable);
        // Another repository's file of the same name, or the file changed since: not known.
        for (root, stat) in [(other, "[10, 7]"), (root, "[11, 7]"), (root, "[10, 8]")] {
            let json = format!(
                r#"{{"files": {{"m.py": {{"stat": {stat}, "contexts": {{"t.py::test_b|test": [3]}}}}}}}}"#
            );
            let err = parse(json.as_bytes(), keep, &known, root).unwrap_err();
            assert!(err.to_string().contains("nor known ones"), "{err}");
        }
    }
}
