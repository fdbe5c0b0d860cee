//! Runs the real `clover-extract` binary on the checked-in fixture repositories and reads its
//! output back through the wire types.

use std::path::{Path, PathBuf};
use std::process::Command;

use clover_extract::CppUtBenchRow;
use clover_protocol::{CppPairing, Problem, RecordReader, DEFAULT_MAX_LINE_BYTES};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

fn run(args: &[&str]) -> (Vec<u8>, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_clover-extract"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn problems(stdout: Vec<u8>) -> Vec<Problem> {
    let mut reader = RecordReader::new(
        std::io::Cursor::new(stdout),
        "stdout",
        DEFAULT_MAX_LINE_BYTES,
    );
    let mut out = Vec::new();
    while let Some(r) = reader.next_record::<Problem>() {
        out.push(r.expect("a valid problem record").1);
    }
    out
}

#[test]
fn python_fixture_yields_one_problem_per_test_with_isolated_files() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("pyfix");
    copy_dir(&fixture("python"), &repo);
    let (stdout, stderr, code) = run(&["--repo", repo.to_str().unwrap(), "--write-problem-files"]);
    assert_eq!(code, 0, "{stderr}");
    let ps = problems(stdout);
    assert_eq!(ps.len(), 42, "{stderr}");
    let mut ids: Vec<&str> = ps.iter().map(|p| p.id.as_str()).collect();
    let sorted = {
        let mut s = ids.clone();
        s.sort_by_key(|id| id.split("::").next().unwrap().to_string());
        s
    };
    assert_eq!(ids, sorted, "problems come sorted by file");
    ids.dedup();
    assert_eq!(ids.len(), 42, "ids are unique");

    let sale = ps
        .iter()
        .find(|p| p.id == "pyfix/tests/test_accounts.py::test_sales_increase_income")
        .unwrap();
    let py = sale.python.as_ref().unwrap();
    assert!(py.problem_text.contains("def record_sale") && py.problem_text.contains("def dollars"));
    assert!(!py.problem_text.contains("amortization_schedule"));
    let on_disk = std::fs::read_to_string(repo.join(&py.problem_file)).unwrap();
    assert_eq!(on_disk, py.problem_text);

    let method = ps
        .iter()
        .find(|p| {
            p.id == "pyfix/tests/test_accounts.py::TestLedger::test_close_account_sweeps_balance"
        })
        .unwrap();
    let py = method.python.as_ref().unwrap();
    assert!(py.problem_text.contains("def setup_method"));
    assert!(!py.problem_text.contains("def test_account_types"));
    assert_eq!(
        py.node_id,
        format!(
            "{}::TestLedger::test_close_account_sweeps_balance",
            py.problem_file
        )
    );
    assert!(py
        .repo_refs
        .iter()
        .any(|r| r.name == "Money" && r.file.as_deref() == Some("src/ledger/money.py")));

    let unittest = ps
        .iter()
        .find(|p| {
            p.id == "pyfix/tests/test_inventory.py::FifoInventoryTest::test_write_off_expired"
        })
        .unwrap();
    assert!(unittest
        .python
        .as_ref()
        .unwrap()
        .problem_text
        .contains("def setUp(self):"));

    // Extraction is a pure function of the repository: a second run gives the same bytes.
    let (again, _, _) = run(&["--repo", repo.to_str().unwrap()]);
    let (first, _, _) = run(&["--repo", repo.to_str().unwrap()]);
    assert_eq!(again, first);
}

#[test]
fn cpp_fixture_pairs_sources_and_reports_the_rest() {
    let (stdout, stderr, code) = run(&["--repo", fixture("cpp").to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let ps = problems(stdout);
    let pairs: Vec<(&str, &str)> = ps
        .iter()
        .map(|p| {
            let c = p.cpp.as_ref().unwrap();
            (c.file_path.as_str(), c.test_path.as_str())
        })
        .collect();
    assert_eq!(
        pairs,
        vec![
            ("src/histogram.cc", "tests/histogram_unittest.cc"),
            ("src/ring_buffer.cc", "tests/ring_buffer_test.cc"),
            // A header-only source: there is no small_vector.cc.
            ("src/small_vector.h", "tests/small_vector_test.cc"),
            ("src/tokenizer.cc", "tests/tokenizer_test.cc"),
        ]
    );
    assert!(
        stderr.contains("tests/orphan_test.cc: test without source"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tests/tokenizer_unittest.cc: superseded"),
        "{stderr}"
    );

    let tok = ps[3].cpp.as_ref().unwrap();
    assert!(
        tok.code.contains(r#"constexpr char kBlockOpen[] = "/*";"#),
        "literals survive stripping"
    );
    assert!(
        !tok.code.contains("tokenizer.cc - lexer"),
        "the header comment is gone"
    );
    assert_eq!(tok.code.lines().count(), 310, "lines keep their numbers");
    assert!(tok.chunks.len() >= 2);
    for ch in &tok.chunks {
        assert!(ch.span.end_line - ch.span.start_line < 200);
    }
    assert!(tok
        .tests
        .iter()
        .any(|t| t.name == "CommentMarkersInsideStringsAreText"));
}

#[test]
fn cpp_ut_bench_format_uses_the_dataset_columns() {
    let (stdout, stderr, code) = run(&[
        "--repo",
        fixture("cpp").to_str().unwrap(),
        "--format",
        "cpp-ut-bench",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<CppUtBenchRow> = String::from_utf8(stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0].file_path, "src/histogram.cc");
    assert_eq!(rows[0].repository_name, "cppfix");
}

#[test]
fn bad_files_are_reported_and_extraction_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let tests = dir.path().join("tests");
    std::fs::create_dir_all(&tests).unwrap();
    std::fs::write(
        tests.join("test_ok.py"),
        "def test_a():\n    assert 1 == 1\n",
    )
    .unwrap();
    std::fs::write(tests.join("test_broken.py"), "def test_b(:\n    pass\n").unwrap();
    std::fs::write(tests.join("test_empty.py"), "").unwrap();
    std::fs::write(tests.join("test_latin1.py"), b"x = '\xe9'\n").unwrap();
    std::fs::write(
        tests.join("test_blob.py"),
        b"\x7fELF\x02\x01\x01\x00\x00def test_c(): pass\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("test_loop.py", tests.join("test_loop.py")).unwrap();
    std::os::unix::fs::symlink(".", tests.join("again")).unwrap();
    let fifo = Command::new("mkfifo")
        .arg(tests.join("test_fifo.py"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let root = dir.path().to_str().unwrap();
    let (stdout, stderr, code) = run(&["--repo", root, "--language", "python", "--name", "bad"]);
    assert_eq!(code, 3, "bad test files are bad input: {stderr}");
    assert_eq!(problems(stdout).len(), 1);
    for want in [
        "error: bad/tests/test_broken.py: syntax error: line 1",
        "error: bad/tests/test_latin1.py: not UTF-8",
        "error: bad/tests/test_blob.py: binary file: NUL byte at offset 7",
        "error: bad/tests/test_loop.py: unreadable: Too many levels of symbolic links",
        "error: bad/tests/test_fifo.py: unreadable: not a regular file",
        "note: bad/tests/test_empty.py: empty file",
        "5 test file(s) could not be used",
        "1 problem(s) from 1 of 7 test file(s), 6 issue(s)",
    ] {
        assert!(stderr.contains(want), "no `{want}` in:\n{stderr}");
    }

    // --on-error stop: nothing of the repository is written, and the output stays partial.
    let out = dir.path().join("out.jsonl");
    let (_, stderr, code) = run(&[
        "--repo",
        root,
        "--language",
        "python",
        "--name",
        "bad",
        "--on-error",
        "stop",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 4, "{stderr}");
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_to_string(clover_protocol::partial_path(&out)).unwrap(),
        ""
    );
}

/// A repository with a `benchmarks/` package beside its own and a conftest that tells pytest
/// not to collect two test files: the sources are the distribution's package only, the ignored
/// files give no problems (and no errors, though one is Python 2), and `--explain` says why.
#[test]
fn detection_and_collect_ignore_are_explained() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/py_layout");
    let (stdout, stderr, code) = run(&["--repo", repo.to_str().unwrap(), "--explain"]);
    assert_eq!(code, 0, "{stderr}");
    let ps = problems(stdout);
    let ids: Vec<&str> = ps.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(
        ids,
        vec![
            "py_layout/tests/test_client.py::test_client_uses_the_module_db",
            "py_layout/tests/test_utils.py::test_slugify"
        ]
    );
    // The conftest's `client` requests `db`, which this module registers under that name.
    let text = &ps[0].python.as_ref().unwrap().problem_text;
    assert!(
        text.contains("def memory_db") && !text.contains("def unrelated"),
        "{text}"
    );
    let refs = &ps[1].python.as_ref().unwrap().repo_refs;
    assert!(
        refs.iter()
            .any(|r| r.file.as_deref() == Some("falcon/_utils.py")),
        "{refs:?}"
    );
    for want in [
        "explain: py_layout: source_dirs = [falcon]: the folder named like the project `Falcon` (pyproject.toml [project] name)",
        "explain: py_layout: test_dirs = [tests]",
        "explain: py_layout:   test file tests/test_utils.py",
        "left out tests/legacy/test_old.py: never collected by pytest: tests/conftest.py lists it",
        "left out tests/test_utils_py2.py: never collected by pytest",
        "2 problem(s) from 2 of 4 test file(s), 2 issue(s)",
        "2 test file(s) left out by conftest collect_ignore",
    ] {
        assert!(stderr.contains(want), "no `{want}` in:\n{stderr}");
    }
    assert!(
        stderr.contains(
            "(pyproject.toml [project] name); left out [benchmarks]: not the distribution's"
        ),
        "{stderr}"
    );
}

/// A leveldb-shaped library: tests pair only with sources in `source_dirs` (never with the
/// interface header `include/minidb/db.h`), and a test no base name pairs is paired through
/// the headers it includes, marked as such; `--base-name-only` turns that extension off.
#[test]
fn cpp_pairs_within_source_dirs_and_by_includes() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cpp_layout");
    let pairs = |extra: &[&str]| {
        let mut args = vec!["--repo", repo.to_str().unwrap()];
        args.extend(extra);
        let (stdout, stderr, code) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        let got: Vec<(String, String, CppPairing)> = problems(stdout)
            .iter()
            .map(|p| {
                let c = p.cpp.as_ref().unwrap();
                (c.file_path.clone(), c.test_path.clone(), c.pairing)
            })
            .collect();
        (got, stderr)
    };
    let owned = |v: &[(&str, &str, CppPairing)]| -> Vec<(String, String, CppPairing)> {
        v.iter()
            .map(|(s, t, p)| (s.to_string(), t.to_string(), *p))
            .collect()
    };
    let (got, stderr) = pairs(&[]);
    assert_eq!(
        got,
        owned(&[
            ("db/db_impl.cc", "db/db_test.cc", CppPairing::Includes),
            ("db/log_reader.cc", "db/log_test.cc", CppPairing::Includes),
            ("db/log_writer.cc", "db/log_test.cc", CppPairing::Includes),
            ("util/coding.h", "util/coding_test.cc", CppPairing::BaseName),
        ]),
        "{stderr}"
    );
    assert!(
        stderr.contains("util/env_test.cc: test without source"),
        "a helper every test includes pairs nothing: {stderr}"
    );
    let (got, stderr) = pairs(&["--base-name-only"]);
    assert_eq!(
        got,
        owned(&[("util/coding.h", "util/coding_test.cc", CppPairing::BaseName)]),
        "{stderr}"
    );
    assert!(
        stderr.contains("db/db_test.cc: test without source"),
        "{stderr}"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A repository where extract finds no test is no silent `0 problem(s)`: a warning says where
/// it looked and how to point it elsewhere (the exit code stays 0: nothing was bad).
#[test]
fn a_repository_without_tests_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
    std::fs::write(dir.path().join("src/pkg/__init__.py"), "X = 1\n").unwrap();
    let (stdout, stderr, code) = run(&["--repo", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("warning:")
            && stderr.contains("no problem extracted")
            && stderr.contains("test_dirs and test_globs"),
        "{stderr}"
    );
}

/// A closed stderr (its reader gone) is no reason to stop: the records on stdout and the exit
/// code are those of a run whose stderr is read. `eprintln!` panicked there, exit 101 with
/// nothing written.
#[test]
fn a_closed_stderr_changes_neither_the_records_nor_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let tests = dir.path().join("tests");
    std::fs::create_dir_all(&tests).unwrap();
    std::fs::write(
        tests.join("test_ok.py"),
        "def test_a():\n    assert 1 == 1\n",
    )
    .unwrap();
    std::fs::write(tests.join("test_broken.py"), "def test_b(:\n    pass\n").unwrap();
    let root = dir.path().to_str().unwrap();
    let args = [
        "--repo",
        root,
        "--language",
        "python",
        "--name",
        "bad",
        "--explain",
    ];
    let (stdout, stderr, code) = run(&args);
    assert_eq!(code, 3, "a bad test file is bad input: {stderr}");
    assert!(
        stderr.contains("error: bad/tests/test_broken.py"),
        "{stderr}"
    );
    let closed = Command::new(env!("CARGO_BIN_EXE_clover-extract"))
        .args(args)
        .stderr(clover_testkit::closed_pipe())
        .output()
        .expect("the binary runs");
    assert_eq!(closed.status.code(), Some(3));
    assert_eq!(closed.stdout, stdout);
    assert_eq!(problems(closed.stdout).len(), 1);
}

/// The manifest's `deselect` leaves tests out as `pytest --deselect` does (a test, a class,
/// a file), and `--sample N` keeps the same N of a repository's problems whatever the seed's
/// machine: a subset of the whole, in the whole's order.
#[test]
fn deselected_tests_are_no_problems_and_a_sample_is_seeded() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("pyfix");
    copy_dir(&fixture("python"), &repo);
    let (all, stderr, code) = run(&["--repo", repo.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let all = problems(all);
    assert_eq!(all.len(), 42);
    let ids: Vec<String> = all.iter().map(|p| p.id.clone()).collect();

    let manifest = dir.path().join("clover.toml");
    std::fs::write(
        &manifest,
        r#"[[repo]]
name = "pyfix"
path = "pyfix"
source_dirs = ["src/ledger"]
test_dirs = ["tests"]
deselect = [
  "tests/test_accounts.py::test_sales_increase_income",
  "tests/test_accounts.py::TestLedger",
  "tests/test_inventory.py",
]
"#,
    )
    .unwrap();
    let (out, stderr, code) = run(&["--manifest", manifest.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let kept: Vec<String> = problems(out).into_iter().map(|p| p.id).collect();
    let gone = |id: &String| {
        id == "pyfix/tests/test_accounts.py::test_sales_increase_income"
            || id.starts_with("pyfix/tests/test_accounts.py::TestLedger::")
            || id.starts_with("pyfix/tests/test_inventory.py::")
    };
    let expected: Vec<String> = ids.iter().filter(|id| !gone(id)).cloned().collect();
    assert!(
        expected.len() < ids.len() - 2,
        "the fixture has what is deselected"
    );
    assert_eq!(kept, expected);
    let n = ids.len() - expected.len();
    assert!(
        stderr.contains(&format!("; {n} test(s) deselected by the manifest")),
        "{stderr}"
    );

    let sample = |seed: &str| {
        let (out, stderr, code) = run(&[
            "--repo",
            repo.to_str().unwrap(),
            "--sample",
            "10",
            "--seed",
            seed,
        ]);
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stderr.contains("a sample of 10 of its 42 problems"),
            "{stderr}"
        );
        problems(out).into_iter().map(|p| p.id).collect::<Vec<_>>()
    };
    let a = sample("3");
    assert_eq!(a.len(), 10);
    assert_eq!(a, sample("3"), "the same seed, the same sample");
    assert_ne!(a, sample("4"), "another seed, another sample");
    let in_order: Vec<String> = ids.iter().filter(|id| a.contains(id)).cloned().collect();
    assert_eq!(a, in_order, "a subset, in extraction's order");
    let (out, _, _) = run(&["--repo", repo.to_str().unwrap(), "--sample", "100"]);
    assert_eq!(
        problems(out).len(),
        42,
        "a sample larger than the repository keeps it whole"
    );
}
