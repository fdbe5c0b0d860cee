//! The report parsers over real reports captured from pytest, GoogleTest, ctest,
//! coverage.py and gcovr (see `tests/data/README.md`).

use std::path::Path;

use clover_protocol::{TestCase, TestOutcome};
use clover_report::{parse_cobertura, parse_cobertura_lines, parse_junit};

fn data(rel: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(rel),
    )
    .unwrap()
}

fn find<'a>(tests: &'a [TestCase], name: &str) -> &'a TestCase {
    tests
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

fn outcomes(tests: &[TestCase]) -> Vec<(String, TestOutcome)> {
    tests.iter().map(|t| (t.name.clone(), t.outcome)).collect()
}

#[test]
fn pytest_xunit1_and_xunit2_read_the_same() {
    let t1 = parse_junit(&data("pytest/junit-xunit1.xml")).unwrap();
    let t2 = parse_junit(&data("pytest/junit-xunit2.xml")).unwrap();
    assert_eq!(outcomes(&t1), outcomes(&t2));
    use TestOutcome::*;
    let expected = [
        ("test_add", Passed),
        ("test_fails", Failed),
        ("test_param[a[b]]", Passed),
        ("test_param[c]]>d]", Failed),
        ("test_param[1.5]", Passed),
        ("test_skipped", Skipped),
        ("test_xfail", Skipped),
        ("test_fail_and_teardown_error", Failed),
        ("test_div", Passed),
        ("test_stdout", Passed),
    ];
    let got = outcomes(&t1);
    assert_eq!(
        got,
        expected
            .iter()
            .map(|(n, o)| (n.to_string(), *o))
            .collect::<Vec<_>>()
    );
    assert_eq!(find(&t1, "test_div").classname, "tests.test_calc.TestDiv");
    let fails = find(&t1, "test_fails").message.clone().unwrap();
    assert!(
        fails.starts_with("AssertionError: odd ]]> message"),
        "{fails}"
    );
    // Reported twice by pytest (call failure, teardown error): one test, both messages.
    let twice = find(&t1, "test_fail_and_teardown_error")
        .message
        .clone()
        .unwrap();
    assert!(
        twice.contains("assert 1 == 2") && twice.contains("teardown broke"),
        "{twice}"
    );
    assert_eq!(
        find(&t1, "test_skipped")
            .message
            .as_deref()
            .map(|m| m.starts_with("not today")),
        Some(true)
    );
}

#[test]
fn pytest_collection_error_is_an_error() {
    let t = parse_junit(&data("pytest/junit-collection-error.xml")).unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].outcome, TestOutcome::Error);
    assert_eq!(t[0].name, "tests.test_broken");
    assert!(t[0]
        .message
        .as_ref()
        .unwrap()
        .contains("ModuleNotFoundError"));
}

#[test]
fn googletest_statuses_failures_and_split_cdata() {
    let t = parse_junit(&data("gtest/gtest.xml")).unwrap();
    use TestOutcome::*;
    assert_eq!(
        outcomes(&t),
        [
            ("Adds", Passed),
            ("TwoFailures", Failed),
            ("DISABLED_NotRun", Skipped),
            ("Skips", Skipped),
            ("Crashes", Passed),
            ("InRange/0", Passed),
            ("InRange/1", Passed),
            ("InRange/2", Failed),
        ]
        .iter()
        .map(|(n, o)| (n.to_string(), *o))
        .collect::<Vec<_>>()
    );
    let two = find(&t, "TwoFailures").message.clone().unwrap();
    assert!(two.contains("first"), "{two}");
    assert!(two.contains("odd ]]> message"), "{two}");
    assert_eq!(two.matches("Expected equality").count(), 2);
    assert_eq!(find(&t, "InRange/2").classname, "Values/ClampTest");
}

#[test]
fn ctest_junit_root_is_a_testsuite() {
    let t = parse_junit(&data("ctest/ctest.xml")).unwrap();
    use TestOutcome::*;
    assert_eq!(
        outcomes(&t),
        [
            ("unit", Failed),
            ("passes", Passed),
            ("crashes", Failed),
            ("skipped", Skipped)
        ]
        .iter()
        .map(|(n, o)| (n.to_string(), *o))
        .collect::<Vec<_>>()
    );
}

#[test]
fn coverage_py_absolute_source() {
    let cov = parse_cobertura(&data("pytest/coverage.xml"), Path::new("/tmp/gen/py")).unwrap();
    assert_eq!(cov.len(), 1);
    assert_eq!(cov[0].path, "src/calc/__init__.py");
    let lines: Vec<u32> = cov[0].lines.iter().collect();
    // add and div ran (the xfail test reaches the raise); unused never did.
    assert!(lines.contains(&2) && lines.contains(&6) && lines.contains(&8));
    assert!(lines.contains(&7) && !lines.contains(&12) && !lines.contains(&13));
}

#[test]
fn coverage_py_empty_source_with_relative_files() {
    let cov = parse_cobertura(
        &data("pytest/coverage-relative.xml"),
        Path::new("/anywhere/repo"),
    )
    .unwrap();
    let paths: Vec<&str> = cov.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["src/calc/__init__.py", "tests/test_calc.py"]);
}

#[test]
fn gcovr_relative_filenames_and_counts() {
    let cov = parse_cobertura(&data("gtest/gcovr.xml"), Path::new("/tmp/gen/cpp")).unwrap();
    assert_eq!(cov.len(), 1);
    assert_eq!(cov[0].path, "src/calc.cc");
    assert_eq!(cov[0].lines.iter().collect::<Vec<_>>(), [2, 3, 4, 5, 6]);
}

#[test]
fn executable_lines_are_every_listed_line_hit_or_not() {
    // gcovr lists every instrumented line: 8 and 9 (never run) are executable, 7 is not.
    let cov = parse_cobertura_lines(&data("gtest/gcovr.xml"), Path::new("/tmp/gen/cpp")).unwrap();
    assert_eq!(cov.len(), 1);
    assert_eq!(cov[0].covered.iter().collect::<Vec<_>>(), [2, 3, 4, 5, 6]);
    assert_eq!(
        cov[0].executable.iter().collect::<Vec<_>>(),
        [2, 3, 4, 5, 6, 8, 9]
    );
    // coverage.py lists its statements: 12 and 13 are unused code, 3 and 4 are not statements.
    let cov =
        parse_cobertura_lines(&data("pytest/coverage.xml"), Path::new("/tmp/gen/py")).unwrap();
    let executable: Vec<u32> = cov[0].executable.iter().collect();
    assert!(executable.contains(&12) && executable.contains(&13));
    assert!(!executable.contains(&3) && !executable.contains(&4));
    assert!(cov[0].covered.iter().all(|l| cov[0].executable.contains(l)));
}

/// Many tests with long messages and long names: each text is capped, and all the messages of
/// the report together stay near 512 KiB however many tests fail.
#[test]
fn texts_of_a_report_are_capped_one_by_one_and_together() {
    let big = "x".repeat(100 * 1024);
    let mut xml = String::from("<testsuites><testsuite>");
    for i in 0..200 {
        xml.push_str(&format!(
            "<testcase classname=\"c\" name=\"t{i}{big}\"><failure message=\"m\">{big}</failure></testcase>"
        ));
    }
    xml.push_str("</testsuite></testsuites>");
    let tests = parse_junit(xml.as_bytes()).unwrap();
    assert_eq!(tests.len(), 200);
    assert!(tests.iter().all(|t| t.outcome == TestOutcome::Failed));
    assert!(tests
        .iter()
        .all(|t| t.name.len() < 1200 && t.name.starts_with("t")));
    let first = tests[0].message.as_deref().unwrap();
    assert!(first.len() < 17 * 1024 && first.contains("bytes of output left out"));
    let all: usize = tests
        .iter()
        .map(|t| t.message.as_ref().unwrap().len())
        .sum();
    assert!(all < 700 * 1024, "{all} bytes of messages");
}
