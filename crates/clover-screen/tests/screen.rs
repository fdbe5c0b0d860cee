//! The screen on whole test files: hostile files under `tests/data/` mark each line the screen
//! must report with `# screen: <rule id>`, and the screen must report exactly those; honest
//! files (and the tests of the embedded fixture `fixtures/python`) must pass clean.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clover_screen::{screen_python, Rule, REPORT_CHANNEL_ENV, REPORT_FOLDER};

const HOSTILE: [&str; 4] = [
    "forge_report.py",
    "forge_plugin.py",
    "forge_runtime.py",
    "forge_deep.py",
];

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// (line, rule) of every `# screen: <rule id>` mark in a file.
fn marked(source: &str) -> BTreeSet<(u32, Rule)> {
    source
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let id = line.split("# screen: ").nth(1)?.trim();
            let rule = Rule::from_id(id).unwrap_or_else(|| panic!("unknown rule id {id:?}"));
            Some((i as u32 + 1, rule))
        })
        .collect()
}

fn screened(source: &str) -> BTreeSet<(u32, Rule)> {
    screen_python(source)
        .iter()
        .map(|f| (f.line, f.rule))
        .collect()
}

#[test]
fn hostile_files_are_caught_on_every_marked_line_and_nowhere_else() {
    for name in HOSTILE {
        let source = std::fs::read_to_string(data(name)).unwrap();
        let want = marked(&source);
        assert!(!want.is_empty(), "{name} marks no line");
        assert_eq!(screened(&source), want, "{name}");
    }
}

#[test]
fn every_rule_is_exercised_by_a_hostile_file() {
    let mut seen = BTreeSet::new();
    for name in HOSTILE {
        let source = std::fs::read_to_string(data(name)).unwrap();
        seen.extend(marked(&source).into_iter().map(|(_, rule)| rule));
    }
    let all: BTreeSet<Rule> = Rule::ALL.into_iter().collect();
    assert_eq!(seen, all);
}

#[test]
fn honest_test_code_passes() {
    let source = std::fs::read_to_string(data("honest.py")).unwrap();
    assert_eq!(screen_python(&source), Vec::new());
}

#[test]
fn the_embedded_python_fixture_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/python/tests");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "py") {
            let source = std::fs::read_to_string(&path).unwrap();
            assert_eq!(screen_python(&source), Vec::new(), "{}", path.display());
            files += 1;
        }
    }
    assert!(files >= 5, "only {files} test files in {}", dir.display());
}

/// The screen's report folder is the one the pytest runner writes their reports to; when
/// the sandbox moves its reports, this says the screen must follow.
#[test]
fn the_report_folder_is_the_sandboxs() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clover-pytest/src/run.rs");
    let text = std::fs::read_to_string(&src).unwrap();
    assert!(
        text.contains(&format!("const OUT_DIR: &str = \"{REPORT_FOLDER}\";")),
        "{} no longer writes its reports to {REPORT_FOLDER}",
        src.display()
    );
}

/// The screen's report channel variable is the one the sandbox gives the run.
#[test]
fn the_report_channel_variable_is_the_sandboxs() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clover-sandbox/src/spec.rs");
    let text = std::fs::read_to_string(&src).unwrap();
    assert!(
        text.contains(&format!(
            "pub const REPORT_CHANNEL_ENV: &str = \"{REPORT_CHANNEL_ENV}\";"
        )),
        "{} no longer names the report channel {REPORT_CHANNEL_ENV}",
        src.display()
    );
}
