//! Which folders of a Python repository are the distribution's own code.
//!
//! A repository holds more importable folders than the package it ships: `benchmarks/`,
//! `docs/`, `examples/`, `scripts/` with an `__init__.py`. Taking them as sources pads contexts
//! with code no test is about and gives coverage two files of one name. So detection asks,
//! in this order, what the distribution itself says it ships, and stops at the first answer:
//!
//! 1. `*.egg-info/top_level.txt` (at the root or under `src/`): what setuptools really built;
//! 2. `pyproject.toml`: `[tool.setuptools]` `packages`/`py-modules`/`package-dir`,
//!    `[tool.setuptools.packages.find]` `where`, `[tool.hatch.build.targets.wheel]` `packages`,
//!    `[tool.poetry]` `packages`, `[tool.flit.module]` `name`;
//! 3. `setup.cfg`: `[options]` `packages`/`py_modules`/`package_dir`,
//!    `[options.packages.find]` `where`;
//! 4. `setup.py`, read as text and never run: `packages=[...]`, `py_modules=[...]`,
//!    `package_dir={"": "src"}`, `find_packages("src")`;
//! 5. every package under `src/` (the src layout ships all of them);
//! 6. the project's name (`[project]`, `[tool.poetry]`, `[metadata]`, `setup(name=...)`):
//!    the folder or module named like it (`-`, `_`, `.` and case do not count);
//! 7. every package at the root, else the root's modules, else the root itself.
//!
//! Steps 5 and 7 leave out the folders setuptools' own discovery leaves out (`benchmarks`,
//! `docs`, `examples`, `scripts`, `tools`, test folders…): a repository that ships one of them
//! says so in its metadata, or names it in `clover.toml`.

use std::path::{Path, PathBuf};

/// Top-level folder names that are never a distribution's package unless its metadata or
/// `clover.toml` names them: setuptools' `FlatLayoutPackageFinder.DEFAULT_EXCLUDE`, plus
/// `testing`.
pub const NON_PACKAGE_DIRS: &[&str] = &[
    "benchmark",
    "benchmarks",
    "bin",
    "build",
    "changelog",
    "ci",
    "debian",
    "dist",
    "doc",
    "docs",
    "documentation",
    "env",
    "example",
    "examples",
    "exercise",
    "exercises",
    "fabfile",
    "htmlcov",
    "manpages",
    "news",
    "newsfragments",
    "python",
    "requirements",
    "scripts",
    "site_scons",
    "tasks",
    "test",
    "testing",
    "tests",
    "tools",
    "unit_test",
    "unit_tests",
    "util",
    "utils",
    "venv",
];

/// The source folders (and modules) found, and the sentence saying why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sources {
    pub dirs: Vec<PathBuf>,
    pub why: String,
}

/// What the packaging files declare, before it is looked up on disk.
#[derive(Debug, Default)]
struct Declared {
    /// Dotted package or module names (`pkg`, `pkg.sub`), relative to `base`.
    names: Vec<String>,
    /// Paths relative to the root (hatch and poetry name folders, not packages).
    paths: Vec<PathBuf>,
    /// The folder packages live in (`package-dir = {"" = "src"}`), relative to the root.
    base: Option<PathBuf>,
    /// `find` roots: every package under them is shipped.
    find_where: Vec<PathBuf>,
    /// The project's name, as written.
    project: Option<String>,
    /// Where the answer came from, for the explanation.
    origin: String,
}

pub(crate) fn python_sources(root: &Path) -> Sources {
    let mut chosen = choose(root);
    // Say which importable folders were passed over, so a user who wants one knows the key.
    let mut left_out: Vec<String> = Vec::new();
    for base in [Path::new(""), Path::new("src")] {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(root.join(base))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().join("__init__.py").is_file())
            .map(|e| base.join(e.file_name()))
            .collect();
        entries.sort();
        for dir in entries {
            let name = dir.file_name().unwrap_or_default().to_string_lossy();
            let is_test = ["tests", "test", "testing"].contains(&name.as_ref());
            if !is_test && !name.starts_with('.') && !chosen.dirs.iter().any(|c| dir.starts_with(c))
            {
                left_out.push(dir.display().to_string());
            }
        }
    }
    if !left_out.is_empty() {
        chosen.why.push_str(&format!(
            "; left out [{}]: not the distribution's (name them in clover.toml source_dirs to \
             include them)",
            left_out.join(", ")
        ));
    }
    chosen
}

fn choose(root: &Path) -> Sources {
    if let Some(s) = egg_info(root) {
        return s;
    }
    let mut project: Option<(String, String)> = None;
    for declared in [pyproject(root), setup_cfg(root), setup_py(root)]
        .into_iter()
        .flatten()
    {
        if let Some(s) = resolve_declared(root, &declared) {
            return s;
        }
        if project.is_none() {
            project = declared.project.map(|p| (p, declared.origin));
        }
    }
    // Everything under `src/` is shipped by convention (setuptools' src-layout discovery), so
    // two packages there (`src/attr`, `src/attrs`) are both the distribution's.
    let src = packages_in(root, Path::new("src"));
    if !src.is_empty() {
        return Sources {
            dirs: src,
            why: "the packages under src/".into(),
        };
    }
    if let Some((name, origin)) = project {
        if let Some(found) = named_like(root, &name) {
            return Sources {
                why: format!("the folder named like the project `{name}` ({origin})"),
                dirs: vec![found],
            };
        }
    }
    fallback(root)
}

/// The packages setuptools recorded when it built the distribution.
fn egg_info(root: &Path) -> Option<Sources> {
    for base in [PathBuf::new(), PathBuf::from("src")] {
        let mut infos: Vec<PathBuf> = std::fs::read_dir(root.join(&base))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "egg-info") && p.join("top_level.txt").is_file()
            })
            .collect();
        infos.sort();
        for info in infos {
            let text = std::fs::read_to_string(info.join("top_level.txt")).unwrap_or_default();
            let names: Vec<String> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            let dirs = locate(root, &[base.clone(), PathBuf::new()], &names);
            if !dirs.is_empty() {
                let rel = info
                    .strip_prefix(root)
                    .unwrap_or(&info)
                    .display()
                    .to_string();
                return Some(Sources {
                    dirs,
                    why: format!("the packages {rel}/top_level.txt lists"),
                });
            }
        }
    }
    None
}

/// Finds each top-level name (`pkg` of `pkg.sub`) as a folder or a module under the first of
/// `bases` that has it. Names found nowhere are left out.
fn locate(root: &Path, bases: &[PathBuf], names: &[String]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for name in names {
        let top = name.split('.').next().unwrap_or(name).trim();
        if top.is_empty() {
            continue;
        }
        let found = bases.iter().find_map(|b| {
            let dir = b.join(top);
            let module = b.join(format!("{top}.py"));
            if root.join(&dir).is_dir() {
                Some(dir)
            } else if root.join(&module).is_file() {
                Some(module)
            } else {
                None
            }
        });
        if let Some(f) = found {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

fn resolve_declared(root: &Path, d: &Declared) -> Option<Sources> {
    let base = d.base.clone().unwrap_or_default();
    let mut dirs = locate(root, std::slice::from_ref(&base), &d.names);
    for p in &d.paths {
        if root.join(p).exists() && !dirs.contains(p) {
            dirs.push(p.clone());
        }
    }
    let mut what = "packages";
    if dirs.is_empty() && !d.find_where.is_empty() {
        what = "packages found under the `where` folders of";
        for w in &d.find_where {
            dirs.extend(packages_in(root, w));
        }
    }
    dirs.sort();
    dirs.dedup();
    (!dirs.is_empty()).then(|| Sources {
        dirs,
        why: format!("the {what} {}", d.origin),
    })
}

/// The folder or module named like the project, under `src/` or at the root.
fn named_like(root: &Path, project: &str) -> Option<PathBuf> {
    let want = normalize_name(project);
    for base in [PathBuf::from("src"), PathBuf::new()] {
        let mut entries: Vec<(String, bool)> = std::fs::read_dir(root.join(&base))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let is_dir = e.file_type().ok()?.is_dir();
                Some((name, is_dir))
            })
            .collect();
        entries.sort();
        for (name, is_dir) in entries {
            let stem = if is_dir {
                name.as_str()
            } else {
                match name.strip_suffix(".py") {
                    Some(s) => s,
                    None => continue,
                }
            };
            if normalize_name(stem) == want && !name.starts_with('.') {
                return Some(base.join(name));
            }
        }
    }
    None
}

/// A project or folder name compared the way PEP 503 compares distribution names.
fn normalize_name(name: &str) -> String {
    name.trim().to_lowercase().replace(['-', '.'], "_")
}

/// Packages (folders with `__init__.py`) directly under `dir`, leaving out [`NON_PACKAGE_DIRS`].
fn packages_in(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("__init__.py").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && !NON_PACKAGE_DIRS.contains(&n.as_str()))
        .map(|n| dir.join(n))
        .collect();
    found.sort();
    found
}

/// No packaging file answered and there is no `src/` package: the root's packages, else its
/// modules (a one-module distribution such as six), else the root.
fn fallback(root: &Path) -> Sources {
    let top = packages_in(root, Path::new(""));
    if !top.is_empty() {
        return Sources {
            dirs: top,
            why: "the packages at the root (no packaging file names them)".into(),
        };
    }
    let mut modules: Vec<PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.ends_with(".py")
                && !n.starts_with("test_")
                && !n.ends_with("_test.py")
                && !["setup.py", "conftest.py", "noxfile.py"].contains(&n.as_str())
        })
        .map(PathBuf::from)
        .collect();
    modules.sort();
    if modules.is_empty() {
        Sources {
            dirs: vec![PathBuf::from(".")],
            why: "the whole repository (no package or module found)".into(),
        }
    } else {
        Sources {
            dirs: modules,
            why: "the modules at the root (no package found)".into(),
        }
    }
}

fn strings(v: Option<&toml::Value>) -> Vec<String> {
    v.and_then(toml::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn pyproject(root: &Path) -> Option<Declared> {
    let text = std::fs::read_to_string(root.join("pyproject.toml")).ok()?;
    let doc: toml::Table = toml::from_str(&text).ok()?;
    let get = |path: &[&str]| -> Option<&toml::Value> {
        let mut v = doc.get(path[0])?;
        for k in &path[1..] {
            v = v.get(k)?;
        }
        Some(v)
    };
    let mut d = Declared {
        project: get(&["project", "name"])
            .or_else(|| get(&["tool", "poetry", "name"]))
            .and_then(|v| v.as_str())
            .map(str::to_string),
        ..Declared::default()
    };
    if let Some(dir) = get(&["tool", "setuptools", "package-dir", ""]).and_then(|v| v.as_str()) {
        d.base = Some(PathBuf::from(dir));
    }
    let setuptools_packages = get(&["tool", "setuptools", "packages"]);
    if let Some(find) = setuptools_packages.and_then(|p| p.get("find")) {
        d.find_where = strings(find.get("where"))
            .into_iter()
            .map(PathBuf::from)
            .collect();
        if d.find_where.is_empty() {
            d.find_where.push(d.base.clone().unwrap_or_default());
        }
        d.origin = "pyproject.toml [tool.setuptools.packages.find]".into();
        return Some(d);
    }
    let mut names = strings(setuptools_packages);
    names.extend(strings(get(&["tool", "setuptools", "py-modules"])));
    if !names.is_empty() {
        d.names = names;
        d.origin = "pyproject.toml [tool.setuptools] lists".into();
        return Some(d);
    }
    let hatch = strings(get(&[
        "tool", "hatch", "build", "targets", "wheel", "packages",
    ]));
    if !hatch.is_empty() {
        d.paths = hatch.into_iter().map(PathBuf::from).collect();
        d.origin = "pyproject.toml [tool.hatch.build.targets.wheel] lists".into();
        return Some(d);
    }
    if let Some(poetry) = get(&["tool", "poetry", "packages"]).and_then(|v| v.as_array()) {
        d.paths = poetry
            .iter()
            .filter_map(|p| {
                let include = p.get("include")?.as_str()?;
                let from = p.get("from").and_then(|f| f.as_str()).unwrap_or("");
                Some(Path::new(from).join(include))
            })
            .collect();
        d.origin = "pyproject.toml [tool.poetry] packages lists".into();
        return Some(d);
    }
    if let Some(module) = get(&["tool", "flit", "module", "name"]).and_then(|v| v.as_str()) {
        // flit ships the one module it names, from `src/` or the root.
        if let Some(found) = named_like(root, module) {
            d.paths = vec![found];
            d.origin = "pyproject.toml [tool.flit.module] names".into();
            return Some(d);
        }
    }
    d.origin = "pyproject.toml [project] name".into();
    Some(d)
}

/// `setup.cfg`, read as INI: `[section]` headers, `key = value` with indented continuation
/// lines.
fn setup_cfg(root: &Path) -> Option<Declared> {
    let text = std::fs::read_to_string(root.join("setup.cfg")).ok()?;
    let mut section = String::new();
    let mut entries: Vec<(String, String, String)> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        if trimmed.starts_with('[') && trimmed.ends_with(']') {
            section = trimmed[1..trimmed.len() - 1].trim().to_string();
        } else if line.starts_with([' ', '\t']) {
            if let Some(last) = entries.last_mut() {
                last.2.push('\n');
                last.2.push_str(trimmed);
            }
        } else if let Some((k, v)) = trimmed.split_once(['=', ':']) {
            entries.push((section.clone(), k.trim().to_string(), v.trim().to_string()));
        }
    }
    let value = |s: &str, k: &str| {
        entries
            .iter()
            .find(|(es, ek, _)| es == s && ek == k)
            .map(|(_, _, v)| v.as_str())
    };
    let list = |v: Option<&str>| -> Vec<String> {
        v.unwrap_or("")
            .split(['\n', ','])
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut d = Declared {
        project: value("metadata", "name").map(str::to_string),
        origin: "setup.cfg [options]".into(),
        ..Declared::default()
    };
    // `package_dir = =src`, or one `=src` line under it.
    for entry in list(value("options", "package_dir")) {
        if let Some(dir) = entry.strip_prefix('=') {
            d.base = Some(PathBuf::from(dir.trim()));
        }
    }
    let packages = list(value("options", "packages"));
    if packages.iter().any(|p| p.starts_with("find")) {
        d.find_where = list(value("options.packages.find", "where"))
            .into_iter()
            .map(PathBuf::from)
            .collect();
        if d.find_where.is_empty() {
            d.find_where.push(d.base.clone().unwrap_or_default());
        }
        d.origin = "setup.cfg [options] packages = find:".into();
    } else {
        d.names = packages;
        d.names.extend(list(value("options", "py_modules")));
    }
    if d.project.is_some() && d.names.is_empty() && d.find_where.is_empty() {
        d.origin = "setup.cfg [metadata] name".into();
    }
    Some(d)
}

/// `setup.py`, scanned as text for literal keyword arguments; never executed.
fn setup_py(root: &Path) -> Option<Declared> {
    let text = std::fs::read_to_string(root.join("setup.py")).ok()?;
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let mut d = Declared {
        project: keyword(&compact, "name").and_then(|v| string_literals(v).into_iter().next()),
        origin: "setup.py setup(packages=…, py_modules=…)".into(),
        ..Declared::default()
    };
    if let Some(v) = keyword(&compact, "package_dir") {
        // `{"": "src"}`: the first two strings of the dict literal.
        let s = string_literals(v.split('}').next().unwrap_or(""));
        if s.len() >= 2 && s[0].is_empty() {
            d.base = Some(PathBuf::from(&s[1]));
        }
    }
    for key in ["packages", "py_modules"] {
        let Some(v) = keyword(&compact, key) else {
            continue;
        };
        if v.starts_with('[') {
            d.names
                .extend(string_literals(v.split(']').next().unwrap_or("")));
        } else if let Some(args) = v
            .strip_prefix("find_packages(")
            .or_else(|| v.strip_prefix("find_namespace_packages("))
        {
            // `find_packages("src")` or `find_packages(where="src")`; other arguments
            // (`exclude=[...]`) hold strings too, so only a leading one counts.
            let args = args.strip_prefix("where=").unwrap_or(args);
            let first = if args.starts_with(['"', '\'']) {
                string_literals(args).into_iter().next()
            } else {
                None
            };
            d.find_where.push(PathBuf::from(first.unwrap_or_default()));
        }
    }
    if d.names.is_empty() && d.find_where.is_empty() {
        d.origin = "setup.py setup(name=…)".into();
    }
    Some(d)
}

/// The text after `key=` in whitespace-free source, where `key` starts an argument.
fn keyword<'a>(compact: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let mut from = 0;
    while let Some(at) = compact[from..].find(&pat) {
        let at = from + at;
        let before = compact[..at].chars().last();
        if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.')) {
            return Some(&compact[at + pat.len()..]);
        }
        from = at + pat.len();
    }
    None
}

/// The contents of the quoted strings in `text`, in order (no escapes: package names have
/// none).
fn string_literals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(['"', '\'']) {
        let quote = rest.as_bytes()[start] as char;
        let body = &rest[start + 1..];
        let Some(end) = body.find(quote) else { break };
        out.push(body[..end].to_string());
        rest = &body[end + 1..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        dir
    }

    fn dirs(s: &Sources) -> Vec<&str> {
        s.dirs.iter().map(|d| d.to_str().unwrap()).collect()
    }

    /// A web framework with an importable `benchmarks/` beside its package: the benchmarks
    /// padded contexts and gave coverage a second `_utils.py`.
    #[test]
    fn a_benchmarks_package_beside_the_real_one_is_left_out() {
        let files = [
            ("falcon/__init__.py", ""),
            ("falcon/_utils.py", ""),
            ("benchmarks/__init__.py", ""),
            ("benchmarks/_utils.py", ""),
            ("docs/__init__.py", ""),
            ("examples/__init__.py", ""),
            ("tests/__init__.py", ""),
        ];
        // With no packaging file at all, the non-package folders are still left out.
        let s = python_sources(tree(&files).path());
        assert_eq!(dirs(&s), vec!["falcon"], "{}", s.why);
        assert!(
            s.why.ends_with("left out [benchmarks, docs, examples]: not the distribution's (name them in clover.toml source_dirs to include them)"),
            "{}",
            s.why
        );
        // A hatch project names nothing: the folder named like the project is its package.
        let mut with_name = files.to_vec();
        with_name.push((
            "pyproject.toml",
            "[project]\nname = \"Falcon\"\n[build-system]\nbuild-backend = \"hatchling.build\"\n",
        ));
        with_name.push(("helpers/__init__.py", ""));
        let s = python_sources(tree(&with_name).path());
        assert_eq!(dirs(&s), vec!["falcon"]);
        assert!(
            s.why.contains("named like the project `Falcon`"),
            "{}",
            s.why
        );
    }

    /// attrs ships two packages from `src/`; both are the distribution's.
    #[test]
    fn two_packages_of_one_distribution_are_both_sources() {
        let files = [
            ("src/attr/__init__.py", ""),
            ("src/attrs/__init__.py", ""),
            ("bench/__init__.py", ""),
            (
                "pyproject.toml",
                "[project]\nname = \"attrs\"\n\n[tool.hatch.build.targets.wheel]\npackages = [\"src/attr\", \"src/attrs\"]\n",
            ),
        ];
        let s = python_sources(tree(&files).path());
        assert_eq!(dirs(&s), vec!["src/attr", "src/attrs"]);
        assert!(s.why.contains("tool.hatch"), "{}", s.why);
        // Without the list, everything under src/ is still the distribution's, even though
        // one of the two is named like the project.
        let mut unlisted = files[..3].to_vec();
        unlisted.push(("pyproject.toml", "[project]\nname = \"attrs\"\n"));
        let s = python_sources(tree(&unlisted).path());
        assert_eq!(dirs(&s), vec!["src/attr", "src/attrs"]);
    }

    /// A repository's files and the source folders expected from them.
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);

    #[test]
    fn reads_each_packaging_file() {
        let cases: &[Case] = &[
            (
                &[
                    ("toolz/__init__.py", ""),
                    ("tlz/__init__.py", ""),
                    ("bench/__init__.py", ""),
                    ("toolz.egg-info/top_level.txt", "tlz\ntoolz\n"),
                ],
                &["tlz", "toolz"],
            ),
            (
                &[
                    ("lib/pkg/__init__.py", ""),
                    ("pkg2/__init__.py", ""),
                    (
                        "pyproject.toml",
                        "[tool.setuptools]\npackages = [\"pkg\", \"pkg.sub\"]\npackage-dir = {\"\" = \"lib\"}\n",
                    ),
                ],
                &["lib/pkg"],
            ),
            (
                &[
                    ("src/a/__init__.py", ""),
                    ("src/docs/__init__.py", ""),
                    ("other/__init__.py", ""),
                    (
                        "pyproject.toml",
                        "[tool.setuptools.packages.find]\nwhere = [\"src\"]\n",
                    ),
                ],
                &["src/a"],
            ),
            (
                &[
                    ("src/my_pkg/__init__.py", ""),
                    ("scripts/__init__.py", ""),
                    (
                        "pyproject.toml",
                        "[tool.poetry]\nname = \"my-pkg\"\npackages = [{ include = \"my_pkg\", from = \"src\" }]\n",
                    ),
                ],
                &["src/my_pkg"],
            ),
            (
                &[
                    ("src/click/__init__.py", ""),
                    ("pyproject.toml", "[project]\nname = \"click\"\n[tool.flit.module]\nname = \"click\"\n"),
                ],
                &["src/click"],
            ),
            (
                &[
                    ("src/pkg/__init__.py", ""),
                    ("tools/__init__.py", ""),
                    (
                        "setup.cfg",
                        "[metadata]\nname = pkg\n\n[options]\npackage_dir =\n    =src\npackages = find:\n\n[options.packages.find]\nwhere = src\n",
                    ),
                ],
                &["src/pkg"],
            ),
            (
                &[
                    ("six.py", ""),
                    ("test_six.py", ""),
                    ("setup.py", "from setuptools import setup\nsetup(name=\"six\",\n      py_modules=[\"six\"],\n)\n"),
                ],
                &["six.py"],
            ),
            (
                &[
                    ("src/pkg/__init__.py", ""),
                    ("src/pkg/_speedups.py", ""),
                    (
                        "setup.py",
                        "setup(\n    name='pkg',\n    package_dir={'': 'src'},\n    packages=find_packages('src', exclude=['tests']),\n)\n",
                    ),
                ],
                &["src/pkg"],
            ),
            (
                &[
                    ("Flask_Thing.py", ""),
                    ("examples/__init__.py", ""),
                    ("setup.py", "setup(name=\"flask-thing\", version=get_version())\n"),
                ],
                &["Flask_Thing.py"],
            ),
        ];
        for (files, want) in cases {
            let s = python_sources(tree(files).path());
            assert_eq!(&dirs(&s), want, "{files:?}: {}", s.why);
        }
    }
}
