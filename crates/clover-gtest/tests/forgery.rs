//! Test binaries that forge their own report, and clover's record of the run that shows it
//! (`record.rs`): a failing test hidden by a report rewritten after GoogleTest wrote it — from
//! a static destructor, an `atexit` handler, an `at_quick_exit` handler, a signal handler, or
//! a test that writes the report itself and leaves — is `forged`, with no tests and no lines,
//! in a plain run and in a mutant's; with the record off (for comparison) the same binaries
//! pass. An honest file keeps its verdict and its lines with the record on.

mod common;

use common::{limits, ready};

use clover_gtest::{CppProject, GtestResult, GtestRun, LibraryCache, Replacement};
use clover_manifest::RepoConfig;
use clover_protocol::Outcome;
use clover_sandbox::WriteFile;

fn fixture() -> CppProject {
    let cfg = RepoConfig::resolve(None, None, Some(&clover_testkit::fixture("cpp")))
        .unwrap()
        .remove(0);
    CppProject::from_config(&cfg)
}

const TEST_PATH: &str = "tests/ring_buffer_test.cc";

/// The fixture's own ring buffer tests, one test that fails, and `forgery`.
fn forged_file(project: &CppProject, forgery: &str) -> Vec<u8> {
    let own = std::fs::read_to_string(project.repo.join(TEST_PATH)).unwrap();
    format!(
        "{own}\n#include <csignal>\n#include <cstdlib>\n#include <fstream>\n#include <unistd.h>\n\
         TEST(Forged, Fails) {{ EXPECT_EQ(1, 2); }}\n\
         extern \"C\" void __gcov_dump();\n\
         // A report in which every test passed.\n\
         static void clover_forge() {{\n\
           std::ofstream(\".clover-out/gtest.xml\") << \"<?xml version=\\\"1.0\\\"?><testsuites \
         tests=\\\"1\\\" failures=\\\"0\\\"><testsuite name=\\\"Forged\\\" tests=\\\"1\\\" \
         failures=\\\"0\\\"><testcase name=\\\"Fails\\\" status=\\\"run\\\" \
         result=\\\"completed\\\" classname=\\\"Forged\\\"/></testsuite></testsuites>\";\n\
           __gcov_dump();\n\
           _exit(0);\n\
         }}\n\
         {forgery}\n"
    )
    .into_bytes()
}

/// Each way of rewriting the report once GoogleTest is done (or instead of it).
const FORGERIES: &[(&str, &str)] = &[
    (
        "a static destructor",
        "struct Forge { ~Forge() { clover_forge(); } } forge;",
    ),
    (
        "an atexit handler",
        "struct Forge { Forge() { std::atexit(clover_forge); } } forge;",
    ),
    (
        "an at_quick_exit handler",
        "struct Forge { Forge() { std::at_quick_exit(clover_forge); } ~Forge() { std::quick_exit(0); } } forge;",
    ),
    (
        "a signal handler",
        "static void on_term(int) { clover_forge(); }\n\
         struct Forge { Forge() { std::signal(SIGTERM, on_term); } ~Forge() { std::raise(SIGTERM); } } forge;",
    ),
    (
        "a test that writes the report and leaves",
        "TEST(Forged, Leaves) { clover_forge(); }",
    ),
];

fn run<'a>(project: &'a CppProject, text: Vec<u8>) -> GtestRun<'a> {
    GtestRun {
        project,
        test_file: WriteFile {
            path: TEST_PATH.into(),
            contents: text,
        },
        filter: Vec::new(),
        limits: limits(),
    }
}

fn assert_forged(r: &GtestResult, what: &str) {
    assert_eq!(r.outcome, Outcome::Forged, "{what}: {:?}", r.message);
    assert!(
        r.tests.is_empty() && r.coverage.is_empty() && r.executable.is_empty(),
        "{what}: the forged report outlived its verdict: {:?}",
        r.tests
    );
}

#[test]
fn a_report_rewritten_after_googletest_is_forged_and_earns_nothing() {
    let Some(sb) = ready() else { return };
    let project = fixture();
    let dir = tempfile::tempdir().unwrap();
    let cache = LibraryCache::new(dir.path()).unwrap();
    let off_dir = tempfile::tempdir().unwrap();
    let off = LibraryCache::new(off_dir.path())
        .unwrap()
        .with_report_record(false);
    for (what, forgery) in FORGERIES {
        let candidate = run(&project, forged_file(&project, forgery));
        let r = candidate.run(&sb, &cache).unwrap();
        assert_forged(&r, what);
        let message = r.message.clone().unwrap_or_default();
        assert!(
            message.contains("Forged.Fails") || message.contains("before GoogleTest finished"),
            "{what}: {message}"
        );
        // The forgery works where nothing checks the report: that is what the record stops.
        let believed = candidate.run(&sb, &off).unwrap();
        assert_eq!(
            believed.outcome,
            Outcome::Passed,
            "{what}: {:?}",
            believed.message
        );
        // A run that keeps its object for mutants, and the mutant runs: forged too.
        let (kept, harness) = candidate.run_keeping_object(&sb, &cache).unwrap();
        assert_forged(&kept, what);
        let harness = match harness {
            Some(h) => h,
            None => candidate.mutant_harness(&sb, &cache).unwrap().unwrap(),
        };
        let source = std::fs::read(project.repo.join("src/ring_buffer.cc")).unwrap();
        let mutant = harness
            .run(
                &sb,
                Some(Replacement {
                    source: std::path::Path::new("src/ring_buffer.cc"),
                    text: &source,
                }),
                &limits(),
            )
            .unwrap();
        // A mutant's run stops at the first failure (`--gtest_fail_fast`): a test that forges
        // from inside never runs after the failing one, and the run fails honestly.
        let want = match what.starts_with("a test that") {
            true => Outcome::Failed,
            false => Outcome::Forged,
        };
        assert_eq!(mutant.outcome, want, "{what}: {:?}", mutant.message);
    }
}

#[test]
fn an_honest_file_keeps_its_verdict_and_lines_with_the_record() {
    let Some(sb) = ready() else { return };
    let project = fixture();
    let (on_dir, off_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let on = LibraryCache::new(on_dir.path()).unwrap();
    let off = LibraryCache::new(off_dir.path())
        .unwrap()
        .with_report_record(false);
    let honest = std::fs::read(project.repo.join(TEST_PATH)).unwrap();
    let failing = [
        honest.clone(),
        b"\nTEST(Honest, Fails) { EXPECT_EQ(1, 2); }\n".to_vec(),
    ]
    .concat();
    for (text, want) in [(honest, Outcome::Passed), (failing, Outcome::Failed)] {
        let candidate = run(&project, text);
        let with = candidate.run(&sb, &on).unwrap();
        let without = candidate.run(&sb, &off).unwrap();
        assert_eq!(with.outcome, want, "{:?}", with.message);
        assert_eq!(
            (&with.tests.len(), &with.coverage, &with.executable),
            (&without.tests.len(), &without.coverage, &without.executable)
        );
        // Built once, run twice (calibration's way): the same.
        let binary = candidate.build(&sb, &on).unwrap().unwrap();
        assert_eq!(binary.run(&sb, &[], &limits()).unwrap().outcome, want);
    }
}

/// The record keeps to what a binary ran: a filter that runs some tests, and a test that
/// skips itself, leave the report's passed count GoogleTest's.
#[test]
fn filtered_and_skipped_tests_agree_with_the_record() {
    let Some(sb) = ready() else { return };
    let project = fixture();
    let dir = tempfile::tempdir().unwrap();
    let cache = LibraryCache::new(dir.path()).unwrap();
    let honest = std::fs::read(project.repo.join(TEST_PATH)).unwrap();
    let text = [
        honest,
        b"\nTEST(Honest, Skips) { GTEST_SKIP() << \"later\"; }\nTEST(Honest, DISABLED_Off) {}\n"
            .to_vec(),
    ]
    .concat();
    let mut candidate = run(&project, text);
    let r = candidate.run(&sb, &cache).unwrap();
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    candidate.filter = vec!["RingBufferTest.*".into()];
    let r = candidate.run(&sb, &cache).unwrap();
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
}
