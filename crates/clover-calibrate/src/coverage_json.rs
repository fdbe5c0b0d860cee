//! Reads per-test line sets from coverage.py's data.
//!
//! Inside the sandbox, after pytest, [`CONTEXTS_SCRIPT`] reads the coverage data through
//! coverage.py's public API (`CoverageData.contexts_by_lineno`, `Coverage.analysis2`) and
//! writes `{"files": {FILE: {"executable": [LINE…], "contexts": {CONTEXT: [LINE…]}}}}`.
//! coverage.py's own `json --show-contexts` lists every context on every line, again for each
//! function and class region, and grows past 100 MB for a test file of a few hundred tests;
//! this form names each context once per file.
//!
//! pytest-cov's `--cov-context=test` names the context of every line `<node id>|setup`,
//! `<node id>|run` or `<node id>|teardown`. A test's lines are the union over its three
//! phases and, for a parametrized test, over all its parameter sets (`name[a]`, `name[b]`): a
//! problem is the whole parametrized function. Lines run outside any test (imports and module
//! level, during collection) belong to the empty context and are attributed to no test, in
//! every run alike, so one run of many tests and one run per test give the same lines.

use std::collections::BTreeMap;

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
}

/// The report is not what [`CONTEXTS_SCRIPT`] writes.
#[derive(Debug, thiserror::Error)]
#[error("coverage contexts report: {0}")]
pub struct ReportError(String);

/// Run as `python SCRIPT DATA_FILE OUT_JSON` with the repository as working directory.
pub const CONTEXTS_SCRIPT: &str = r#"import json, sys
import coverage

cov = coverage.Coverage(data_file=sys.argv[1])
cov.load()
data = cov.get_data()
files = {}
for name in sorted(data.measured_files()):
    try:
        statements = cov.analysis2(name)[1]
    except Exception:
        continue  # the source is gone or is not Python
    by_context = {}
    for line, contexts in data.contexts_by_lineno(name).items():
        for context in contexts:
            by_context.setdefault(context, []).append(line)
    files[name] = {
        "executable": sorted(statements),
        "contexts": {c: sorted(lines) for c, lines in sorted(by_context.items())},
    }
with open(sys.argv[2], "w") as out:
    json.dump({"files": files}, out)
"#;

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

/// Parses the report, keeping files for which `keep(path)` gives a repository-relative path.
pub fn parse(
    json: &[u8],
    keep: impl Fn(&str) -> Option<String>,
) -> Result<ContextCoverage, ReportError> {
    let value: Value = serde_json::from_slice(json).map_err(|e| ReportError(e.to_string()))?;
    let files = value
        .get("files")
        .and_then(Value::as_object)
        .ok_or_else(|| ReportError("no `files` object".into()))?;
    let mut out = ContextCoverage::default();
    for (name, file) in files {
        let Some(path) = keep(name) else { continue };
        let executable: Vec<u32> = file
            .get("executable")
            .and_then(Value::as_array)
            .ok_or_else(|| ReportError(format!("file {name} has no `executable` lines")))?
            .iter()
            .filter_map(Value::as_u64)
            .map(|l| l as u32)
            .collect();
        out.executable
            .insert(path.clone(), LineRanges::from_lines(executable));
        let contexts = file
            .get("contexts")
            .and_then(Value::as_object)
            .ok_or_else(|| ReportError(format!("file {name} has no `contexts`")))?;
        let mut per_test: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for (context, lines) in contexts {
            let Some(test) = test_of_context(context) else {
                continue;
            };
            let lines = lines.as_array().ok_or_else(|| {
                ReportError(format!("file {name}: context {context} holds no lines"))
            })?;
            per_test
                .entry(test)
                .or_default()
                .extend(lines.iter().filter_map(Value::as_u64).map(|l| l as u32));
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
                "tests/t.py::test_a|run": [5], "tests/t.py::test_b[x]|run": [5],
                "tests/t.py::test_b[y]|setup": [6]}},
            "tests/t.py": {"executable": [1], "contexts": {"": [1]}}}}"#;
        let cov = parse(json, |p| p.starts_with("src/").then(|| p.to_string())).unwrap();
        assert_eq!(
            cov.executable["src/pkg/m.py"].ranges(),
            &[[1, 2], [5, 6], [8, 8]]
        );
        assert!(!cov.executable.contains_key("tests/t.py"));
        assert_eq!(cov.by_test.len(), 2);
        assert_eq!(
            cov.by_test["tests/t.py::test_a"]["src/pkg/m.py"].ranges(),
            &[[5, 5]]
        );
        assert_eq!(
            cov.by_test["tests/t.py::test_b"]["src/pkg/m.py"].ranges(),
            &[[5, 6]]
        );
        assert!(parse(b"{}", |p| Some(p.to_string())).is_err());
        let no_contexts = br#"{"files": {"m.py": {"executable": [1]}}}"#;
        let err = parse(no_contexts, |p| Some(p.to_string()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `contexts`"), "{err}");
    }
}
