//! The repository manifest, `clover.toml`, and what `--repo DIR` detects without one.
//!
//! A manifest names each repository a dataset is built from and says how to run its tests:
//!
//! ```toml
//! [[repo]]
//! name = "pyfix"
//! path = "."                      # relative to the manifest's folder
//! language = "python"             # python | cpp
//! source_dirs = ["src/ledger"]    # the repository's own code (files or folders)
//! test_dirs = ["tests"]
//! test_globs = ["test_*.py", "*_test.py"]
//! excludes = ["tests/slow/**", "benchmarks"]   # see PathGlobs: a name, or a path with `/`
//! deselect = ["tests/test_net.py::test_download"]  # pytest node ids (or a file, a class) never made problems
//! python = ".venv/bin/python"     # relative to the repository, or absolute
//! timeout_secs = 60
//! memory_mb = 2048
//! cpus = 1.0                      # CPU share of one run, in cores (0: no cap)
//!
//! [repo.env]
//! LEDGER_STRICT = "1"
//! ```
//!
//! C++ repositories add `include_dirs`, `cxx`, `cxxflags`, `link` (library names without
//! `-l`) and `pair_by_includes` (default `true`: a test no base name pairs is paired through
//! the headers it includes; `false` keeps CPP-UT-Bench's base-name rule alone). Unknown keys are errors, so a typo never silently falls back to a default.
//!
//! Left out, `source_dirs` and `test_dirs` are detected ([`RepoConfig::detect`]): for Python
//! the distribution's own packages, from its packaging files when they say.
//!
//! There is no `setup` key: every stage runs in a throwaway view of the repository without
//! network, so a command run there could neither install nor leave a file behind. Prepare a
//! repository (install it, generate headers) before clover reads it.
//!
//! This crate only reads and checks configuration; it runs nothing and installs nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clover_protocol::Language;
use serde::Deserialize;

mod globs;
mod python_layout;

pub use globs::{GlobError, PathGlobs};
pub use python_layout::NON_PACKAGE_DIRS;

/// The test-file globs used when a repository names none.
pub const DEFAULT_PYTHON_TEST_GLOBS: &[&str] = &["test_*.py", "*_test.py"];
/// The test-file globs for C++ repositories.
pub const DEFAULT_CPP_TEST_GLOBS: &[&str] =
    &["*_test.cc", "*_unittest.cc", "*_test.cpp", "*_unittest.cpp"];

/// Folders never searched for tests or sources: virtual environments, caches, build output.
pub const PRUNED_DIRS: &[&str] = &[
    ".venv",
    "venv",
    "site-packages",
    "node_modules",
    "__pycache__",
    "build",
    "dist",
    ".tox",
    ".nox",
    ".git",
    ".hg",
    ".eggs",
    "target",
];

/// A manifest could not be read or is not valid.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read manifest {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid manifest {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: repository `{name}`: {message}")]
    Invalid {
        path: PathBuf,
        name: String,
        message: String,
    },
    #[error("no repository named `{name}` in {path}; it has: {known}")]
    UnknownRepo {
        path: PathBuf,
        name: String,
        known: String,
    },
    #[error("cannot detect a repository at {dir}: {message}")]
    Detect { dir: PathBuf, message: String },
}

/// A whole manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The file it was read from.
    pub path: PathBuf,
    pub repos: Vec<RepoConfig>,
}

/// Everything clover needs to know about one repository.
#[derive(Debug, Clone, PartialEq)]
pub struct RepoConfig {
    pub name: String,
    /// The repository's root, absolute.
    pub root: PathBuf,
    pub language: Language,
    /// Relative to `root`.
    pub source_dirs: Vec<PathBuf>,
    /// Relative to `root`.
    pub test_dirs: Vec<PathBuf>,
    pub test_globs: Vec<String>,
    pub excludes: Vec<String>,
    /// Python tests never made problems: pytest node ids relative to `root` (`path::test`,
    /// `path::Class::test`), or a class or a file, which deselects every test in it — as
    /// `pytest --deselect` takes them. For tests that cannot pass here (network, a server)
    /// or take minutes; a recipe says why each is deselected.
    pub deselect: Vec<String>,
    /// The Python interpreter, absolute; `None` means `python3` from `PATH`.
    pub python: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
    /// Relative to `root`.
    pub include_dirs: Vec<PathBuf>,
    pub cxx: String,
    pub cxxflags: Vec<String>,
    pub link: Vec<String>,
    /// C++: pair a test no base name pairs through the headers it includes (clover's
    /// extension); `false` keeps CPP-UT-Bench's base-name rule alone.
    pub pair_by_includes: bool,
    pub timeout_secs: u64,
    pub memory_mb: u64,
    pub pids: u64,
    /// CPU share of one run, in cores (a run's busy threads never take more); 0: no cap.
    pub cpus: f64,
    /// Where `source_dirs` and `test_dirs` came from (the manifest, or which detection rule),
    /// one sentence each: what `clover extract --explain` prints.
    pub explanation: Vec<String>,
    /// What the codebase is for, in a few words (`domain = "key-value storage"`): the domain
    /// column of CPP-UT-Bench's Table 1, which `clover score --tables paper` prints. Only a
    /// manifest says it; detection leaves it unset.
    pub domain: Option<String>,
}

/// Defaults for limits when a manifest names none.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
pub const DEFAULT_MEMORY_MB: u64 = 2048;
pub const DEFAULT_PIDS: u64 = 256;
/// One core per run: with `--jobs` runs at once, a busy-looping candidate cannot take the
/// others' cores.
pub const DEFAULT_CPUS: f64 = 1.0;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    #[serde(default)]
    repo: Vec<RawRepo>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRepo {
    name: String,
    #[serde(default = "dot")]
    path: PathBuf,
    language: Option<Language>,
    source_dirs: Option<Vec<PathBuf>>,
    test_dirs: Option<Vec<PathBuf>>,
    test_globs: Option<Vec<String>>,
    #[serde(default)]
    excludes: Vec<String>,
    #[serde(default)]
    deselect: Vec<String>,
    python: Option<PathBuf>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    include_dirs: Option<Vec<PathBuf>>,
    cxx: Option<String>,
    #[serde(default)]
    cxxflags: Vec<String>,
    #[serde(default)]
    link: Vec<String>,
    pair_by_includes: Option<bool>,
    timeout_secs: Option<u64>,
    memory_mb: Option<u64>,
    pids: Option<u64>,
    cpus: Option<f64>,
    domain: Option<String>,
}

fn dot() -> PathBuf {
    PathBuf::from(".")
}

impl Manifest {
    /// Reads and checks a manifest file.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Manifest::parse(&text, path)
    }

    /// Parses manifest text; `path` resolves relative repository paths and names the file in
    /// errors.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let raw: RawManifest = toml::from_str(text).map_err(|e| ManifestError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        if raw.repo.is_empty() {
            return Err(ManifestError::Parse {
                path: path.to_path_buf(),
                message: "no [[repo]] table: add one per repository".into(),
            });
        }
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
        let mut repos: Vec<RepoConfig> = Vec::new();
        for r in raw.repo {
            let invalid = |message: String| ManifestError::Invalid {
                path: path.to_path_buf(),
                name: r.name.clone(),
                message,
            };
            if r.name.is_empty() || r.name.contains(['/', ' ', ':', '@']) {
                return Err(invalid(
                    "a name must be non-empty and hold no '/', ':', '@' or spaces".into(),
                ));
            }
            if repos.iter().any(|x| x.name == r.name) {
                return Err(invalid("the name is used twice".into()));
            }
            let root = normalize(&base.join(&r.path));
            let detected = detect_layout(&root, r.language).map_err(&invalid)?;
            for (what, dirs) in [("source_dirs", &r.source_dirs), ("test_dirs", &r.test_dirs)] {
                for d in dirs.iter().flatten() {
                    if d.is_absolute()
                        || d.components().any(|c| c == std::path::Component::ParentDir)
                    {
                        return Err(invalid(format!(
                            "{what} entry {} must be relative to the repository and stay inside it",
                            d.display()
                        )));
                    }
                }
            }
            if r.timeout_secs == Some(0) || r.memory_mb == Some(0) || r.pids == Some(0) {
                return Err(invalid(
                    "timeout_secs, memory_mb and pids must be at least 1".into(),
                ));
            }
            if r.cpus.is_some_and(|c| !(c.is_finite() && c >= 0.0)) {
                return Err(invalid(
                    "cpus must be a number of cores, 0 or more (0: no cap)".into(),
                ));
            }
            let mut explanation = detected.why;
            if let Some(dirs) = &r.source_dirs {
                explanation[0] = format!("source_dirs = {}: from {}", list(dirs), path.display());
            }
            if let Some(dirs) = &r.test_dirs {
                explanation[1] = format!("test_dirs = {}: from {}", list(dirs), path.display());
            }
            repos.push(RepoConfig {
                explanation,
                name: r.name.clone(),
                python: r.python.map(|p| root.join(p)).or(detected.python),
                source_dirs: r.source_dirs.unwrap_or(detected.source_dirs),
                test_dirs: r.test_dirs.unwrap_or(detected.test_dirs),
                test_globs: r
                    .test_globs
                    .unwrap_or_else(|| default_globs(detected.language)),
                include_dirs: r.include_dirs.unwrap_or(detected.include_dirs),
                language: detected.language,
                excludes: r.excludes,
                deselect: r.deselect,
                env: r.env,
                cxx: r.cxx.unwrap_or_else(|| "g++".into()),
                cxxflags: r.cxxflags,
                link: r.link,
                pair_by_includes: r.pair_by_includes.unwrap_or(true),
                timeout_secs: r.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS),
                memory_mb: r.memory_mb.unwrap_or(DEFAULT_MEMORY_MB),
                pids: r.pids.unwrap_or(DEFAULT_PIDS),
                cpus: r.cpus.unwrap_or(DEFAULT_CPUS),
                domain: r.domain.filter(|d| !d.trim().is_empty()),
                root,
            });
        }
        Ok(Manifest {
            path: path.to_path_buf(),
            repos,
        })
    }

    /// The repository with this name.
    pub fn repo(&self, name: &str) -> Result<&RepoConfig, ManifestError> {
        self.repos
            .iter()
            .find(|r| r.name == name)
            .ok_or_else(|| ManifestError::UnknownRepo {
                path: self.path.clone(),
                name: name.to_string(),
                known: self
                    .repos
                    .iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

fn default_globs(language: Language) -> Vec<String> {
    let globs = match language {
        Language::Python => DEFAULT_PYTHON_TEST_GLOBS,
        Language::Cpp => DEFAULT_CPP_TEST_GLOBS,
    };
    globs.iter().map(|s| s.to_string()).collect()
}

impl RepoConfig {
    /// Detects a repository at `dir` without a manifest: the language, the source folders
    /// (for Python the distribution's own packages, from its packaging files when they say:
    /// see [`NON_PACKAGE_DIRS`] for what is left out otherwise), the tests, and a virtual
    /// environment at `.venv` or `venv`. The name is the folder's name; `explanation` says
    /// why each folder was chosen.
    pub fn detect(dir: &Path) -> Result<RepoConfig, ManifestError> {
        let root = std::path::absolute(dir)
            .map(|p| normalize(&p))
            .map_err(|e| ManifestError::Detect {
                dir: dir.to_path_buf(),
                message: e.to_string(),
            })?;
        if !root.is_dir() {
            return Err(ManifestError::Detect {
                dir: dir.to_path_buf(),
                message: "not a folder".into(),
            });
        }
        let layout = detect_layout(&root, None).map_err(|message| ManifestError::Detect {
            dir: dir.to_path_buf(),
            message,
        })?;
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().replace([' ', ':', '@'], "_"))
            .unwrap_or_else(|| "repo".into());
        Ok(RepoConfig {
            name,
            explanation: layout.why,
            test_globs: default_globs(layout.language),
            language: layout.language,
            source_dirs: layout.source_dirs,
            test_dirs: layout.test_dirs,
            include_dirs: layout.include_dirs,
            python: layout.python,
            excludes: Vec::new(),
            deselect: Vec::new(),
            env: BTreeMap::new(),
            cxx: "g++".into(),
            cxxflags: vec!["-std=c++17".into()],
            link: vec![
                "gtest_main".into(),
                "gtest".into(),
                "gmock".into(),
                "pthread".into(),
            ],
            pair_by_includes: true,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            memory_mb: DEFAULT_MEMORY_MB,
            pids: DEFAULT_PIDS,
            cpus: DEFAULT_CPUS,
            domain: None,
            root,
        })
    }

    /// Loads `manifest` and picks `name` from it (or its only repository), or detects `dir`.
    pub fn resolve(
        manifest: Option<&Path>,
        name: Option<&str>,
        dir: Option<&Path>,
    ) -> Result<Vec<RepoConfig>, ManifestError> {
        match (manifest, dir) {
            (Some(m), _) => {
                let m = Manifest::load(m)?;
                match name {
                    Some(n) => Ok(vec![m.repo(n)?.clone()]),
                    None => Ok(m.repos),
                }
            }
            (None, Some(d)) => {
                let found = d.join("clover.toml");
                if found.is_file() {
                    return RepoConfig::resolve(Some(&found), name, None);
                }
                let mut repo = RepoConfig::detect(d)?;
                if let Some(n) = name {
                    repo.name = n.to_string();
                }
                Ok(vec![repo])
            }
            (None, None) => Err(ManifestError::Detect {
                dir: PathBuf::from("."),
                message: "name a repository with --repo DIR or a manifest with --manifest FILE"
                    .into(),
            }),
        }
    }
}

struct Layout {
    language: Language,
    /// Why the detected folders were chosen, one sentence per setting.
    why: Vec<String>,
    source_dirs: Vec<PathBuf>,
    test_dirs: Vec<PathBuf>,
    include_dirs: Vec<PathBuf>,
    python: Option<PathBuf>,
}

fn detect_layout(root: &Path, language: Option<Language>) -> Result<Layout, String> {
    if !root.is_dir() {
        return Err(format!(
            "repository folder {} does not exist",
            root.display()
        ));
    }
    let language = match language {
        Some(l) => l,
        None => detect_language(root)?,
    };
    let existing = |names: &[&str]| -> Vec<PathBuf> {
        names
            .iter()
            .filter(|n| root.join(n).is_dir())
            .map(PathBuf::from)
            .collect()
    };
    let layout = match language {
        Language::Python => {
            let tests = existing(&["tests", "test", "testing"]);
            let sources = python_layout::python_sources(root);
            let mut why = vec![format!(
                "source_dirs = {}: {}",
                list(&sources.dirs),
                sources.why
            )];
            why.push(if tests.is_empty() {
                "test_dirs = [.]: no tests, test or testing folder".to_string()
            } else {
                format!("test_dirs = {}: the test folders at the root", list(&tests))
            });
            Layout {
                language,
                why,
                source_dirs: sources.dirs,
                // Without a tests folder, tests live inside the package or at the root.
                test_dirs: if tests.is_empty() {
                    vec![PathBuf::from(".")]
                } else {
                    tests
                },
                include_dirs: Vec::new(),
                python: [".venv/bin/python", "venv/bin/python"]
                    .iter()
                    .map(|p| root.join(p))
                    .find(|p| p.exists()),
            }
        }
        Language::Cpp => {
            let src = existing(&["src", "lib"]);
            let src = if src.is_empty() {
                vec![PathBuf::from(".")]
            } else {
                src
            };
            let tests = existing(&["tests", "test"]);
            let mut include = existing(&["include"]);
            include.extend(src.iter().cloned());
            let test_dirs = if tests.is_empty() { src.clone() } else { tests };
            Layout {
                language,
                why: vec![
                    format!(
                        "source_dirs = {}: the src or lib folder, else the root",
                        list(&src)
                    ),
                    format!(
                        "test_dirs = {}: the tests or test folder, else the sources",
                        list(&test_dirs)
                    ),
                ],
                test_dirs,
                source_dirs: src,
                include_dirs: include,
                python: None,
            }
        }
    };
    Ok(layout)
}

fn detect_language(root: &Path) -> Result<Language, String> {
    for marker in ["pyproject.toml", "setup.py", "setup.cfg"] {
        if root.join(marker).is_file() {
            return Ok(Language::Python);
        }
    }
    let mut py = 0usize;
    let mut cpp = 0usize;
    count_extensions(root, 0, &mut py, &mut cpp);
    match (py, cpp) {
        (0, 0) => {
            Err("found neither Python nor C++ files; name the language in a clover.toml".into())
        }
        (p, c) if p >= c => Ok(Language::Python),
        _ => Ok(Language::Cpp),
    }
}

fn count_extensions(dir: &Path, depth: u32, py: &mut usize, cpp: &mut usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            if depth < 3 && !name.starts_with('.') && !PRUNED_DIRS.contains(&name.as_ref()) {
                count_extensions(&entry.path(), depth + 1, py, cpp);
            }
        } else if name.ends_with(".py") {
            *py += 1;
        } else if [".cc", ".cpp", ".cxx", ".h", ".hpp"]
            .iter()
            .any(|e| name.ends_with(e))
        {
            *cpp += 1;
        }
    }
}

/// Folders as `[a, b]`, for the explanations.
fn list(dirs: &[PathBuf]) -> String {
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    format!("[{}]", names.join(", "))
}

/// Removes `.` components and folds `..` lexically, so roots compare and print cleanly.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The flags by which a stage is told its repositories: `--manifest FILE` and `--repo DIR`
/// (repeatable; a folder's own `clover.toml` is used when it has one). Flatten it into a
/// stage's arguments with `#[command(flatten)]`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RepoArgs {
    /// The repository manifest naming the input's repositories
    #[arg(long, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub manifest: Option<PathBuf>,
    /// A repository folder (its clover.toml is used when it has one); repeatable
    #[arg(long, value_name = "DIR", value_parser = clover_protocol::resolved_path)]
    pub repo: Vec<PathBuf>,
}

impl RepoArgs {
    /// Every repository named, by name. A name given twice keeps the last.
    pub fn resolve(&self) -> Result<BTreeMap<String, RepoConfig>, ManifestError> {
        let mut repos = BTreeMap::new();
        if let Some(m) = &self.manifest {
            for r in RepoConfig::resolve(Some(m), None, None)? {
                repos.insert(r.name.clone(), r);
            }
        }
        for dir in &self.repo {
            for r in RepoConfig::resolve(None, None, Some(dir))? {
                repos.insert(r.name.clone(), r);
            }
        }
        if repos.is_empty() {
            return Err(ManifestError::Detect {
                dir: PathBuf::from("."),
                message: "name the input's repositories with --manifest FILE or --repo DIR".into(),
            });
        }
        Ok(repos)
    }
}

/// The error for a record naming a repository no flag named.
pub fn unknown_repo(name: &str, repos: &BTreeMap<String, RepoConfig>) -> String {
    format!(
        "unknown repository `{name}`; known: {} (name it with --manifest or --repo)",
        repos.keys().cloned().collect::<Vec<_>>().join(", ")
    )
}

#[cfg(test)]
mod tests;
