//! `clover-env` on the fixture repository and on a real package's source distribution: what
//! it installs and from where, what it cannot resolve and why, the suite's counts, the cache
//! that makes a second run do nothing, and failures that name their step and leave nothing.
//! The installs come from the package registry, as a user's would.

use std::path::{Path, PathBuf};
use std::process::Command;

use clover_protocol::Environment;
use serde_json::Value;

struct Ran {
    code: i32,
    env: Environment,
    stderr: String,
}

fn tools() -> Option<(PathBuf, PathBuf)> {
    clover_testkit::root()?;
    Some((clover_testkit::uv()?, clover_testkit::python()?))
}

/// The base interpreter of the test environment `python` (a venv's `bin/python`).
fn base_python(python: &Path) -> String {
    let out = Command::new(python)
        .args(["-c", "import sys; print(sys._base_executable)"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn run(uv: &Path, cache: &Path, args: &[&str]) -> Ran {
    let out = Command::new(env!("CARGO_BIN_EXE_clover-env"))
        .arg("--uv")
        .arg(uv)
        .arg("--cache")
        .arg(cache)
        .args(args)
        .output()
        .expect("clover-env starts");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    let env: Environment = serde_json::from_str(line.trim())
        .unwrap_or_else(|e| panic!("{e}: {line:?}\nstderr: {stderr}"));
    Ran {
        code: out.status.code().unwrap_or(-1),
        env,
        stderr,
    }
}

/// Environment folders in the cache (uv's own cache and downloads aside).
fn environments(cache: &Path) -> Vec<String> {
    std::fs::read_dir(cache)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "uv" && n != "downloads")
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_fixture_gets_its_sources_its_pins_and_a_suite_run_and_a_second_run_does_nothing() {
    let Some((uv, python)) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let repo = clover_testkit::copy_fixture("python", &dir.path().join("ledger"));
    std::fs::write(
        repo.join("requirements-test.txt"),
        "six==1.17.0\nclover-no-such-package-2f1c==1.0\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let manifest = dir.path().join("clover.toml");
    let base = base_python(&python);
    let args = [
        "--repo",
        repo.to_str().unwrap(),
        "--python",
        &base,
        "--exclude-newer",
        "2026-11-30",
        "--manifest-out",
        manifest.to_str().unwrap(),
    ];
    let first = run(&uv, &cache, &args);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let env = &first.env;
    assert!(env.failure.is_none() && !env.cached, "{env:?}");
    let origins: Vec<(&str, &str, bool)> = env
        .sources
        .iter()
        .map(|s| (s.origin.as_str(), s.name.as_str(), s.installed))
        .collect();
    assert_eq!(
        origins,
        [
            ("project", "ledger", true),
            ("requirements", "requirements-test.txt", false),
            ("extra", "project[test]", true),
            ("test_tools", "clover", true),
        ]
    );
    // The file failed as a whole, its good line went in alone, and the bad one is named
    // with the installer's reason.
    assert_eq!(env.unresolved.len(), 1, "{:?}", env.unresolved);
    assert_eq!(
        env.unresolved[0].requirement,
        "clover-no-such-package-2f1c==1.0"
    );
    assert!(
        env.unresolved[0]
            .why
            .contains("clover-no-such-package-2f1c"),
        "{}",
        env.unresolved[0].why
    );
    for pin in [
        "six==1.17.0",
        "pytest==9.2.0",
        "pytest-cov==7.1.0",
        "coverage==7.17.3",
    ] {
        assert!(
            env.installed.iter().any(|p| p == pin),
            "{pin}: {:?}",
            env.installed
        );
    }
    let lock = Path::new(&env.python).parent().unwrap().parent().unwrap();
    assert_eq!(
        std::fs::read_to_string(lock.join("requirements.lock")).unwrap(),
        env.installed.join("\n") + "\n"
    );
    // The fixture's suite: every test but the flaky one's failures passes, run in the
    // sandbox from the environment's interpreter.
    let suite = env.suite.as_ref().expect("the suite ran");
    assert!(
        suite.passed >= 20 && suite.usable && suite.stopped.is_none(),
        "{suite:?}"
    );
    assert_eq!(suite.errors, 0, "{suite:?}");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let parsed = clover_manifest::Manifest::parse(&text, &manifest).unwrap();
    assert_eq!(parsed.repos[0].name, "ledger");
    assert_eq!(
        parsed.repos[0].python.as_deref(),
        Some(Path::new(&env.python))
    );

    let second = run(&uv, &cache, &args);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(second.env.cached, "{:?}", second.env);
    assert_eq!(second.env.key, env.key);
    assert_eq!(second.env.installed, env.installed);
    assert_eq!(second.env.suite, env.suite);
    assert_eq!(environments(&cache).len(), 1);

    // Another input is another environment.
    std::fs::write(repo.join("requirements-test.txt"), "six==1.16.0\n").unwrap();
    let third = run(&uv, &cache, &args);
    assert!(!third.env.cached && third.env.key != env.key);
    assert!(third.env.installed.iter().any(|p| p == "six==1.16.0"));
}

#[test]
fn a_project_that_cannot_install_names_the_step_and_leaves_no_environment() {
    let Some((uv, python)) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("broken");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(
        repo.join("pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\
         [project]\nname = \"broken\"\nversion = \"1\"\ndependencies = [\"clover-no-such-package-2f1c==1.0\"]\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let ran = run(
        &uv,
        &cache,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "--python",
            &base_python(&python),
        ],
    );
    assert_eq!(ran.code, 1);
    let failure = ran.env.failure.expect("a failure");
    assert_eq!(failure.step, "install");
    assert_eq!(failure.package.as_deref(), Some("broken"));
    assert!(
        failure.message.contains("clover-no-such-package-2f1c"),
        "{}",
        failure.message
    );
    assert!(
        environments(&cache).is_empty(),
        "{:?}",
        environments(&cache)
    );
    assert!(
        ran.stderr.contains("install failed (broken)"),
        "{}",
        ran.stderr
    );
}

/// six 1.17.0, as the corpus pins it: a package nobody here wrote, from its registry's
/// source distribution.
const SIX_SHA256: &str = "ff70335d468e7eb6ec65b95b99d3a2836546063f63acc5171de367e834932a81";

#[test]
fn a_recipe_entry_is_fetched_checked_and_built_and_a_wrong_digest_is_refused() {
    let Some((uv, python)) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("recipe.toml");
    let entry = |sha: &str| {
        format!(
            "cutoff = \"2026-11-30\"\n[[repo]]\nname = \"six\"\npypi = \"six\"\nversion = \"1.17.0\"\n\
             sha256 = \"{sha}\"\ndeselect = [{{ test = \"test_six.py::test_lazy\", why = \"a check\" }}]\n"
        )
    };
    let cache = dir.path().join("cache");
    let src = dir.path().join("src");
    let base = base_python(&python);
    let args = [
        "--recipe",
        recipe.to_str().unwrap(),
        "--name",
        "six",
        "--src",
        src.to_str().unwrap(),
        "--python",
        &base,
    ];
    std::fs::write(&recipe, entry(&"0".repeat(64))).unwrap();
    let wrong = run(&uv, &cache, &args);
    assert_eq!(wrong.code, 1);
    let failure = wrong.env.failure.expect("a failure");
    assert_eq!(failure.step, "fetch");
    assert!(failure.message.contains("sha256"), "{}", failure.message);
    assert!(!src.join("six").exists());
    let downloads: Vec<_> = std::fs::read_dir(cache.join("downloads"))
        .unwrap()
        .collect();
    assert!(downloads.is_empty(), "the refused download is removed");

    std::fs::write(&recipe, entry(SIX_SHA256)).unwrap();
    let ran = run(&uv, &cache, &args);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(src.join("six/test_six.py").is_file());
    assert_eq!(
        ran.env.exclude_newer.as_deref(),
        Some("2026-11-30T23:59:59Z")
    );
    let suite = ran.env.suite.expect("the suite ran");
    // 198 passed and 2 skipped as the corpus saw it, less the deselected test.
    assert!(suite.passed > 150 && suite.failed == 0, "{suite:?}");
    let value: Value = serde_json::to_value(&ran.env.sources).unwrap();
    assert!(
        value.to_string().contains("\"origin\":\"project\""),
        "{value}"
    );
}
