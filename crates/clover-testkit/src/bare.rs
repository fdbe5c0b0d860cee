//! Suites run bare on the host beside the same suites in the sandbox: the runners' suite
//! tests compare the two verdict by verdict.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use clover_protocol::{TestCase, TestOutcome};

/// Tests known to change outcome from run to run, by `classname::name`.
const FLAKY: &[&str] = &["tests.test_flaky::test_fifo_cost_after_shuffled_receipts"];

pub type Verdicts = BTreeMap<String, TestOutcome>;

pub fn verdicts(tests: &[TestCase]) -> Verdicts {
    tests
        .iter()
        .map(|t| (format!("{}::{}", t.classname, t.name), t.outcome))
        .filter(|(k, _)| !FLAKY.contains(&k.as_str()))
        .collect()
}

pub fn unshare() -> Option<()> {
    let ok = Command::new("unshare")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success());
    crate::require("unshare -n (util-linux)", ok.then_some(()))
}

/// A copy of `repo` to run bare in, so the host run cannot change the repository either.
pub fn copy_of(repo: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", repo.display()))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success());
    dir
}

pub fn assert_same(what: &str, bare: &Verdicts, sandboxed: &Verdicts) {
    assert!(!bare.is_empty(), "{what}: the bare run found no tests");
    let differ: Vec<String> = bare
        .keys()
        .chain(sandboxed.keys())
        .filter(|k| bare.get(*k) != sandboxed.get(*k))
        .map(|k| {
            format!(
                "{k}: bare {:?}, sandboxed {:?}",
                bare.get(k),
                sandboxed.get(k)
            )
        })
        .collect();
    assert!(
        differ.is_empty(),
        "{what}: {} of {} tests differ:\n{}",
        differ.len(),
        bare.len(),
        differ.join("\n")
    );
    let count = |v: &Verdicts, o| v.values().filter(|x| **x == o).count();
    eprintln!(
        "{what}: {} tests, {} passed, {} failed, {} errors, {} skipped — same bare and sandboxed",
        bare.len(),
        count(bare, TestOutcome::Passed),
        count(bare, TestOutcome::Failed),
        count(bare, TestOutcome::Error),
        count(bare, TestOutcome::Skipped)
    );
}
