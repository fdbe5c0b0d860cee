//! Where a repository names its test dependencies, found without being told: the places the
//! CLOVER paper's §2.2 searches ("We exhaustively search for txt files, and try to pip install
//! those files … we try to install the package from the current project directory with pip,
//! poetry and tox"), and the ones packaging has gained since (extras, dependency groups, nox).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clover_manifest::PRUNED_DIRS;

/// One place that names dependencies, and how the installer is to be given them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// `requirements`, `extra`, `group`, `tox`, `nox`: [`clover_protocol::DependencySource`]'s
    /// `origin`.
    pub origin: &'static str,
    /// The file, relative to the repository, and the name within it (`pyproject.toml[test]`).
    pub name: String,
    pub install: Install,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Install {
    /// `-r FILE`, with the requirement lines it holds (each tried alone if the file fails).
    File { path: PathBuf, lines: Vec<String> },
    /// The project itself with these extras (`-e .[a,b]`).
    Extras(Vec<String>),
    /// Requirements as written.
    List(Vec<String>),
}

impl Found {
    /// The requirements as a reader would name them.
    pub fn requirements(&self) -> Vec<String> {
        match &self.install {
            Install::File { lines, .. } => lines.clone(),
            Install::Extras(extras) => vec![format!(".[{}]", extras.join(","))],
            Install::List(list) => list.clone(),
        }
    }
}

/// Whether a name of an extra, a group or an environment is about testing: the ones the
/// paper's "significant number of passed test cases" needs, and not docs or lint tooling.
pub fn is_test_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace(['-', '_', '.'], "");
    n.contains("test")
        || n.contains("pytest")
        || matches!(
            n.as_str(),
            "dev" | "develop" | "development" | "ci" | "check"
        )
}

/// The files a repository names its dependencies in, relative to it; their contents decide
/// whether an environment is the same one.
pub const PACKAGING_FILES: &[&str] = &[
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "noxfile.py",
];

/// Every dependency source of the repository at `root`, in the order they are installed.
pub fn dependency_sources(root: &Path) -> Vec<Found> {
    let mut out = Vec::new();
    for path in requirements_files(root) {
        let lines = read_requirement_lines(&root.join(&path));
        out.push(Found {
            origin: "requirements",
            name: path.display().to_string(),
            install: Install::File { path, lines },
        });
    }
    let extras = test_extras(root);
    if !extras.is_empty() {
        out.push(Found {
            origin: "extra",
            name: format!("project[{}]", extras.join(",")),
            install: Install::Extras(extras),
        });
    }
    out.extend(dependency_groups(root));
    out.extend(tox_deps(root));
    out.extend(nox_deps(root));
    out
}

/// Folders whose requirements are their own, not the suite's: an example application's
/// pins (flask's `examples/celery` pins an older flask and werkzeug) or a docs build's.
const ASIDE_DIRS: &[&str] = &[
    "examples",
    "example",
    "docs",
    "doc",
    "benchmarks",
    "demo",
    "demos",
];

/// The requirements files of the repository: `*.txt` files whose name says `requirement`
/// (`requirements.txt`, `requirements-dev.txt`, `test-requirements.txt`), and every `*.txt`
/// in a folder named `requirements` or `reqs`, outside virtual environments, build output,
/// examples and docs ([`ASIDE_DIRS`]);
/// sorted, so that the order is the same on every machine.
pub fn requirements_files(root: &Path) -> Vec<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let in_req_dir = dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| matches!(n, "requirements" | "reqs" | "requirements.d"));
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if depth < 3
                    && !name.starts_with('.')
                    && !PRUNED_DIRS.contains(&name.as_str())
                    && !ASIDE_DIRS.contains(&name.as_str())
                {
                    stack.push((path, depth + 1));
                }
            } else if name.ends_with(".txt")
                && (in_req_dir || name.to_ascii_lowercase().contains("requirement"))
            {
                if let Ok(rel) = path.strip_prefix(root) {
                    out.insert(rel.to_path_buf());
                }
            }
        }
    }
    out.into_iter().collect()
}

/// The requirement lines of a requirements file: no comments, no options, no includes.
pub fn read_requirement_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('-'))
        .map(String::from)
        .collect()
}

fn read_toml(path: &Path) -> Option<toml::Table> {
    toml::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The project's extras whose names are about testing, from `pyproject.toml`
/// (`[project.optional-dependencies]`, poetry's `[tool.poetry.extras]`), `setup.cfg`
/// (`[options.extras_require]`) and a literal `extras_require={…}` in `setup.py`.
pub fn test_extras(root: &Path) -> Vec<String> {
    let mut names = BTreeSet::new();
    if let Some(t) = read_toml(&root.join("pyproject.toml")) {
        let tables = [
            t.get("project")
                .and_then(|p| p.get("optional-dependencies")),
            t.get("tool")
                .and_then(|p| p.get("poetry"))
                .and_then(|p| p.get("extras")),
        ];
        for table in tables.into_iter().flatten() {
            if let Some(table) = table.as_table() {
                names.extend(table.keys().cloned());
            }
        }
    }
    if let Ok(cfg) = std::fs::read_to_string(root.join("setup.cfg")) {
        names.extend(
            ini_section(&cfg, "options.extras_require")
                .into_iter()
                .filter_map(|l| {
                    let (k, _) = l.split_once('=')?;
                    (!l.starts_with([' ', '\t'])).then(|| k.trim().to_string())
                }),
        );
    }
    if let Ok(py) = std::fs::read_to_string(root.join("setup.py")) {
        names.extend(setup_py_extras(&py));
    }
    names.into_iter().filter(|n| is_test_name(n)).collect()
}

/// The keys of a literal `extras_require = {"test": […], …}` (or `extras_require=dict(…)`).
fn setup_py_extras(text: &str) -> Vec<String> {
    let Some(at) = text.find("extras_require") else {
        return Vec::new();
    };
    let rest = &text[at..];
    let Some(open) = rest.find(['{', '(']) else {
        return Vec::new();
    };
    // The literal up to its matching bracket.
    let mut depth = 0i32;
    let mut end = rest.len();
    for (i, c) in rest[open..].char_indices() {
        match c {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    end = open + i;
                    break;
                }
            }
            _ => {}
        }
    }
    let body = &rest[open + 1..end];
    // Keys at the literal's own depth: `"name":` or `name=`.
    let mut keys = Vec::new();
    let mut depth = 0i32;
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => depth -= 1,
            '"' | '\'' if depth == 0 => {
                if let Some(len) = body[i + 1..].find(c) {
                    let key = &body[i + 1..i + 1 + len];
                    let after = body[i + 2 + len..].trim_start();
                    if after.starts_with(':') {
                        keys.push(key.to_string());
                    }
                    while chars.peek().is_some_and(|(j, _)| *j <= i + 1 + len) {
                        chars.next();
                    }
                }
            }
            _ => {}
        }
    }
    keys
}

/// PEP 735 `[dependency-groups]` about testing, each with its `include-group`s expanded.
pub fn dependency_groups(root: &Path) -> Vec<Found> {
    let Some(t) = read_toml(&root.join("pyproject.toml")) else {
        return Vec::new();
    };
    let Some(groups) = t.get("dependency-groups").and_then(|g| g.as_table()) else {
        return Vec::new();
    };
    fn expand(groups: &toml::Table, name: &str, seen: &mut Vec<String>, out: &mut Vec<String>) {
        if seen.iter().any(|s| s == name) {
            return;
        }
        seen.push(name.to_string());
        for item in groups
            .get(name)
            .and_then(|g| g.as_array())
            .into_iter()
            .flatten()
        {
            match item {
                toml::Value::String(req) => out.push(req.clone()),
                toml::Value::Table(inc) => {
                    if let Some(other) = inc.get("include-group").and_then(|v| v.as_str()) {
                        expand(groups, other, seen, out);
                    }
                }
                _ => {}
            }
        }
    }
    groups
        .keys()
        .filter(|k| is_test_name(k))
        .map(|k| {
            let mut list = Vec::new();
            expand(groups, k, &mut Vec::new(), &mut list);
            Found {
                origin: "group",
                name: format!("pyproject.toml[dependency-groups.{k}]"),
                install: Install::List(list),
            }
        })
        .filter(|f| !f.requirements().is_empty())
        .collect()
}

/// The lines of one `[name]` section of an ini file.
fn ini_section<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') && !line.starts_with([' ', '\t']) {
            inside = t[1..t.len() - 1].trim() == name;
            continue;
        }
        if inside && !t.starts_with('#') && !t.starts_with(';') {
            out.push(line);
        }
    }
    out
}

/// The `deps` of tox's `[testenv]` (from `tox.ini`, or the `legacy_tox_ini` of pyproject's
/// `[tool.tox]`): requirement lines, with `-r FILE` read and `{toxinidir}` put in; lines with
/// other substitutions, and the project itself, left to the other sources.
pub fn tox_deps(root: &Path) -> Vec<Found> {
    let (text, file) = match std::fs::read_to_string(root.join("tox.ini")) {
        Ok(t) => (t, "tox.ini"),
        Err(_) => match read_toml(&root.join("pyproject.toml")).and_then(|t| {
            t.get("tool")?
                .get("tox")?
                .get("legacy_tox_ini")?
                .as_str()
                .map(String::from)
        }) {
            Some(t) => (t, "pyproject.toml"),
            None => return Vec::new(),
        },
    };
    let section = ini_section(&text, "testenv");
    let mut deps = Vec::new();
    let mut in_deps = false;
    for line in section {
        let continued = line.starts_with([' ', '\t']);
        let t = line.trim();
        if !continued {
            in_deps = false;
            if let Some((k, v)) = t.split_once('=') {
                if k.trim() == "deps" {
                    in_deps = true;
                    deps.extend(tox_dep(root, v.trim()));
                }
            }
        } else if in_deps {
            deps.extend(tox_dep(root, t));
        }
    }
    if deps.is_empty() {
        return Vec::new();
    }
    vec![Found {
        origin: "tox",
        name: format!("{file}[testenv]"),
        install: Install::List(deps),
    }]
}

fn tox_dep(root: &Path, line: &str) -> Vec<String> {
    // A factor-conditional line (`py310: foo`) is taken for every factor.
    let line = match line.split_once(": ") {
        Some((factors, rest)) if !factors.contains([' ', '=', '<', '>']) => rest.trim(),
        _ => line,
    };
    let line = line.replace("{toxinidir}/", "").replace("{toxinidir}", ".");
    if line.is_empty() || line.contains('{') || line.starts_with('.') || line.starts_with('#') {
        return Vec::new();
    }
    if let Some(file) = line.strip_prefix("-r").map(str::trim) {
        return read_requirement_lines(&root.join(file));
    }
    if line.starts_with('-') {
        return Vec::new();
    }
    vec![line]
}

/// The string literals of every `session.install(…)` in `noxfile.py` that are requirements
/// (`-r FILE` read, the project itself and other options left out).
pub fn nox_deps(root: &Path) -> Vec<Found> {
    let Ok(text) = std::fs::read_to_string(root.join("noxfile.py")) else {
        return Vec::new();
    };
    let mut deps = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("session.install(") {
        rest = &rest[at + "session.install(".len()..];
        let call = &rest[..rest.find(')').unwrap_or(rest.len())];
        let literals = string_literals(call);
        let mut it = literals.iter();
        while let Some(arg) = it.next() {
            if arg == "-r" {
                if let Some(file) = it.next() {
                    deps.extend(read_requirement_lines(&root.join(file)));
                }
            } else if !arg.starts_with('-') && !arg.starts_with('.') && !arg.is_empty() {
                deps.push(arg.clone());
            }
        }
    }
    if deps.is_empty() {
        return Vec::new();
    }
    deps.dedup();
    vec![Found {
        origin: "nox",
        name: "noxfile.py".into(),
        install: Install::List(deps),
    }]
}

fn string_literals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(['"', '\'']) {
        let q = rest.as_bytes()[start] as char;
        let after = &rest[start + 1..];
        let Some(len) = after.find(q) else { break };
        out.push(after[..len].to_string());
        rest = &after[len + 1..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn every_kind_of_source_is_found_and_only_the_test_ones() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            root,
            "requirements/tests.txt",
            "# pins\npytest-mock==3.14\n-r base.txt\nfreezegun  # time\n",
        );
        write(root, "requirements/base.txt", "idna\n");
        write(root, "dev-requirements.txt", "trustme\n");
        write(root, "docs/notes.txt", "not requirements\n");
        write(root, "examples/app/requirements.txt", "x==0.1\n");
        write(root, ".venv/requirements.txt", "never\n");
        write(
            root,
            "pyproject.toml",
            r#"
[project]
name = "x"
[project.optional-dependencies]
test = ["pytest"]
docs = ["sphinx"]
[dependency-groups]
tests = ["respx", { include-group = "typing" }]
typing = ["mypy"]
lint = ["ruff"]
"#,
        );
        write(
            root,
            "tox.ini",
            "[tox]\nenvlist = py310\n[testenv]\ndeps =\n    -r{toxinidir}/requirements/base.txt\n    py310: anyio\n    {[base]deps}\ncommands = pytest\n[testenv:docs]\ndeps = sphinx\n",
        );
        write(
            root,
            "noxfile.py",
            "import nox\n@nox.session\ndef tests(session):\n    session.install('-e', '.')\n    session.install(\"pytest\", \"uvicorn[standard]\")\n",
        );
        let found = dependency_sources(root);
        let names: Vec<_> = found.iter().map(|f| (f.origin, f.name.as_str())).collect();
        assert_eq!(
            names,
            [
                ("requirements", "dev-requirements.txt"),
                ("requirements", "requirements/base.txt"),
                ("requirements", "requirements/tests.txt"),
                ("extra", "project[test]"),
                ("group", "pyproject.toml[dependency-groups.tests]"),
                ("tox", "tox.ini[testenv]"),
                ("nox", "noxfile.py"),
            ]
        );
        assert_eq!(found[2].requirements(), ["pytest-mock==3.14", "freezegun"]);
        assert_eq!(found[4].requirements(), ["respx", "mypy"]);
        assert_eq!(found[5].requirements(), ["idna", "anyio"]);
        assert_eq!(found[6].requirements(), ["pytest", "uvicorn[standard]"]);
    }

    #[test]
    fn extras_come_from_setup_cfg_and_a_literal_in_setup_py() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "setup.cfg", "[metadata]\nname = y\n[options.extras_require]\ntesting =\n    pytest\nspeedups = cchardet\n");
        write(
            d.path(),
            "setup.py",
            "setup(name='y', extras_require={\n  'tests': ['pytest', 'x[a]'],\n  \"socks\": ['PySocks'],\n  'dev': dict(a=1)},\n)\n",
        );
        assert_eq!(test_extras(d.path()), ["dev", "testing", "tests"]);
    }
}
