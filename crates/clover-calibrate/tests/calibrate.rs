//! Runs the real `clover-calibrate` on problems extracted from the fixtures and from corpus
//! packages, and reads its records back through the wire types.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clover_manifest::RepoConfig;
use clover_protocol::{
    CalibratedProblem, ContextTier, ExclusionReason, FileCoverage, Outcome, Problem,
    ProblemMutants, RecordReader, RecordWriter,
};

/// Problems of a repository, extracted with the extract library.
fn extract(repo: &RepoConfig) -> Vec<Problem> {
    let opts = clover_extract::ExtractOptions::from_repo(repo);
    clover_extract::extract(&opts).expect("extract").problems
}

fn write_problems(dir: &Path, problems: &[Problem]) -> PathBuf {
    let path = dir.join("problems.jsonl");
    let (mut w, _) = RecordWriter::create(&path, false).unwrap();
    for p in problems {
        w.write(p).unwrap();
    }
    w.finish().unwrap();
    path
}

/// Runs the binary; returns its records by id, and its stderr.
fn calibrate(input: &Path, args: &[&str]) -> (BTreeMap<String, CalibratedProblem>, String) {
    let (records, stderr, _) = calibrate_with_summary(input, args);
    (records, stderr)
}

/// [`calibrate`], and the summary sidecar it wrote.
fn calibrate_with_summary(
    input: &Path,
    args: &[&str],
) -> (
    BTreeMap<String, CalibratedProblem>,
    String,
    serde_json::Value,
) {
    let out = input.with_extension(format!("out{}.jsonl", args.join("").len()));
    let run = Command::new(env!("CARGO_BIN_EXE_clover-calibrate"))
        .arg(input)
        .arg("-o")
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "calibrate failed: {stderr}");
    let mut reader = RecordReader::open(Some(&out), 1 << 30).unwrap();
    let mut records = BTreeMap::new();
    while let Some(r) = reader.next_record::<CalibratedProblem>() {
        let (_, r) = r.unwrap();
        records.insert(r.id.clone(), r);
    }
    let summary = std::fs::read_to_string(format!("{}.summary.json", out.display())).unwrap();
    (records, stderr, serde_json::from_str(&summary).unwrap())
}

fn python_args(python: &Path, repo_dir: &Path) -> Vec<String> {
    vec![
        "--repo".into(),
        repo_dir.display().to_string(),
        "--python".into(),
        python.display().to_string(),
    ]
}

fn args_ref(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Asserts that two calibrations saw the same lines for every problem, and took the same
/// unique blocks and targets from them.
fn assert_same_lines(
    fast: &BTreeMap<String, CalibratedProblem>,
    slow: &BTreeMap<String, CalibratedProblem>,
) {
    assert_eq!(
        fast.keys().collect::<Vec<_>>(),
        slow.keys().collect::<Vec<_>>()
    );
    let mut compared = 0;
    for (id, f) in fast {
        let s = &slow[id];
        assert_eq!(f.runs, s.runs, "{id}: outcomes differ");
        assert_eq!(
            f.base, s.base,
            "{id}: base lines differ between the fast and per-test paths"
        );
        assert_eq!(f.empty, s.empty, "{id}: empty-test lines differ");
        // What importing and collecting ran is a union over the group's runs, the same
        // whether the group ran at once or a problem at a time.
        assert_eq!(
            f.unique_blocks, s.unique_blocks,
            "{id}: unique blocks differ"
        );
        assert_eq!(f.targets, s.targets, "{id}: targets differ");
        compared += 1;
    }
    assert!(compared > 0);
}

#[test]
fn fixture_tiers_blocks_targets_and_the_per_test_cross_check() {
    let (Some(python), Some(())) = (clover_testkit::python(), clover_testkit::root()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fixture = clover_testkit::fixture("python");
    let repo = &RepoConfig::resolve(None, None, Some(&fixture)).unwrap()[0];
    let problems: Vec<Problem> = extract(repo)
        .into_iter()
        .filter(|p| !p.id.contains("test_flaky.py"))
        .collect();
    assert!(problems.len() >= 30, "{}", problems.len());
    let input = write_problems(dir.path(), &problems);
    let args = python_args(&python, &fixture);
    let mut fast_args = args_ref(&args);
    fast_args.extend(["--runs", "1"]);
    let (fast, stderr) = calibrate(&input, &fast_args);
    assert!(
        stderr.contains(&format!("pyfix: kept {}", problems.len())),
        "{stderr}"
    );
    assert!(fast.values().all(|r| r.exclusion.is_none()));

    // Unique blocks, checked by hand against the fixture's source (fixtures/README.md).
    let blocks = |id: &str| -> Vec<(String, u32, u32)> {
        fast[&format!("pyfix/{id}")]
            .unique_blocks
            .iter()
            .map(|b| (b.path.clone(), b.start_line, b.end_line))
            .collect()
    };
    let money = "src/ledger/money.py".to_string();
    let accounts = "src/ledger/accounts.py".to_string();
    let inventory = "src/ledger/inventory.py".to_string();
    let report = "src/ledger/report.py".to_string();
    assert_eq!(
        blocks("tests/test_money.py::test_parse_accounting_negative"),
        vec![(money.clone(), 101, 106)]
    );
    assert_eq!(
        blocks("tests/test_accounts.py::TestLedger::test_close_account_sweeps_balance"),
        vec![(accounts.clone(), 143, 148)]
    );
    assert_eq!(
        blocks("tests/test_accounts.py::test_history_of_cash"),
        vec![(accounts.clone(), 128, 134)]
    );
    assert_eq!(
        blocks("tests/test_inventory.py::FifoInventoryTest::test_write_off_expired"),
        vec![(inventory.clone(), 86, 99)]
    );
    assert_eq!(
        blocks("tests/test_inventory.py::test_reorder_list"),
        vec![(inventory.clone(), 103, 108)]
    );
    assert_eq!(
        blocks("tests/test_report.py::test_table_truncates_long_cells"),
        vec![(report.clone(), 37, 42)]
    );
    let block = &fast["pyfix/tests/test_money.py::test_parse_accounting_negative"].unique_blocks[0];
    let source = std::fs::read_to_string(fixture.join(&money)).unwrap();
    let expected: String = source
        .lines()
        .skip(100)
        .take(6)
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(block.code, expected);
    // Most tests reach nothing only they reach.
    assert!(blocks("tests/test_money.py::test_parse_plain").is_empty());

    // Tiers: the report test reaches report.py and accounts.py beyond its peers; a money test
    // leaves inventory.py as the empty test leaves it.
    let tier = |id: &str, path: &str| {
        fast[&format!("pyfix/{id}")]
            .tiers
            .iter()
            .find(|t| t.path == path)
            .map(|t| t.tier)
    };
    assert_eq!(
        tier(
            "tests/test_report.py::test_table_truncates_long_cells",
            &report
        ),
        Some(ContextTier::Peer)
    );
    assert_eq!(
        tier("tests/test_money.py::test_parse_plain", &inventory),
        Some(ContextTier::Repo)
    );
    assert_eq!(
        tier("tests/test_money.py::test_parse_plain", &money),
        Some(ContextTier::Other)
    );
    assert_eq!(
        tier(
            "tests/test_money.py::test_parse_accounting_negative",
            &money
        ),
        Some(ContextTier::Peer)
    );
    // Every source file has a tier, and only source files do.
    for r in fast.values() {
        let paths: Vec<&str> = r.tiers.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "src/ledger/__init__.py",
                "src/ledger/accounts.py",
                "src/ledger/inventory.py",
                "src/ledger/money.py",
                "src/ledger/report.py"
            ]
        );
        assert!(r.base.iter().all(|f| f.path.starts_with("src/ledger/")));
    }

    // Targets: referenced repository names whose bodies the test runs.
    let targets = |id: &str| -> Vec<String> {
        fast[&format!("pyfix/{id}")]
            .targets
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert_eq!(
        targets("tests/test_money.py::test_parse_rejects_garbage"),
        vec!["parse_amount"]
    );
    assert_eq!(
        targets("tests/test_report.py::test_table_alignment"),
        vec!["format_table"]
    );
    let t = &fast["pyfix/tests/test_report.py::test_table_alignment"].targets[0];
    assert_eq!(t.path, report);
    assert!(source.lines().count() > 0 && t.start_line < t.end_line);

    // The per-test path, one pytest process per problem, sees the same lines.
    let mut slow_args = args_ref(&args);
    slow_args.extend(["--runs", "1", "--per-test"]);
    let (slow, _) = calibrate(&input, &slow_args);
    assert_same_lines(&fast, &slow);
}

#[test]
fn a_flaky_test_is_found_and_kept_out() {
    let (Some(python), Some(())) = (clover_testkit::python(), clover_testkit::root()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fixture = clover_testkit::fixture("python");
    let repo = &RepoConfig::resolve(None, None, Some(&fixture)).unwrap()[0];
    let problems: Vec<Problem> = extract(repo)
        .into_iter()
        .filter(|p| p.id.contains("test_flaky.py"))
        .collect();
    assert_eq!(problems.len(), 2);
    let input = write_problems(dir.path(), &problems);
    let args = python_args(&python, &fixture);
    let mut a = args_ref(&args);
    // The flaky test fails in about half of its runs: 16 runs all alike happen about once in
    // 7000 calibrations.
    a.extend(["--runs", "16"]);
    let (records, _) = calibrate(&input, &a);
    let flaky = &records["pyfix/tests/test_flaky.py::test_fifo_cost_after_shuffled_receipts"];
    let e = flaky
        .exclusion
        .as_ref()
        .expect("the flaky test is excluded");
    assert_eq!(e.reason, ExclusionReason::Flaky);
    assert!(e.detail.starts_with("run 1 "), "{}", e.detail);
    assert_eq!(flaky.runs.len(), 16);
    assert!(flaky.unique_blocks.is_empty() && flaky.targets.is_empty() && flaky.tiers.is_empty());
    let steady = &records["pyfix/tests/test_flaky.py::test_valuation_ignores_receipt_order"];
    assert!(steady.exclusion.is_none(), "{:?}", steady.exclusion);
}

#[test]
fn a_problem_file_that_does_not_collect_costs_only_its_own_problem() {
    let (Some(python), Some(())) = (clover_testkit::python(), clover_testkit::root()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fixture = clover_testkit::fixture("python");
    let repo = &RepoConfig::resolve(None, None, Some(&fixture)).unwrap()[0];
    let mut problems: Vec<Problem> = extract(repo)
        .into_iter()
        .filter(|p| p.id.contains("test_money.py"))
        .collect();
    assert!(problems.len() >= 3, "{}", problems.len());
    // The second problem's file (and so its empty variant) fails at import, after the test.
    let broken = problems[1].id.clone();
    problems[1]
        .python
        .as_mut()
        .unwrap()
        .problem_text
        .push_str("\nimport clover_no_such_module_at_all\n");
    let input = write_problems(dir.path(), &problems);
    let args = python_args(&python, &fixture);
    let mut a = args_ref(&args);
    a.extend(["--runs", "1"]);
    let (records, _) = calibrate(&input, &a);
    assert_eq!(records.len(), problems.len());
    let e = records[&broken]
        .exclusion
        .as_ref()
        .expect("the problem that does not collect is excluded");
    assert_eq!(e.reason, ExclusionReason::CollectionError, "{}", e.detail);
    assert!(
        e.detail.contains("did not collect") && e.detail.contains("clover_no_such_module_at_all"),
        "{}",
        e.detail
    );
    for (id, r) in records.iter().filter(|(id, _)| **id != broken) {
        assert!(r.exclusion.is_none(), "{id}: {:?}", r.exclusion);
        assert!(!r.base.is_empty(), "{id}: no covered lines");
    }
}

/// The fast path (one process per test file) sees the lines the per-test path sees, on the
/// packages whose lazy caches (six's `six.moves` attributes, toolz's module `__getattr__` that
/// caches `__version__`) made them differ while the tests of a file shared a process: each
/// test now runs in a fork of the process that collected them.
#[test]
fn corpus_fast_path_equals_per_test_path() {
    let (Some(manifest), Some(())) = (clover_testkit::corpus_manifest(), clover_testkit::root())
    else {
        return;
    };
    for name in ["six", "toolz"] {
        let repo = &RepoConfig::resolve(Some(&manifest), Some(name), None).unwrap()[0];
        let dir = tempfile::tempdir().unwrap();
        let problems = extract(repo);
        assert!(problems.len() > 20, "{name}: {}", problems.len());
        let input = write_problems(dir.path(), &problems);
        let m = manifest.display().to_string();
        let (fast, stderr) = calibrate(&input, &["--manifest", &m, "--runs", "1"]);
        eprintln!("{stderr}");
        let (slow, _) = calibrate(&input, &["--manifest", &m, "--runs", "1", "--per-test"]);
        assert_same_lines(&fast, &slow);
        let kept = fast.values().filter(|r| r.exclusion.is_none()).count();
        assert!(
            kept * 10 >= fast.len() * 9,
            "{name}: only {kept} of {} kept",
            fast.len()
        );
    }
}

/// A package that is one module (`six.py`, detected as the source `six.py`) is measured: as
/// `--cov=six.py` coverage.py took it for a package name and measured nothing.
#[test]
fn corpus_single_module_package_is_measured() {
    let (Some(manifest), Some(())) = (clover_testkit::corpus_manifest(), clover_testkit::root())
    else {
        return;
    };
    let repo = &RepoConfig::resolve(Some(&manifest), Some("six"), None).unwrap()[0];
    let dir = tempfile::tempdir().unwrap();
    let problems = extract(repo);
    let input = write_problems(dir.path(), &problems);
    let m = manifest.display().to_string();
    let (records, stderr) = calibrate(&input, &["--manifest", &m, "--runs", "2"]);
    let kept: Vec<&CalibratedProblem> =
        records.values().filter(|r| r.exclusion.is_none()).collect();
    assert!(kept.len() * 10 >= records.len() * 9, "{stderr}");
    let measured = kept
        .iter()
        .filter(|r| r.base.iter().any(|f| f.path == "six.py"))
        .count();
    assert!(
        measured * 2 > kept.len(),
        "{measured} of {} kept measured",
        kept.len()
    );
}

#[test]
fn cpp_fixture_per_test_blocks_and_tiers() {
    let Some(()) = clover_testkit::root() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fixture = clover_testkit::fixture("cpp");
    let repo = &RepoConfig::resolve(None, None, Some(&fixture)).unwrap()[0];
    let problems: Vec<Problem> = extract(repo)
        .into_iter()
        .filter(|p| p.id == "cppfix/src/histogram.cc")
        .collect();
    assert_eq!(problems.len(), 1);
    let input = write_problems(dir.path(), &problems);
    let f = fixture.display().to_string();
    let (records, stderr, summary) = calibrate_with_summary(&input, &["--repo", &f, "--runs", "2"]);
    assert!(stderr.contains("cppfix: kept 1"), "{stderr}");
    // The ground truth is compiled once for its 2 runs and its 5 TESTs, and the empty test
    // once: a build per run would make it 2 + 5 + 1.
    let r = &records["cppfix/src/histogram.cc"];
    assert_eq!(problems[0].cpp.as_ref().unwrap().tests.len(), 5);
    assert_eq!(r.runs.len(), 2);
    assert_eq!(summary["cppfix"]["test_builds"], 2, "{summary}");
    assert!(r.exclusion.is_none(), "{:?}", r.exclusion);
    assert!(r
        .base
        .iter()
        .any(|c| c.path == "src/histogram.cc" && c.lines.len() > 20));
    // Checked by hand against fixtures/cpp/src/histogram.cc: ToAscii's body (52-65) only
    // AsciiBarsScaleToPeak reaches; Percentile's loop (39-47) only the TEST_P
    // UpperEdgeOfBucket reaches (so its gtest filter selected the instantiated cases).
    let blocks: Vec<(&str, u32, u32)> = r
        .unique_blocks
        .iter()
        .map(|b| (b.path.as_str(), b.start_line, b.end_line))
        .collect();
    assert_eq!(
        blocks,
        vec![("src/histogram.cc", 52, 65), ("src/histogram.cc", 39, 47)]
    );
    assert!(r.unique_blocks[0].code.contains("std::string out;"));
    let tier = |p: &str| r.tiers.iter().find(|t| t.path == p).map(|t| t.tier);
    assert_eq!(tier("src/histogram.cc"), Some(ContextTier::Peer));
    assert_eq!(tier("src/ring_buffer.cc"), Some(ContextTier::Repo));
}

/// A TEST that passes with its file but not alone (it counts on the TEST before it) has no
/// lines of its own to measure: the problem is left out as flaky, and the record says which
/// TEST and how it failed alone.
/// Writes a C++ repository `name` below `dir` (a `clover.toml`: sources and headers in `src`,
/// tests in `tests`, `gtest_main` linked) holding `files`; its folder and problems.
fn cpp_repo(dir: &Path, name: &str, files: &[(&str, &str)]) -> (PathBuf, Vec<Problem>) {
    let repo_dir = dir.join(name);
    let manifest = format!(
        "[[repo]]\nname = \"{name}\"\npath = \".\"\nlanguage = \"cpp\"\n\
         source_dirs = [\"src\"]\ntest_dirs = [\"tests\"]\ninclude_dirs = [\"src\"]\n\
         cxxflags = [\"-std=c++17\", \"-O0\"]\nlink = [\"gtest_main\", \"gtest\", \"pthread\"]\n"
    );
    for (path, text) in [("clover.toml", manifest.as_str())]
        .into_iter()
        .chain(files.iter().copied())
    {
        let p = repo_dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let repo = &RepoConfig::resolve(None, None, Some(&repo_dir)).unwrap()[0];
    let problems = extract(repo);
    (repo_dir, problems)
}

#[test]
fn a_cpp_test_that_fails_alone_is_left_out() {
    let (Some(()), Some(())) = (clover_testkit::root(), clover_testkit::cpp_toolchain()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (repo_dir, problems) = cpp_repo(
        dir.path(),
        "tally",
        &[
            ("src/tally.h", "namespace tally {\nint Next();\n}\n"),
            (
                "src/tally.cc",
                "#include \"tally.h\"\n\nnamespace tally {\nstatic int n = 0;\n\
                 int Next() { return ++n; }\n}  // namespace tally\n",
            ),
            (
                "tests/tally_test.cc",
                "#include <gtest/gtest.h>\n\n#include \"tally.h\"\n\n\
                 TEST(Tally, First) { EXPECT_EQ(tally::Next(), 1); }\n\n\
                 TEST(Tally, Second) { EXPECT_EQ(tally::Next(), 2); }\n",
            ),
        ],
    );
    let input = write_problems(dir.path(), &problems);
    let r = repo_dir.display().to_string();
    let (records, stderr) = calibrate(&input, &["--repo", &r, "--runs", "2"]);
    let rec = &records["tally/src/tally.cc"];
    let e = rec.exclusion.as_ref().expect("left out");
    assert_eq!(e.reason, ExclusionReason::Flaky, "{stderr}");
    assert!(
        e.detail
            .starts_with("tally.second passes with its file but is failed alone"),
        "{}",
        e.detail
    );
    // The two whole runs passed.
    assert_eq!(rec.runs, vec![Outcome::Passed; 2]);
    assert!(rec.unique_blocks.is_empty() && rec.tiers.is_empty());
}

/// The file of one empty TEST gives the same lines to every problem of a repository, so it is
/// built and run once per repository: four problems of the fixture compile five test files,
/// not eight, and share one `empty`. The header-only small_vector.h, compiled only into its
/// test, has its lines all the same.
#[test]
fn the_empty_test_is_built_once_per_repository() {
    let (Some(()), Some(())) = (clover_testkit::root(), clover_testkit::cpp_toolchain()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fixture = clover_testkit::fixture("cpp");
    let repo = &RepoConfig::resolve(None, None, Some(&fixture)).unwrap()[0];
    let problems = extract(repo);
    assert_eq!(problems.len(), 4);
    let input = write_problems(dir.path(), &problems);
    let f = fixture.display().to_string();
    let (records, stderr, summary) = calibrate_with_summary(&input, &["--repo", &f, "--runs", "1"]);
    assert!(stderr.contains("cppfix: kept 4"), "{stderr}");
    assert_eq!(summary["cppfix"]["test_builds"], 5, "{summary}");
    let empties: Vec<_> = records.values().map(|r| &r.empty).collect();
    assert!(empties.windows(2).all(|w| w[0] == w[1]), "{empties:?}");
    let header_only = records
        .values()
        .find(|r| r.id.ends_with("src/small_vector.h"))
        .expect("the header-only problem");
    let focal: usize = header_only
        .base
        .iter()
        .filter(|f| f.path == "src/small_vector.h")
        .map(|f| f.lines.len())
        .sum();
    assert!(
        header_only.exclusion.is_none() && focal > 20,
        "{header_only:?}"
    );
}

/// The problems of the calibration fixture of edge cases (`tests/data/pyedge`) whose id holds
/// `file`.
fn pyedge(file: &str) -> Vec<Problem> {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pyedge");
    let repo = &RepoConfig::resolve(None, None, Some(&fixture)).unwrap()[0];
    extract(repo)
        .into_iter()
        .filter(|p| p.id.contains(file))
        .collect()
}

/// Calibrates problems of the edge-case fixture `runs` times: the records by id, stderr and
/// the summary; `None` without the tools.
fn calibrate_pyedge(
    problems: &[Problem],
    runs: u32,
) -> Option<(
    BTreeMap<String, CalibratedProblem>,
    String,
    serde_json::Value,
)> {
    let runs = runs.to_string();
    calibrate_pyedge_with(problems, &["--runs", &runs])
}

/// [`calibrate_pyedge`] with calibrate's arguments but the repository's.
fn calibrate_pyedge_with(
    problems: &[Problem],
    extra: &[&str],
) -> Option<(
    BTreeMap<String, CalibratedProblem>,
    String,
    serde_json::Value,
)> {
    let (Some(python), Some(())) = (clover_testkit::python(), clover_testkit::root()) else {
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = write_problems(dir.path(), problems);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pyedge");
    let args = python_args(&python, &fixture);
    let mut a = args_ref(&args);
    a.extend(extra);
    Some(calibrate_with_summary(&input, &a))
}

/// Covered lines per file of a record's `base`.
fn base_lines(r: &CalibratedProblem) -> Vec<(String, Vec<u32>)> {
    r.base
        .iter()
        .map(|f| (f.path.clone(), f.lines.iter().collect()))
        .collect()
}

/// The covered lines of `path` among `files`.
fn lines_in(files: &[FileCoverage], path: &str) -> Vec<u32> {
    files
        .iter()
        .find(|f| f.path == path)
        .map(|f| f.lines.iter().collect())
        .unwrap_or_default()
}

/// Each test runs in a fork of the process that collected its group (`_clover_calibrate.py`):
/// a table a module builds on its first call is in the lines of every test that calls it, not
/// only of the first (a module-scoped fixture is set up for each), so one process per test
/// file sees what one per problem sees, warm and cold; and a test that ends its process costs
/// only its own problem.
#[test]
fn every_test_starts_from_the_collected_state_and_one_that_ends_its_process_costs_itself() {
    let mut problems = pyedge("test_rates.py");
    problems.extend(pyedge("test_dies.py"));
    assert_eq!(problems.len(), 5);
    let Some((fast, stderr, _)) = calibrate_pyedge(&problems, 1) else {
        return;
    };
    for test in ["test_convert_eur", "test_convert_usd"] {
        let r = &fast[&format!("pyedge/tests/test_rates.py::{test}")];
        assert!(r.exclusion.is_none(), "{test}: {:?} {stderr}", r.exclusion);
        let lines = lines_in(&r.base, "src/a/rates.py");
        assert!(
            lines.contains(&7),
            "{test} does not build the table: {lines:?}"
        );
        assert!(!lines_in(&r.empty, "src/a/rates.py").contains(&7), "{test}");
    }
    let dies = &fast["pyedge/tests/test_dies.py::test_ends_its_process"];
    let e = dies
        .exclusion
        .as_ref()
        .expect("the test that ends its process");
    assert_eq!(e.reason, ExclusionReason::Error, "{}", e.detail);
    assert!(e.detail.contains("exited with status 3"), "{}", e.detail);
    let killed = &fast["pyedge/tests/test_dies.py::test_kills_its_process"];
    let e = killed
        .exclusion
        .as_ref()
        .expect("the test that kills its process");
    assert_eq!(e.reason, ExclusionReason::Error, "{}", e.detail);
    assert!(e.detail.contains("was killed by signal 9"), "{}", e.detail);
    let after = &fast["pyedge/tests/test_dies.py::test_shout_after"];
    assert!(after.exclusion.is_none(), "{:?} {stderr}", after.exclusion);
    assert_eq!(lines_in(&after.base, "src/a/util.py"), vec![2]);
    for other in [
        &["--runs", "1", "--per-test"][..],
        &["--runs", "1", "--cold"],
    ] {
        let (records, _, _) = calibrate_pyedge_with(&problems, other).unwrap();
        assert_same_lines(&fast, &records);
        assert_eq!(
            records["pyedge/tests/test_dies.py::test_ends_its_process"].exclusion, dies.exclusion,
            "{other:?}"
        );
    }
}

#[test]
fn same_named_modules_of_two_sources_keep_their_lines() {
    let problems = pyedge("test_util.py");
    assert_eq!(problems.len(), 2);
    let Some((records, stderr, _)) = calibrate_pyedge(&problems, 1) else {
        return;
    };
    let triple = &records["pyedge/tests/test_util.py::test_triple"];
    assert!(
        triple.exclusion.is_none(),
        "{:?} {stderr}",
        triple.exclusion
    );
    assert_eq!(base_lines(triple), [("src/b/util.py".into(), vec![6, 7])]);
    let shout = &records["pyedge/tests/test_util.py::test_shout"];
    assert_eq!(base_lines(shout), [("src/a/util.py".into(), vec![2])]);
}

/// A class-level `parametrize` applies to the empty test placed in the class too: it must
/// collect there, and no problem of the file is lost to it.
#[test]
fn the_empty_test_collects_in_a_parametrized_class() {
    let mut problems = pyedge("test_params.py");
    assert_eq!(problems.len(), 3);
    let Some((records, stderr, _)) = calibrate_pyedge(&problems, 1) else {
        return;
    };
    for (id, r) in &records {
        assert!(r.exclusion.is_none(), "{id}: {:?} {stderr}", r.exclusion);
    }
    let triple = &records["pyedge/tests/test_params.py::TestTriple::test_triple"];
    assert_eq!(base_lines(triple), [("src/b/util.py".into(), vec![6, 7])]);
    // The empty test ran in the class, once per parameter, and reached nothing.
    assert!(triple.empty.is_empty(), "{:?}", triple.empty);

    // A class that does not collect (its mark names an argument the test does not take)
    // costs the problem whose file holds it, not the module-level test beside it.
    let broken = "pyedge/tests/test_params.py::TestTriple::test_triple";
    let py = problems
        .iter_mut()
        .find(|p| p.id == broken)
        .and_then(|p| p.python.as_mut())
        .unwrap();
    py.problem_text = py.problem_text.replace(
        r#"parametrize("n", [1, 2])"#,
        r#"parametrize("n,m", [(1, 3)])"#,
    );
    let (records, stderr, _) = calibrate_pyedge(&problems, 1).unwrap();
    let e = records[broken].exclusion.as_ref().expect("excluded");
    assert_eq!(e.reason, ExclusionReason::CollectionError, "{}", e.detail);
    for (id, r) in records.iter().filter(|(id, _)| *id != broken) {
        assert!(r.exclusion.is_none(), "{id}: {:?} {stderr}", r.exclusion);
    }
}

/// A background thread that reaches another line of an unrelated file in some runs changes
/// nothing the benchmark takes from the test: kept, the variation noted.
#[test]
fn lines_that_vary_outside_what_the_benchmark_uses_are_not_flaky() {
    let problems = pyedge("test_noise.py");
    assert_eq!(problems.len(), 2);
    // The thread picks one of two lines: 14 runs all alike happen once in 8192 calibrations.
    let Some((records, stderr, summary)) = calibrate_pyedge(&problems, 14) else {
        return;
    };
    let noisy = &records["pyedge/tests/test_noise.py::test_triple_with_noise"];
    assert!(noisy.exclusion.is_none(), "{:?}", noisy.exclusion);
    let tier = |path: &str| noisy.tiers.iter().find(|t| t.path == path).map(|t| t.tier);
    assert_eq!(tier("src/b/util.py"), Some(ContextTier::Peer));
    assert_eq!(tier("src/a/util.py"), Some(ContextTier::Other));
    assert!(
        stderr.contains("note: pyedge/tests/test_noise.py::test_triple_with_noise: covered lines of src/a/util.py differ"),
        "{stderr}"
    );
    assert_eq!(summary["pyedge"]["kept_lines_vary"], 1, "{summary}");
    assert_eq!(summary["pyedge"]["kept"], 2, "{summary}");
}

/// Failure messages hold an object's address and a log line's date and time; two
/// calibrations write the same bytes.
#[test]
fn output_is_byte_identical_across_calibrations() {
    let mut problems = pyedge("test_address.py");
    problems.extend(pyedge("test_logline.py"));
    assert_eq!(problems.len(), 2);
    let out = |i: usize| {
        let (records, _, _) = calibrate_pyedge(&problems, 1)?;
        let r = &records["pyedge/tests/test_address.py::test_box_is_none"];
        let e = r.exclusion.as_ref().expect("the failing test is excluded");
        assert_eq!(e.reason, ExclusionReason::Failed);
        assert!(e.detail.contains("object at 0x…>"), "{i}: {}", e.detail);
        let logged = &records["pyedge/tests/test_logline.py::test_log_line_is_the_message"];
        let e = logged
            .exclusion
            .as_ref()
            .expect("the failing test is excluded");
        assert!(e.detail.contains("in '[…] boom'"), "{i}: {}", e.detail);
        Some(serde_json::to_vec(&[r, logged]).unwrap())
    };
    assert_eq!(out(1), out(2));
}

/// Groups (one a test file) run as they are read, `--jobs` at once, and end in whatever order
/// their runs take; the records are written in the input's order all the same, the file
/// byte for byte the one a single job writes.
#[test]
fn records_are_written_in_the_input_s_order_whatever_order_groups_end_in() {
    let files = [
        "test_params.py",
        "test_util.py",
        "test_table.py",
        "test_rates.py",
        "test_registry.py",
        "test_described.py",
    ];
    let Some((dir, input)) = pyedge_input(&files) else {
        return;
    };
    let ids: Vec<String> = files.iter().flat_map(|f| pyedge(f)).map(|p| p.id).collect();
    let written = |jobs: &str| {
        let out = dir.path().join(format!("out-{jobs}.jsonl"));
        calibrate_pyedge_to(&input, &out, &["--jobs", jobs]);
        let text = std::fs::read_to_string(&out).unwrap();
        let order: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<CalibratedProblem>(l).unwrap().id)
            .collect();
        assert_eq!(order, ids, "--jobs {jobs}");
        text
    };
    assert_eq!(written("3"), written("1"));
}

/// A problem calibrate cannot calibrate has no record, is reported on stderr, and is still
/// counted in the summary: the summary accounts for every problem of the input.
#[test]
fn a_problem_that_fails_is_counted_in_the_summary() {
    let (Some(python), Some(())) = (clover_testkit::python(), clover_testkit::root()) else {
        return;
    };
    let mut problems = pyedge("test_address.py");
    problems.extend(pyedge("test_util.py"));
    assert_eq!(problems.len(), 3);
    problems[0]
        .python
        .as_mut()
        .unwrap()
        .problem_declaration_line = 9999;
    let dir = tempfile::tempdir().unwrap();
    let input = write_problems(dir.path(), &problems);
    let out = dir.path().join("out.jsonl");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pyedge");
    let run = Command::new(env!("CARGO_BIN_EXE_clover-calibrate"))
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .args(python_args(&python, &fixture))
        .args(["--runs", "1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("problem_declaration_line"), "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{}.summary.json", out.display())).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["pyedge"]["failed"], 1, "{summary}");
    assert_eq!(summary["pyedge"]["kept"], 2, "{summary}");
}

/// A C++ TEST whose thread reaches one of two functions of another file at random: the focal
/// file's lines are the same in every run, so the problem is kept and the variation noted.
#[test]
fn a_cpp_test_whose_thread_varies_outside_the_focal_file_is_kept() {
    let (Some(()), Some(())) = (clover_testkit::root(), clover_testkit::cpp_toolchain()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (repo_dir, problems) = cpp_repo(
        dir.path(),
        "noisy",
        &[
            ("src/tally.h", "namespace tally {\nint Twice(int x);\n}\n"),
            (
                "src/tally.cc",
                "#include \"tally.h\"\n\nnamespace tally {\nint Twice(int x) { return 2 * x; }\n}\n",
            ),
            ("src/noise.h", "namespace noise {\nint Left();\nint Right();\n}\n"),
            (
                "src/noise.cc",
                "#include \"noise.h\"\n\nnamespace noise {\nint Left() { return 1; }\n\n\
                 int Right() { return 2; }\n}\n",
            ),
            (
                "tests/tally_test.cc",
                "#include <gtest/gtest.h>\n\n#include <random>\n#include <thread>\n\n\
                 #include \"noise.h\"\n#include \"tally.h\"\n\n\
                 TEST(Tally, Twice) {\n  std::thread t([] {\n\
                 if (std::random_device{}() % 2) noise::Left(); else noise::Right();\n  });\n\
                 EXPECT_EQ(tally::Twice(2), 4);\n  t.join();\n}\n",
            ),
        ],
    );
    let input = write_problems(dir.path(), &problems);
    let r = repo_dir.display().to_string();
    // 12 runs all alike happen once in 2048 calibrations.
    let (records, stderr, summary) =
        calibrate_with_summary(&input, &["--repo", &r, "--runs", "12"]);
    let rec = &records["noisy/src/tally.cc"];
    assert!(rec.exclusion.is_none(), "{:?} {stderr}", rec.exclusion);
    assert!(
        stderr.contains("note: noisy/src/tally.cc: covered lines of src/noise.cc differ"),
        "{stderr}"
    );
    assert_eq!(summary["noisy"]["kept_lines_vary"], 1, "{summary}");
}

/// A module imported first inside a test puts its import-time lines (module level, decorators,
/// `def` lines) in that test's lines alone; an empty test that imports it covers them too, so
/// they are offered as no unique block. (The body of a function called while such a module
/// is imported, here `register`'s one line, runs in the test, not before the first test as
/// `tests/test_table.py`'s does: it is kept short so as not to make a block of its own.)
#[test]
fn lines_any_import_runs_make_no_unique_block() {
    let problems = pyedge("test_registry.py");
    assert_eq!(problems.len(), 2);
    let Some((records, stderr, _)) = calibrate_pyedge(&problems, 1) else {
        return;
    };
    let r = &records["pyedge/tests/test_registry.py::test_registry_imported_in_the_test"];
    assert!(r.exclusion.is_none(), "{:?} {stderr}", r.exclusion);
    // The test did run the module's import-time lines...
    let registry = lines_in(&r.base, "src/b/registry.py");
    assert!(
        registry.contains(&1) && registry.contains(&21),
        "{registry:?}"
    );
    // ...and none of them is offered as a block.
    assert_eq!(r.unique_blocks, vec![], "{:?}", r.unique_blocks);
}

/// An interpreter without pytest is found once, before the first run, and stops calibrate
/// as bad usage with how to fix it (it used to end every problem as `excluded_error` and exit
/// 0); a good one is reported once with its versions; a repository that cannot be opened is
/// bad usage too.
#[test]
fn an_interpreter_without_pytest_stops_calibrate_as_bad_usage() {
    let (Some(python), Some(())) = (clover_testkit::python(), clover_testkit::root()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fixture = clover_testkit::fixture("python");
    let repo = &RepoConfig::resolve(None, None, Some(&fixture)).unwrap()[0];
    let problems: Vec<Problem> = extract(repo)
        .into_iter()
        .filter(|p| p.id.contains("test_money.py"))
        .collect();
    let input = write_problems(dir.path(), &problems);
    let venv = dir.path().join("bare");
    let made = Command::new(&python)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success());
    let run = |python: &Path, repo: &Path| {
        Command::new(env!("CARGO_BIN_EXE_clover-calibrate"))
            .arg(&input)
            .args(["--repo", repo.to_str().unwrap(), "--python"])
            .arg(python)
            .output()
            .unwrap()
    };
    let out = run(&venv.join("bin/python"), &fixture);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("No module named 'pytest'") && stderr.contains("pip install"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("cannot run clover's tests").count(),
        1,
        "{stderr}"
    );
    let out = run(&python, &fixture);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches(", pytest ").count(),
        1,
        "versions once: {stderr}"
    );
    let out = run(&python, Path::new("/nonexistent/clover-repo"));
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs the binary on `input` with the edge-case fixture, writing `out`; its stderr.
fn calibrate_pyedge_to(input: &Path, out: &Path, args: &[&str]) -> String {
    let python = clover_testkit::python().expect("checked by the caller");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pyedge");
    let run = Command::new(env!("CARGO_BIN_EXE_clover-calibrate"))
        .arg(input)
        .arg("-o")
        .arg(out)
        .args(python_args(&python, &fixture))
        .args(["--runs", "1"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "calibrate failed: {stderr}");
    stderr
}

/// The problems of `files` of the edge-case fixture, written to a temporary folder: the
/// folder and the input file; `None` without the tools.
fn pyedge_input(files: &[&str]) -> Option<(tempfile::TempDir, PathBuf)> {
    let (Some(_), Some(())) = (clover_testkit::python(), clover_testkit::root()) else {
        return None;
    };
    let problems: Vec<Problem> = files.iter().flat_map(|f| pyedge(f)).collect();
    let dir = tempfile::tempdir().unwrap();
    let input = write_problems(dir.path(), &problems);
    Some((dir, input))
}

/// The records of a mutants sidecar, in its order.
fn sidecar(path: &Path) -> Vec<ProblemMutants> {
    let mut reader = RecordReader::open(Some(path), 1 << 30).unwrap();
    let mut records = Vec::new();
    while let Some(r) = reader.next_record::<ProblemMutants>() {
        records.push(r.unwrap().1);
    }
    records
}

/// `src/a/biggest.py`'s target body has six mutation sites. The one on line 3 (`return b` →
/// `return None`) is never drawn: `test_biggest` never runs that line, so no mutant there can
/// be killed. Of the others, the `if` negated, `is` → `is not`, `>=` → `<` and the returned value
/// → `None` change what the test sees, `>=` → `>` (equal arguments) cannot. The sidecar keeps
/// the four killed ones, each with the test that killed it, and records the equivalent one as
/// survived; the failing problem of `test_address.py` gets no sidecar record.
#[test]
fn the_mutants_sidecar_keeps_what_the_ground_truth_kills() {
    let Some((dir, input)) = pyedge_input(&["test_biggest.py", "test_address.py"]) else {
        return;
    };
    let out = dir.path().join("out.jsonl");
    let stderr = calibrate_pyedge_to(&input, &out, &["--mutants"]);
    assert!(
        stderr.contains("mutants: 1 problems, 5 sampled, 4 kept, 1 survived, 0 invalid, "),
        "{stderr}"
    );
    let records = sidecar(&dir.path().join("out.jsonl.mutants.jsonl"));
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert_eq!(r.id, "pyedge/tests/test_biggest.py::test_biggest");
    assert_eq!(r.max_mutants, 20, "the default K");
    assert_eq!(r.candidates, 5, "the sites of the lines the test reached");
    let kept: Vec<(&str, &str, &[String])> = r
        .kept
        .iter()
        .map(|m| {
            (
                m.id.as_str(),
                m.replacement.as_str(),
                m.killed_by.as_slice(),
            )
        })
        .collect();
    let killer = ["tests/tmp_test_test_biggest_0.py::test_biggest".to_string()];
    assert_eq!(
        kept,
        [
            (
                "src/a/biggest.py:2:8:negate_condition:0",
                "not (a is None)",
                &killer[..]
            ),
            ("src/a/biggest.py:2:10:comparison:0", "is not", &killer[..]),
            ("src/a/biggest.py:4:12:return_value:0", "None", &killer[..]),
            ("src/a/biggest.py:4:19:comparison:0", "<", &killer[..]),
        ]
    );
    assert_eq!(r.survived, ["src/a/biggest.py:4:19:boundary:0"]);
    assert!(r.invalid.is_empty());
}

/// Two calibrations with one seed write the same sidecar bytes; another seed is recorded as
/// such.
#[test]
fn the_mutants_sidecar_is_byte_identical_for_a_seed() {
    let Some((dir, input)) = pyedge_input(&["test_biggest.py", "test_util.py"]) else {
        return;
    };
    let bytes = |name: &str, seed: &str| {
        let out = dir.path().join(name);
        let sidecar = dir.path().join(format!("{name}.sidecar"));
        calibrate_pyedge_to(
            &input,
            &out,
            &[
                "--mutants",
                "2",
                "--mutants-seed",
                seed,
                "--mutants-out",
                sidecar.to_str().unwrap(),
            ],
        );
        std::fs::read(sidecar).unwrap()
    };
    let first = bytes("a.jsonl", "7");
    assert_eq!(first, bytes("b.jsonl", "7"));
    let records = sidecar(&dir.path().join("a.jsonl.sidecar"));
    assert_eq!(records.len(), 3, "every kept problem has a record");
    assert!(records.iter().all(|r| r.max_mutants == 2));
    bytes("c.jsonl", "8");
    let other = sidecar(&dir.path().join("c.jsonl.sidecar"));
    assert_ne!(other[0].seed, records[0].seed);
}

/// The ground truth's mutant runs go through warm workers unless `--cold`, and the sidecar is
/// the same bytes both ways: a mutant of a body that ran at import (`build_table`, run while
/// `table.py` is imported) and mutants of bodies only tests run alike.
#[test]
fn the_mutants_sidecar_is_the_same_warm_and_cold() {
    let Some((dir, input)) = pyedge_input(&["test_biggest.py", "test_util.py", "test_table.py"])
    else {
        return;
    };
    let bytes = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec!["--mutants", "6"];
        args.extend_from_slice(extra);
        calibrate_pyedge_to(&input, &out, &args);
        std::fs::read_to_string(dir.path().join(format!("{name}.mutants.jsonl"))).unwrap()
    };
    let warm = bytes("warm.jsonl", &[]);
    let cold = bytes("cold.jsonl", &["--cold"]);
    assert_eq!(warm, cold);
    let records = sidecar(&dir.path().join("warm.jsonl.mutants.jsonl"));
    assert!(records.len() >= 3, "{records:?}");
    assert!(
        records
            .iter()
            .any(|r| r.kept.iter().any(|m| m.path == "src/a/table.py")),
        "a mutant of the module run at import is kept: {records:?}"
    );
}

/// --resume writes each problem's sidecar record once: after a whole run, after a run that
/// stopped between the sidecar record and the output record, and after a run without
/// --mutants (the output's kept problems get their mutants, without being calibrated again).
#[test]
fn resume_does_not_duplicate_sidecar_records() {
    let Some((dir, input)) = pyedge_input(&["test_biggest.py", "test_util.py"]) else {
        return;
    };
    let out = dir.path().join("out.jsonl");
    let mutants = dir.path().join("out.jsonl.mutants.jsonl");
    calibrate_pyedge_to(&input, &out, &["--mutants"]);
    let whole = std::fs::read_to_string(&mutants).unwrap();
    assert_eq!(whole.lines().count(), 3);

    let stderr = calibrate_pyedge_to(&input, &out, &["--mutants", "--resume"]);
    assert_eq!(std::fs::read_to_string(&mutants).unwrap(), whole);
    assert!(stderr.contains("mutants: 0 problems"), "{stderr}");

    // The output loses its last record, which the sidecar has.
    let output = std::fs::read_to_string(&out).unwrap();
    let kept: Vec<&str> = output.lines().collect();
    std::fs::write(&out, kept[..kept.len() - 1].join("\n") + "\n").unwrap();
    calibrate_pyedge_to(&input, &out, &["--mutants", "--resume"]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), output);
    assert_eq!(std::fs::read_to_string(&mutants).unwrap(), whole);

    let plain = dir.path().join("plain.jsonl");
    calibrate_pyedge_to(&input, &plain, &[]);
    assert!(!dir.path().join("plain.jsonl.mutants.jsonl").exists());
    let stderr = calibrate_pyedge_to(&input, &plain, &["--mutants", "--resume"]);
    assert!(stderr.contains("mutants: 3 problems"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("plain.jsonl.mutants.jsonl")).unwrap(),
        whole
    );
}

/// `--mutants` needs a file to write its sidecar beside (or `--mutants-out`): stdout holds the
/// calibrated records, so without either it is bad usage, before any run.
#[test]
fn mutants_without_a_place_for_the_sidecar_is_bad_usage() {
    let Some((dir, input)) = pyedge_input(&["test_biggest.py"]) else {
        return;
    };
    let python = clover_testkit::python().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pyedge");
    let run = Command::new(env!("CARGO_BIN_EXE_clover-calibrate"))
        .arg(&input)
        .args(python_args(&python, &fixture))
        .arg("--mutants")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--mutants-out FILE"), "{stderr}");
    assert!(run.stdout.is_empty(), "nothing calibrated");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "the input alone"
    );
}

/// Groups run in forks of a warm pytest worker (the default) or in fresh interpreters
/// (`--cold`): the same records on the fixture and on a corpus package.
#[test]
fn warm_and_cold_calibrations_write_the_same_records() {
    let (Some(python), Some(())) = (clover_testkit::python(), clover_testkit::root()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fixture = clover_testkit::fixture("python");
    let repo = &RepoConfig::resolve(None, None, Some(&fixture)).unwrap()[0];
    // Not the fixture's flaky test: it fails at random, whatever runs it.
    let problems: Vec<Problem> = extract(repo)
        .into_iter()
        .filter(|p| !p.id.contains("test_flaky.py"))
        .collect();
    let input = write_problems(dir.path(), &problems);
    let args = python_args(&python, &fixture);
    let mut warm_args = args_ref(&args);
    warm_args.extend(["--runs", "2"]);
    let (warm, stderr) = calibrate(&input, &warm_args);
    let mut cold_args = warm_args.clone();
    cold_args.push("--cold");
    let (cold, _) = calibrate(&input, &cold_args);
    assert!(warm.len() >= 30, "{stderr}");
    assert_same_records(&warm, &cold);

    let Some(manifest) = clover_testkit::corpus_manifest() else {
        return;
    };
    let name = "itsdangerous";
    let repo = &RepoConfig::resolve(Some(&manifest), Some(name), None).unwrap()[0];
    let input = write_problems(dir.path(), &extract(repo));
    let m = manifest.display().to_string();
    let (warm, _) = calibrate(&input, &["--manifest", &m, "--runs", "1"]);
    let (cold, _) = calibrate(&input, &["--manifest", &m, "--runs", "1", "--cold"]);
    assert_same_records(&warm, &cold);
}

/// Asserts two calibrations wrote the same records, naming the first field that differs.
fn assert_same_records(
    a: &BTreeMap<String, CalibratedProblem>,
    b: &BTreeMap<String, CalibratedProblem>,
) {
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (id, x) in a {
        let (x, y) = (
            serde_json::to_value(x).unwrap(),
            serde_json::to_value(&b[id]).unwrap(),
        );
        if x != y {
            let fields: Vec<String> = x
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, v)| y.get(k.as_str()) != Some(v))
                .map(|(k, v)| format!("{k}: {v} / {}", y[k.as_str()]))
                .collect();
            panic!("{id} differs: {}", fields.join("; "));
        }
    }
}

/// A function body that runs while the module is imported (`SQUARES = build_table(3)` in
/// `src/a/table.py`) is covered by any candidate, `assert True` included, in sandbox-run's
/// fresh process: calibrate measures the import and collection phase the same way, so the
/// body makes no unique block and counts among the target's `import_lines`, on every path
/// (warm, cold, per test).
#[test]
fn a_function_body_run_at_import_is_no_block_and_no_call() {
    let problems = pyedge("test_table.py");
    assert_eq!(problems.len(), 2);
    let Some((records, stderr, _)) = calibrate_pyedge(&problems, 1) else {
        return;
    };
    let id = "pyedge/tests/test_table.py::test_build_table_with_extra";
    let r = &records[id];
    assert!(r.exclusion.is_none(), "{:?} {stderr}", r.exclusion);
    let table = |files: &[FileCoverage]| lines_in(files, "src/a/table.py");
    // The test ran the whole body (the `extra` branch, line 9, only it)...
    assert_eq!(table(&r.base), (2..=10).collect::<Vec<_>>(), "{:?}", r.base);
    // ...but importing the module runs all of it but line 9: no block of five lines is left.
    assert_eq!(r.unique_blocks, vec![], "{:?}", r.unique_blocks);
    let target = r
        .targets
        .iter()
        .find(|t| t.name == "build_table")
        .unwrap_or_else(|| panic!("{:?}", r.targets));
    let body_at_import: Vec<u32> = target.import_lines.iter().collect();
    assert_eq!(body_at_import, [1, 2, 3, 4, 5, 6, 7, 8, 10]);

    // The same records when groups run cold and when each problem runs alone.
    let dir = tempfile::tempdir().unwrap();
    let input = write_problems(dir.path(), &problems);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pyedge");
    let python = clover_testkit::python().unwrap();
    let args = python_args(&python, &fixture);
    for path in [&["--cold"][..], &["--per-test"], &["--per-test", "--cold"]] {
        let mut a = args_ref(&args);
        a.extend(["--runs", "1"]);
        a.extend(path);
        let (other, _) = calibrate(&input, &a);
        assert_same_records(&records, &other);
    }

    // A copied-operand candidate, `assert True` in the test's place, run as sandbox-run runs
    // a candidate: it covers the body's import-time lines and nothing else of the target, and
    // no line of a block calibrate offers.
    let copied = copied_operand_coverage(r, &fixture);
    let free = lines_in(&copied, "src/a/table.py");
    assert!(free.contains(&2) && free.contains(&7), "{free:?}");
    let span = clover_protocol::LineRanges::from_lines(target.start_line..=target.end_line);
    let called: Vec<u32> = span
        .difference(&target.import_lines)
        .iter()
        .filter(|l| free.contains(l))
        .collect();
    assert_eq!(called, [] as [u32; 0], "assert True calls the target");
    for record in records.values() {
        assert_no_block_is_free(record, &copied_operand_coverage(record, &fixture));
    }
}

/// A test's fixtures and setup run for the empty test too (a class's `setup_method` here):
/// what the empty test covers is no unique block, though no peer covers it.
#[test]
fn lines_the_empty_test_runs_make_no_unique_block() {
    let problems = pyedge("test_described.py");
    assert_eq!(problems.len(), 2);
    let Some((records, stderr, _)) = calibrate_pyedge(&problems, 1) else {
        return;
    };
    let r = &records["pyedge/tests/test_described.py::TestDescribed::test_text"];
    assert!(r.exclusion.is_none(), "{:?} {stderr}", r.exclusion);
    let described: Vec<u32> = (23..=27).collect();
    assert_eq!(lines_in(&r.base, "src/a/table.py"), described);
    assert_eq!(lines_in(&r.empty, "src/a/table.py"), described);
    assert_eq!(r.unique_blocks, vec![], "{:?}", r.unique_blocks);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pyedge");
    let copied = copied_operand_coverage(r, &fixture);
    assert!(lines_in(&copied, "src/a/table.py").ends_with(&described));
    assert_no_block_is_free(r, &copied);
}

/// The lines a candidate that is the problem's empty variant (`assert True` in the test's
/// place) covers when it is written and run as sandbox-run writes and runs a candidate: at
/// the problem file's path, in a fresh process, the whole run measured.
fn copied_operand_coverage(r: &CalibratedProblem, fixture: &Path) -> Vec<FileCoverage> {
    let p = r.problem.python.as_ref().unwrap();
    let candidate = clover_calibrate::empty_variant(&r.problem).unwrap().text;
    let repo = &RepoConfig::resolve(None, None, Some(fixture)).unwrap()[0];
    let run = clover_pytest::PytestRun {
        repo: repo.root.clone(),
        python: clover_testkit::python().unwrap(),
        targets: vec![p.problem_file.clone()],
        files: vec![clover_sandbox::WriteFile {
            path: PathBuf::from(&p.problem_file),
            contents: candidate.into_bytes(),
        }],
        cov_sources: repo
            .source_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect(),
        cov_only: None,
        cov_contexts: false,
        witness: Vec::new(),
        env: Vec::new(),
        limits: clover_sandbox::Limits::default(),
    };
    let ran = run.run(&clover_sandbox::Sandbox::new().unwrap()).unwrap();
    assert_eq!(ran.outcome, Outcome::Passed, "{}: {:?}", r.id, ran.message);
    ran.coverage
}

/// No line of a block of `r` is among `covered`: a candidate that covers them gets no credit
/// it did not earn.
fn assert_no_block_is_free(r: &CalibratedProblem, covered: &[FileCoverage]) {
    for block in &r.unique_blocks {
        let covered = lines_in(covered, &block.path);
        let free: Vec<u32> = block.lines.iter().filter(|l| covered.contains(l)).collect();
        assert_eq!(free, [] as [u32; 0], "{}: {block:?}", r.id);
    }
}

/// The plugin takes each test's lines out of coverage.py's collector itself: the report must
/// be the one coverage.py's own context switches give. A branch-measuring run has a collector
/// of arcs, which the plugin does not take from: it switches coverage.py's context then. Both
/// runs of the fixture's suite, in place (no bytecode, no cache written), must report the same
/// lines under the same contexts, and the same executable lines; the lines run after the last
/// test's setup began are that test's either way.
#[test]
fn the_lines_taken_per_test_are_coverage_py_s_own_contexts() {
    let Some(py) = clover_testkit::python() else {
        return;
    };
    let repo = clover_testkit::fixture("python");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(format!(
            "{}.py",
            clover_calibrate::coverage_json::PLUGIN_MODULE
        )),
        clover_calibrate::coverage_json::PLUGIN,
    )
    .unwrap();
    let report = |branch: bool| -> serde_json::Value {
        let tag = if branch { "branch" } else { "lines" };
        let rc = dir.path().join(format!("{tag}.rc"));
        std::fs::write(
            &rc,
            format!(
                "[run]\nrelative_files = True\nbranch = {branch}\ninclude =\n    src/ledger/*\n"
            ),
        )
        .unwrap();
        let out = dir.path().join(format!("{tag}.json"));
        let run = Command::new(&py)
            .args([
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--cov",
                "--cov-report=",
            ])
            .arg(format!("--cov-config={}", rc.display()))
            .args([
                "-p",
                clover_calibrate::coverage_json::PLUGIN_MODULE,
                "tests",
            ])
            // Its lines vary from run to run (calibrate finds it flaky).
            .args(["--ignore", "tests/test_flaky.py"])
            .current_dir(&repo)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONPATH", dir.path())
            .env("COVERAGE_FILE", dir.path().join(format!("{tag}.coverage")))
            .env("CLOVER_CONTEXTS_OUT", &out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stdout)
        );
        let mut report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        // The file's size and time of change are no lines.
        for file in report["files"].as_object_mut().unwrap().values_mut() {
            file.as_object_mut().unwrap().remove("stat");
        }
        report
    };
    let (mut taken, mut switched) = (report(false), report(true));
    let how = |r: &mut serde_json::Value| r.as_object_mut().unwrap().remove("contexts");
    assert_eq!(how(&mut taken), Some("taken".into()));
    assert_eq!(how(&mut switched), Some("switched".into()));
    let files = taken["files"].as_object().unwrap();
    let contexts: usize = files
        .values()
        .map(|f| f["contexts"].as_object().unwrap().len())
        .sum();
    assert!(files.len() >= 3 && contexts > 50, "{taken}");
    assert!(
        files
            .values()
            .any(|f| f["contexts"].as_object().unwrap().contains_key("")),
        "what ran before the first test is in the empty context: {taken}"
    );
    assert_eq!(taken, switched);
}
