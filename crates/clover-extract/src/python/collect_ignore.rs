//! The test files a `conftest.py` tells pytest never to collect.
//!
//! pytest reads `collect_ignore` (paths) and `collect_ignore_glob` (fnmatch patterns) from
//! every `conftest.py`, relative to that conftest's folder. A file it never collects would
//! become problems that cannot run, so extraction leaves it out and says which conftest did.
//! Only what can be read without running the conftest counts: module-level assignments (`=`,
//! `+=`) of list or tuple literals of strings. A name changed under a condition
//! (`if sys.version_info < ...: collect_ignore.append(...)`) is left alone: the condition
//! decides on the machine that runs the tests, not here.

use std::collections::HashMap;
use std::path::Path;

use globset::GlobBuilder;

use super::parse;
use super::units::Src;

/// What one conftest ignores, relative to the repository root.
#[derive(Debug, Default)]
struct Ignores {
    paths: Vec<String>,
    globs: Vec<globset::GlobMatcher>,
}

/// For each test file (relative, `/`-separated) that a conftest's `collect_ignore` or
/// `collect_ignore_glob` covers, the conftest's path; the others are not in the map.
pub(crate) fn collect_ignored(root: &Path, files: &[String]) -> HashMap<String, String> {
    let mut conftests: HashMap<String, Option<Ignores>> = HashMap::new();
    let mut out = HashMap::new();
    for file in files {
        // Every folder from the file's own up to the root may hold a conftest.
        let mut dir = file.rsplit_once('/').map_or("", |(d, _)| d);
        loop {
            let conftest = if dir.is_empty() {
                "conftest.py".to_string()
            } else {
                format!("{dir}/conftest.py")
            };
            let ignores = conftests
                .entry(conftest.clone())
                .or_insert_with(|| read(root, dir, &conftest));
            if ignores.as_ref().is_some_and(|i| covers(i, file)) {
                out.insert(file.clone(), conftest);
                break;
            }
            if dir.is_empty() {
                break;
            }
            dir = dir.rsplit_once('/').map_or("", |(d, _)| d);
        }
    }
    out
}

fn covers(i: &Ignores, file: &str) -> bool {
    i.paths
        .iter()
        .any(|p| file == p || file.starts_with(&format!("{p}/")))
        || i.globs.iter().any(|g| g.is_match(file))
}

/// The ignores of the conftest at `rel` (in folder `dir`), or `None` when there is none.
fn read(root: &Path, dir: &str, rel: &str) -> Option<Ignores> {
    let text = std::fs::read_to_string(root.join(rel)).ok()?;
    let tree = parse(&text)?;
    let src = Src::new(&text);
    let join = |p: &str| -> String {
        let p = p.trim_start_matches("./").trim_end_matches('/');
        if dir.is_empty() {
            p.to_string()
        } else {
            format!("{dir}/{p}")
        }
    };
    let mut ignores = Ignores::default();
    let module = tree.root_node();
    let mut c = module.walk();
    for stmt in module.named_children(&mut c) {
        let Some(assign) = stmt
            .named_child(0)
            .filter(|_| stmt.kind() == "expression_statement")
            .filter(|a| matches!(a.kind(), "assignment" | "augmented_assignment"))
        else {
            continue;
        };
        let (Some(left), Some(right)) = (
            assign.child_by_field_name("left"),
            assign.child_by_field_name("right"),
        ) else {
            continue;
        };
        let name = src.node_text(left);
        if !matches!(name, "collect_ignore" | "collect_ignore_glob")
            || !matches!(right.kind(), "list" | "tuple")
        {
            continue;
        }
        let mut c2 = right.walk();
        let items: Vec<String> = right
            .named_children(&mut c2)
            .filter(|n| n.kind() == "string")
            .filter_map(|n| string_value(src.node_text(n)))
            .collect();
        for item in items {
            if name == "collect_ignore" {
                ignores.paths.push(join(&item));
            } else if let Ok(g) = GlobBuilder::new(&join(&item))
                .literal_separator(false)
                .build()
            {
                // pytest matches with fnmatch, where `*` crosses `/` too.
                ignores.globs.push(g.compile_matcher());
            }
        }
    }
    Some(ignores)
}

/// The value of a plain string literal (`"a.py"`, `'a.py'`, `r"a.py"`); `None` for f-strings
/// and strings with escapes, whose value is not the text.
fn string_value(text: &str) -> Option<String> {
    let text = text.strip_prefix(['r', 'R']).unwrap_or(text);
    let quote = text.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let inner = text.strip_prefix(quote)?.strip_suffix(quote)?;
    (!inner.contains(['\\', quote])).then(|| inner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conftest_ignores_are_relative_to_their_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            "conftest.py",
            "collect_ignore = [\"setup.py\", \"tests/legacy\"]\n",
        );
        write(
            "tests/conftest.py",
            "import sys\ncollect_ignore_glob = ['test_py2_*.py']\ncollect_ignore += (\"test_old.py\",)\nif sys.platform == 'win32':\n    collect_ignore = ['test_a.py']\n",
        );
        let files: Vec<String> = [
            "tests/test_a.py",
            "tests/test_old.py",
            "tests/test_py2_compat.py",
            "tests/legacy/test_b.py",
            "tests/sub/test_c.py",
            "other/test_old.py",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let got = collect_ignored(root, &files);
        let mut got: Vec<(&str, &str)> =
            got.iter().map(|(f, c)| (f.as_str(), c.as_str())).collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("tests/legacy/test_b.py", "conftest.py"),
                ("tests/test_old.py", "tests/conftest.py"),
                ("tests/test_py2_compat.py", "tests/conftest.py"),
            ]
        );
    }
}
