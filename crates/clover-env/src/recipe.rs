//! A benchmark's recipe: the repositories it is built from, each pinned, with only what
//! detection cannot find.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// A whole recipe file (`benchmarks/clover/recipe.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// No package uploaded after this day is installed (`YYYY-MM-DD`): the benchmark's cutoff.
    pub cutoff: Option<String>,
    /// The Python version every environment is made with, unless an entry says another.
    pub python: Option<String>,
    #[serde(default, rename = "repo")]
    pub repos: Vec<RecipeEntry>,
}

/// One repository of a recipe. Everything but the name is optional: an entry says only what
/// the registry and detection cannot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecipeEntry {
    pub name: String,
    /// The project on PyPI.
    pub pypi: Option<String>,
    pub version: Option<String>,
    /// When the registry received the source distribution (`YYYY-MM-DD`).
    pub released: Option<String>,
    /// The source distribution's file name, and its sha256.
    pub sdist: Option<String>,
    pub sha256: Option<String>,
    pub python: Option<String>,
    #[serde(default)]
    pub source_dirs: Vec<String>,
    #[serde(default)]
    pub test_dirs: Vec<String>,
    /// Test requirements no file of the repository names.
    #[serde(default)]
    pub requirements: Vec<String>,
    /// Extras of the project to install that are not named as test ones (`full`, `socks`).
    #[serde(default)]
    pub extras: Vec<String>,
    /// Arguments the suite's pytest needs (`-p no:profiling`).
    #[serde(default)]
    pub pytest_args: Vec<String>,
    /// Debian packages the repository needs to build or run.
    #[serde(default)]
    pub apt: Vec<String>,
    /// Tests left out, each with why.
    #[serde(default)]
    pub deselect: Vec<Deselect>,
    /// Files or folders of tests left out, each with why.
    #[serde(default)]
    pub ignore: Vec<Ignore>,
    /// Where the tests come from when the source distribution lacks them.
    pub tests_from: Option<TestsFrom>,
    /// Anything the recipe's author wants a reader to know; not read by any stage.
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deselect {
    /// A pytest node id, relative to the repository.
    pub test: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ignore {
    /// A file or folder, relative to the repository.
    pub path: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestsFrom {
    /// `git`, `debian-source`: what kind of source it is.
    pub kind: String,
    /// Where it is (a git repository's address), or the package's name.
    #[serde(default)]
    pub repository: Option<String>,
    #[serde(default)]
    pub package: Option<String>,
    /// The tag or version of the same release.
    #[serde(default)]
    pub tag: Option<String>,
    #[serde(default)]
    pub commit: Option<String>,
    /// The folders of it that are taken.
    #[serde(default)]
    pub paths: Vec<String>,
    pub why: String,
}

/// A recipe that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    #[error("cannot read the recipe {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the recipe {path} is not valid: {message}")]
    Invalid { path: String, message: String },
    #[error("the recipe {path} has no repository named {name:?} (it has: {known})")]
    NoEntry {
        path: String,
        name: String,
        known: String,
    },
}

impl Recipe {
    pub fn load(path: &Path) -> Result<Recipe, RecipeError> {
        let text = std::fs::read_to_string(path).map_err(|source| RecipeError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Recipe::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Recipe, RecipeError> {
        let recipe: Recipe = toml::from_str(text).map_err(|e| RecipeError::Invalid {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let mut seen = std::collections::BTreeSet::new();
        for r in &recipe.repos {
            if !seen.insert(&r.name) {
                return Err(RecipeError::Invalid {
                    path: path.display().to_string(),
                    message: format!("two repositories are named {:?}", r.name),
                });
            }
        }
        Ok(recipe)
    }

    /// The entry named `name`.
    pub fn entry(&self, name: &str, path: &Path) -> Result<&RecipeEntry, RecipeError> {
        self.repos
            .iter()
            .find(|r| r.name == name)
            .ok_or_else(|| RecipeError::NoEntry {
                path: path.display().to_string(),
                name: name.into(),
                known: self
                    .repos
                    .iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// `cutoff` as the instant uv's `--exclude-newer` takes: the end of that day, UTC.
    pub fn exclude_newer(&self) -> Option<String> {
        self.cutoff.as_ref().map(|d| format!("{d}T23:59:59Z"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recipe_reads_its_entries_and_refuses_typos_and_twins() {
        let text = r#"
cutoff = "2024-08-30"
python = "3.10"
[[repo]]
name = "flask"
version = "3.0.3"
deselect = [{ test = "tests/test_a.py::test_b", why = "network" }]
"#;
        let r = Recipe::parse(text, Path::new("r.toml")).unwrap();
        assert_eq!(r.exclude_newer().as_deref(), Some("2024-08-30T23:59:59Z"));
        let e = r.entry("flask", Path::new("r.toml")).unwrap();
        assert_eq!(e.deselect[0].why, "network");
        let err = r
            .entry("jinja", Path::new("r.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"jinja\"") && err.contains("flask"), "{err}");
        let typo = Recipe::parse(
            "[[repo]]\nname = \"a\"\nversoin = \"1\"\n",
            Path::new("r.toml"),
        );
        assert!(typo.unwrap_err().to_string().contains("versoin"));
        let twins = Recipe::parse(
            "[[repo]]\nname = \"a\"\n[[repo]]\nname = \"a\"\n",
            Path::new("r.toml"),
        );
        assert!(twins.unwrap_err().to_string().contains("two repositories"));
    }

    /// The CLOVER paper's recipe reads, and pins each of its 12 repositories to a release
    /// before the cutoff by a digest.
    #[test]
    fn the_benchmark_recipe_pins_the_paper_s_twelve_repositories() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benchmarks/clover/recipe.toml");
        let r = Recipe::load(&path).unwrap();
        let cutoff = r.cutoff.clone().unwrap();
        let names: Vec<&str> = r.repos.iter().map(|e| e.name.as_str()).collect();
        for paper in [
            "pillow",
            "elasticsearch",
            "flask",
            "httpx",
            "jinja",
            "kombu",
            "paramiko",
            "pip",
            "requests",
            "sqlalchemy",
            "starlette",
            "pylint",
        ] {
            assert!(names.contains(&paper), "{paper} is not in {names:?}");
        }
        assert_eq!(r.repos.len(), 12);
        for e in &r.repos {
            let sha = e.sha256.as_deref().unwrap_or("");
            assert!(
                sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()),
                "{}",
                e.name
            );
            assert!(e.version.is_some() && e.pypi.is_some(), "{}", e.name);
            assert!(
                e.released.as_deref().unwrap() <= cutoff.as_str(),
                "{}",
                e.name
            );
            for d in &e.deselect {
                assert!(!d.why.is_empty(), "{}: {}", e.name, d.test);
            }
        }
    }
}
