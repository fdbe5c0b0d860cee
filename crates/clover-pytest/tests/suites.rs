//! Whole pytest suites through the sandbox against the same suites run bare on the host (in a
//! copy of the repository, inside `unshare -n` so they have no network either): the same
//! tests must pass and fail. The fixture and the corpus packages (`cargo xtask corpus`).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use clover_manifest::RepoConfig;
use clover_protocol::{Language, Outcome};
use clover_pytest::PytestRun;
use clover_report::parse_junit;
use clover_sandbox::{Limits, Sandbox};
use clover_testkit::bare::{assert_same, copy_of, unshare, verdicts};

fn sandbox() -> Option<Sandbox> {
    clover_testkit::root()?;
    match Sandbox::new() {
        Ok(sb) => Some(sb),
        Err(e) => clover_testkit::require(&format!("the sandbox ({e})"), None),
    }
}

/// The whole suite of a Python repository, bare and sandboxed.
fn python_suite(sb: &Sandbox, cfg: &RepoConfig, python: &Path) {
    let targets: Vec<String> = cfg
        .test_dirs
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    let env: Vec<(String, String)> = cfg.env.clone().into_iter().collect();

    let copy = copy_of(&cfg.root);
    let junit = copy.path().join(".bare-junit.xml");
    let out = Command::new("unshare")
        .arg("-n")
        .arg(python)
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-q"])
        .args(["-o", "junit_family=xunit1"])
        .arg(format!("--junitxml={}", junit.display()))
        .args(&targets)
        .current_dir(copy.path())
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("TZ", "UTC")
        .env("LC_ALL", "C.UTF-8")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    let bare = parse_junit(&std::fs::read(&junit).unwrap_or_else(|e| {
        panic!(
            "{}: no bare report ({e}): {}",
            cfg.name,
            String::from_utf8_lossy(&out.stdout)
        )
    }))
    .unwrap();

    let r = PytestRun {
        repo: cfg.root.clone(),
        python: python.to_path_buf(),
        targets,
        files: Vec::new(),
        cov_sources: Vec::new(),
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: env.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        limits: Limits {
            wall: Duration::from_secs(cfg.timeout_secs.max(300)),
            cpu_secs: cfg.timeout_secs.max(300),
            ..Limits::default()
        },
    }
    .run(sb)
    .unwrap();
    assert!(
        matches!(r.outcome, Outcome::Passed | Outcome::Failed),
        "{}: {:?} {:?}\n{}",
        cfg.name,
        r.outcome,
        r.message,
        r.run.stdout.tail(4000)
    );
    assert_same(&cfg.name, &verdicts(&bare), &verdicts(&r.tests));
}

#[test]
fn python_fixture_suite_same_bare_and_sandboxed() {
    let Some(sb) = sandbox() else { return };
    let Some(python) = clover_testkit::python() else {
        return;
    };
    let Some(()) = unshare() else { return };
    let cfg = RepoConfig::resolve(None, None, Some(&clover_testkit::fixture("python")))
        .unwrap()
        .remove(0);
    python_suite(&sb, &cfg, &python);
}

#[test]
fn corpus_suites_same_bare_and_sandboxed() {
    let Some(sb) = sandbox() else { return };
    let Some(manifest) = clover_testkit::corpus_manifest() else {
        return;
    };
    let Some(()) = unshare() else { return };
    for cfg in RepoConfig::resolve(Some(&manifest), None, None).unwrap() {
        if cfg.language == Language::Python {
            let python = cfg
                .python
                .clone()
                .expect("the corpus names each interpreter");
            python_suite(&sb, &cfg, &python);
        }
    }
}
