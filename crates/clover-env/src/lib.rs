//! `clover env`: a repository's test environment, made as the CLOVER paper's §2.2 makes it,
//! checked by running the suite once, and recorded.
//!
//! The paper: "First, we create a conda virtual environment with Python version set to 3.10
//! … We exhaustively search for txt files, and try to pip install those files … After this
//! step, we try to install the package from the current project directory with pip, poetry
//! and tox. After all the steps, we run pytest to check if we can find a significant number
//! of passed test cases." This stage does the same with the ecosystem's installer, uv:
//!
//! 1. a virtual environment of the chosen interpreter (`--python 3.10` finds `python3.10` on
//!    `PATH` or a pyenv build of it);
//! 2. the project itself, editable (`-e .`): the one install whose failure fails the stage;
//! 3. every dependency source detection finds ([`detect`]): requirements files, the project's
//!    test extras, PEP 735 dependency groups, tox's `[testenv]` deps, nox's
//!    `session.install` calls; then the recipe's own requirements. A source that fails as a
//!    whole is installed requirement by requirement, and each that still fails is recorded
//!    as unresolved, with the installer's words;
//! 4. pytest (unless the repository brought its own), pytest-cov and coverage.py at clover's
//!    pins ([`TEST_TOOLS`]): the measuring instruments are the same in every environment;
//! 5. the pins (`uv pip freeze`), into the record and `requirements.lock`;
//! 6. the suite, once, in the sandbox without network, under a time budget that ends the
//!    session between two tests, counted from its JUnit report.
//!
//! With a cutoff (`--exclude-newer`, or the recipe's `cutoff`) only packages uploaded before
//! it are considered, so the same inputs resolve to the same pins on every machine and any
//! day. The environment lives in the cache under a key of everything it was made from; a
//! second run with the same inputs finds its stamp and does nothing. A step that fails
//! leaves no environment behind, and names the step and the package.
//!
//! With a recipe entry (`--recipe FILE --name NAME`), the repository can also come from its
//! source distribution, fetched by `pip download` and checked by its sha256 ([`fetch`]).
//!
//! It deliberately knows no repository by name: what one needs beyond detection is in its
//! recipe entry.

mod build;
mod detect;
pub mod fetch;
mod recipe;
mod suite;

pub mod cli;

pub use build::{
    build, empty_environment, find_python, test_tools, EnvError, Options, STAMP, TEST_TOOLS,
};
pub use detect::{
    dependency_sources, is_test_name, requirements_files, test_extras, Found, Install,
};
pub use fetch::{fetch_sdist, pip_download, unpack};
pub use recipe::{Deselect, Ignore, Recipe, RecipeEntry, RecipeError, TestsFrom};

/// The Debian packages of `entry` that are not installed on this machine.
pub fn missing_system_packages(entry: &RecipeEntry) -> Vec<String> {
    entry
        .apt
        .iter()
        .filter(|p| {
            let out = std::process::Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output();
            !out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        })
        .cloned()
        .collect()
}

/// The manifest entry (`clover.toml`) the later stages read for this environment: the
/// repository, its interpreter, and what its recipe entry says of its folders.
pub fn manifest_entry(env: &clover_protocol::Environment, entry: Option<&RecipeEntry>) -> String {
    let list = |xs: &[String]| {
        xs.iter()
            .map(|x| format!("{x:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut t = format!(
        "[[repo]]\nname = {:?}\npath = {:?}\nlanguage = \"python\"\npython = {:?}\n",
        env.id, env.repo, env.python
    );
    if let Some(e) = entry {
        if !e.source_dirs.is_empty() {
            t.push_str(&format!("source_dirs = [{}]\n", list(&e.source_dirs)));
        }
        if !e.test_dirs.is_empty() {
            t.push_str(&format!("test_dirs = [{}]\n", list(&e.test_dirs)));
        }
        let ignored: Vec<String> = e.ignore.iter().map(|i| i.path.clone()).collect();
        if !ignored.is_empty() {
            t.push_str(&format!("excludes = [{}]\n", list(&ignored)));
        }
        // What the suite run deselects is never made a problem either: each cannot pass
        // here (the recipe says why), so calibrate would only spend its time limit on it.
        let deselected: Vec<String> = e.deselect.iter().map(|d| d.test.clone()).collect();
        if !deselected.is_empty() {
            t.push_str(&format!("deselect = [{}]\n", list(&deselected)));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The manifest clover env writes is one the later stages read, with the recipe's folders,
    /// ignored paths and deselections in it.
    #[test]
    fn the_manifest_entry_carries_the_recipes_folders_ignores_and_deselections() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("flask");
        std::fs::create_dir_all(repo.join("src/flask")).unwrap();
        let recipe = Recipe::parse(
            r#"[[repo]]
name = "flask"
source_dirs = ["src/flask"]
test_dirs = ["tests"]
ignore = [{ path = "tests/slow", why = "minutes" }]
deselect = [{ test = "tests/test_a.py::test_b", why = "network" }]
"#,
            Path::new("r.toml"),
        )
        .unwrap();
        let entry = recipe.entry("flask", Path::new("r.toml")).unwrap();
        let env = build::empty_environment("flask", &repo, None);
        let text = manifest_entry(&env, Some(entry));
        let m = clover_manifest::Manifest::parse(&text, &dir.path().join("clover.toml")).unwrap();
        let r = m.repo("flask").unwrap();
        assert_eq!(r.source_dirs, vec![std::path::PathBuf::from("src/flask")]);
        assert_eq!(r.test_dirs, vec![std::path::PathBuf::from("tests")]);
        assert_eq!(r.excludes, vec!["tests/slow".to_string()]);
        assert_eq!(r.deselect, vec!["tests/test_a.py::test_b".to_string()]);
    }
}
