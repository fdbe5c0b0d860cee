//! The streaming mode of `clover-sandbox-run`: the real binary on responses for the fixture
//! repositories, its results read back through the wire types. Needs root, the test Python
//! (`cargo xtask setup`) and, for C++, g++, GoogleTest and gcovr.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use clover_protocol::{
    ExecSpec, Language, Outcome, ProblemMutants, RecordKind, Response, RunResult, Task,
    TestOutcome, SCHEMA_VERSION,
};

fn response(id: &str, repo: &str, language: Language, path: &str, text: &str) -> Response {
    let mut scoring = BTreeMap::new();
    scoring.insert("marker".to_string(), serde_json::json!(id));
    Response {
        kind: RecordKind::Response,
        schema_version: SCHEMA_VERSION,
        id: format!("{id}@m"),
        instance_id: id.into(),
        model: "m".into(),
        task: match language {
            Language::Python => Task::CoverageTest,
            Language::Cpp => Task::CppUnitTest,
        },
        setting: "po".into(),
        repo: repo.into(),
        text: text.into(),
        error: None,
        generation: Default::default(),
        exec: ExecSpec {
            repo: repo.into(),
            language: Some(language),
            candidate_path: path.into(),
            prefix: String::new(),
            suffix: String::new(),
            selectors: Vec::new(),
        },
        scoring,
    }
}

/// `n` responses of the Python fixture (ids `<prefix>1…`), each a test that passes.
fn passing_python(prefix: &str, n: usize) -> Vec<Response> {
    (1..=n)
        .map(|i| {
            python_response(
                &format!("{prefix}{i}"),
                &format!("tests/test_{prefix}.py"),
                "def test_ok():\n    assert True\n",
            )
        })
        .collect()
}

/// A response of the Python fixture whose answer is `test` in a fenced block.
fn python_response(id: &str, path: &str, test: &str) -> Response {
    response(id, "pyfix", Language::Python, path, &fenced("python", test))
}

fn fenced(lang: &str, code: &str) -> String {
    format!("Here is the test:\n```{lang}\n{code}```\n")
}

/// Runs the binary over `responses`; returns the results it wrote, its exit code and stderr.
fn run_stage(responses: &[Response], args: &[&str]) -> (Vec<RunResult>, i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("responses.jsonl");
    let output = dir.path().join("results.jsonl");
    let text: String = responses
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&input, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_clover-sandbox-run"))
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .args(["--cache-dir"])
        .arg(dir.path().join("cache"))
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let results = std::fs::read_to_string(&output)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (results, out.status.code().unwrap_or(-1), stderr)
}

fn ready() -> Option<PathBuf> {
    clover_testkit::root()?;
    clover_testkit::python()
}

#[test]
fn python_responses_become_results_in_input_order() {
    let Some(py) = ready() else { return };
    let repo = clover_testkit::fixture("python");
    let pass = "from ledger.money import Money\n\ndef test_add():\n    assert (Money(150) + Money(50)).cents == 200\n";
    let fail =
        "from ledger.money import Money\n\ndef test_add():\n    assert Money(1).cents == 2\n";
    let mut empty = response("r3", "pyfix", Language::Python, "tests/test_c3.py", "");
    empty.error = Some("the server said 500".into());
    let responses = vec![
        python_response("r1", "tests/test_c1.py", pass),
        python_response("r2", "tests/test_c2.py", fail),
        empty,
        response(
            "r4",
            "nosuchrepo",
            Language::Python,
            "tests/test_c4.py",
            &fenced("python", pass),
        ),
        python_response("r5", "tests/test_c5.py", pass),
    ];
    let (results, code, stderr) = run_stage(
        &responses,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "--python",
            py.to_str().unwrap(),
            "--jobs",
            "2",
        ],
    );
    let ids: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["r1@m", "r2@m", "r3@m", "r5@m"], "{stderr}");
    assert_eq!(code, 3, "an unknown repository is a reported record error");
    assert!(
        stderr.contains(":4 (id r4@m)")
            && stderr.contains("unknown repository `nosuchrepo`; known: pyfix"),
        "{stderr}"
    );
    let [r1, r2, r3, r5] = &results[..] else {
        unreachable!()
    };
    assert_eq!(
        r1.outcome,
        Outcome::Passed,
        "{:?} {}",
        r1.message,
        r1.stdout_tail
    );
    assert_eq!(r1.tests.len(), 1);
    assert!(r1
        .coverage
        .iter()
        .any(|f| f.path == "src/ledger/money.py" && !f.lines.is_empty()));
    assert_eq!(r1.candidate.as_deref(), Some(pass));
    assert_eq!(r1.answer.as_deref(), Some(pass));
    assert_eq!(r1.scoring["marker"], "r1");
    assert_eq!(r1.task, Some(Task::CoverageTest));
    assert_eq!(r2.outcome, Outcome::Failed);
    assert_eq!(r2.tests[0].outcome, TestOutcome::Failed);
    assert_eq!(r2.exit_code, Some(1));
    // A failed call is not the model's answer: its own outcome, nothing run.
    assert_eq!(r3.outcome, Outcome::ApiError);
    assert!(r3
        .message
        .as_deref()
        .unwrap()
        .contains("the call failed: the server said 500"));
    assert_eq!((&r3.candidate, &r3.answer), (&None, &None));
    assert_eq!(r5.outcome, Outcome::Passed);
    assert!(!repo.join("tests/test_c1.py").exists());
}

#[test]
fn resume_skips_what_is_done() {
    let Some(py) = ready() else { return };
    let repo = clover_testkit::fixture("python");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let output = dir.path().join("out.jsonl");
    let r = |id: &str| {
        serde_json::to_string(&response(
            id,
            "pyfix",
            Language::Python,
            "tests/test_r.py",
            &fenced("python", "def test_ok():\n    assert True\n"),
        ))
        .unwrap()
            + "\n"
    };
    std::fs::write(&input, r("a")).unwrap();
    let bin = env!("CARGO_BIN_EXE_clover-sandbox-run");
    let args = |resume: bool| {
        let mut c = Command::new(bin);
        c.arg(&input).arg("-o").arg(&output);
        c.args(["--repo", repo.to_str().unwrap()]);
        c.args(["--python", py.to_str().unwrap()]);
        if resume {
            c.arg("--resume");
        }
        c
    };
    assert!(args(false).status().unwrap().success());
    std::fs::write(&input, r("a") + &r("b")).unwrap();
    let out = args(true).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 already done"));
    let ids: Vec<String> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<RunResult>(l).unwrap().id)
        .collect();
    assert_eq!(ids, ["a@m", "b@m"]);
}

fn cpp_ready() -> Option<()> {
    clover_testkit::root()?;
    clover_testkit::cpp_toolchain()
}

#[test]
fn cpp_responses_compile_run_and_cover() {
    let Some(()) = cpp_ready() else { return };
    let repo = clover_testkit::fixture("cpp");
    let good = std::fs::read_to_string(repo.join("tests/ring_buffer_test.cc")).unwrap();
    let broken = "#include \"ring_buffer.h\"\n#include <gtest/gtest.h>\nTEST(Broken, It) { textkit::NoSuchThing x; }\n";
    let failing = "#include <gtest/gtest.h>\nTEST(Fails, It) { EXPECT_EQ(1, 2); }\nTEST(Fails, Other) { EXPECT_EQ(1, 1); }\n";
    let crash = "#include <cstdlib>\n#include <gtest/gtest.h>\nTEST(Crash, It) { std::abort(); }\n";
    let p = "tests/candidate_test.cc";
    let mut filtered = response("c5", "cppfix", Language::Cpp, p, &fenced("cpp", failing));
    filtered.exec.selectors = vec!["Fails.Other".into()];
    let responses = vec![
        response("c1", "cppfix", Language::Cpp, p, &fenced("cpp", &good)),
        response("c2", "cppfix", Language::Cpp, p, &fenced("cpp", broken)),
        response("c3", "cppfix", Language::Cpp, p, &fenced("cpp", failing)),
        response("c4", "cppfix", Language::Cpp, p, &fenced("cpp", crash)),
        filtered,
    ];
    let (results, code, stderr) = run_stage(
        &responses,
        &["--repo", repo.to_str().unwrap(), "--jobs", "2"],
    );
    assert_eq!(code, 0, "{stderr}");
    let [c1, c2, c3, c4, c5] = &results[..] else {
        panic!("{results:?} {stderr}")
    };
    assert_eq!(
        c1.outcome,
        Outcome::Passed,
        "{:?}\n{}",
        c1.message,
        c1.stdout_tail
    );
    assert_eq!(c1.tests.len(), 7);
    let rb = c1
        .coverage
        .iter()
        .find(|f| f.path == "src/ring_buffer.cc")
        .unwrap_or_else(|| panic!("{:?}", c1.coverage));
    assert!(rb.lines.len() > 10);
    assert!(
        c1.coverage
            .iter()
            .all(|f| f.path != "src/tokenizer.cc" || f.lines.is_empty()),
        "counters of one run never reach another: {:?}",
        c1.coverage
    );
    assert_eq!(c2.outcome, Outcome::CompileError);
    assert!(
        c2.message.as_deref().unwrap().contains("NoSuchThing"),
        "{:?}",
        c2.message
    );
    assert_eq!(c3.outcome, Outcome::Failed);
    assert_eq!(c3.tests.len(), 2);
    assert_eq!(c4.outcome, Outcome::Killed, "{:?}", c4.message);
    assert_eq!(c4.signal, Some(libc::SIGABRT));
    assert_eq!(c5.outcome, Outcome::Passed, "{:?}", c5.message);
    assert_eq!(c5.tests.len(), 1);
    assert!(!repo.join(".clover-build").exists() && !repo.join(p).exists());
}

/// The chunks of one C++ source join into one file; one chunk whose call failed makes the
/// file's result `api_error`, and nothing is compiled.
#[test]
fn a_chunk_whose_call_failed_makes_its_file_an_api_error() {
    if clover_testkit::root().is_none() {
        return;
    }
    let repo = clover_testkit::fixture("cpp");
    let chunk = |index: u32, text: &str, error: Option<&str>| {
        let mut r = response(
            &format!("cppfix/src/ring_buffer.cc#cpp_unit_test#po#{index}"),
            "cppfix",
            Language::Cpp,
            "tests/candidate_test.cc",
            text,
        );
        r.scoring = serde_json::from_value(serde_json::json!(
            {"chunk_index": index, "chunk_count": 2, "join": "append"}))
        .unwrap();
        r.error = error.map(str::to_string);
        r
    };
    let responses = vec![
        chunk(
            0,
            &fenced("cpp", "#include <gtest/gtest.h>\nTEST(A, B) {}\n"),
            None,
        ),
        chunk(1, "", Some("server answered HTTP 500 after 3 attempt(s)")),
    ];
    let (results, code, stderr) = run_stage(&responses, &["--repo", repo.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let [file] = &results[..] else {
        panic!("{results:?} {stderr}")
    };
    assert_eq!(file.id, "cppfix/src/ring_buffer.cc#cpp_unit_test#po@m");
    assert_eq!(file.outcome, Outcome::ApiError, "{:?}", file.message);
    assert!(
        file.message
            .as_deref()
            .unwrap()
            .contains("chunk 1: server answered HTTP 500"),
        "{:?}",
        file.message
    );
    assert_eq!(file.candidate, None, "nothing was assembled or run");
}

/// A chunk generate did not send (its prompt is over the model's maximum context) makes its
/// file `over_max_context`: nothing is compiled, and score leaves the file out.
#[test]
fn a_chunk_not_sent_makes_its_file_over_max_context() {
    if clover_testkit::root().is_none() {
        return;
    }
    let repo = clover_testkit::fixture("cpp");
    let chunk = |index: u32, text: &str, skipped: bool| {
        let mut r = response(
            &format!("cppfix/src/ring_buffer.cc#cpp_unit_test#po#{index}"),
            "cppfix",
            Language::Cpp,
            "tests/candidate_test.cc",
            text,
        );
        r.scoring = serde_json::from_value(serde_json::json!(
            {"chunk_index": index, "chunk_count": 2, "join": "append"}))
        .unwrap();
        r.generation.skipped = skipped.then(|| "over_max_context".to_string());
        r
    };
    let responses = vec![
        chunk(
            0,
            &fenced("cpp", "#include <gtest/gtest.h>\nTEST(A, B) {}\n"),
            false,
        ),
        chunk(1, "", true),
    ];
    let (results, code, stderr) = run_stage(&responses, &["--repo", repo.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let [file] = &results[..] else {
        panic!("{results:?} {stderr}")
    };
    assert_eq!(file.outcome, Outcome::OverMaxContext, "{:?}", file.message);
    assert!(
        file.message
            .as_deref()
            .unwrap()
            .contains("chunk 1 was not asked: over_max_context"),
        "{:?}",
        file.message
    );
    assert_eq!(file.candidate, None, "nothing was assembled or run");
}

/// Judge-only responses (a pair whose ground truth calibrate could not run) run nothing:
/// outcome `judge_only`, not a compile error nor `no_code`, with the answer's code taken out
/// for the judge — the chunks of a source joined as for a run, a file missing a chunk or an
/// answer without code said in the message.
#[test]
fn judge_only_responses_are_taken_apart_and_never_run() {
    if clover_testkit::root().is_none() {
        return;
    }
    let repo = clover_testkit::fixture("cpp");
    let judge_only = |id: &str, chunk: Option<(u32, u32)>, text: &str| {
        let mut r = response(id, "cppfix", Language::Cpp, "tests/candidate_test.cc", text);
        let mut scoring = serde_json::json!({"judge_only": "compile_error"});
        if let Some((index, count)) = chunk {
            scoring["chunk_index"] = index.into();
            scoring["chunk_count"] = count.into();
            scoring["join"] = "append".into();
        }
        r.scoring = serde_json::from_value(scoring).unwrap();
        r
    };
    let ring = "cppfix/src/ring_buffer.cc#cpp_unit_test#po";
    let histogram = "cppfix/src/histogram.cc#cpp_unit_test#po";
    let responses = vec![
        judge_only(
            &format!("{ring}#0"),
            Some((0, 2)),
            &fenced("cpp", "#include <gtest/gtest.h>\nTEST(A, B) {}\n"),
        ),
        // Run, this would not compile.
        judge_only(
            &format!("{ring}#1"),
            Some((1, 2)),
            &fenced("cpp", "TEST(A, C) { this is not C++; }\n"),
        ),
        judge_only(
            &format!("{histogram}#0"),
            Some((0, 2)),
            &fenced("cpp", "TEST(H, A) {}\n"),
        ),
        judge_only("cppfix/src/small_vector.h#cpp_unit_test#po", None, ""),
    ];
    let (results, code, stderr) = run_stage(&responses, &["--repo", repo.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("3 judge_only"), "{stderr}");
    let by_id: BTreeMap<&str, &RunResult> = results.iter().map(|r| (r.id.as_str(), r)).collect();
    assert_eq!(by_id.len(), 3, "{results:?}");
    for r in &results {
        assert_eq!(r.outcome, Outcome::JudgeOnly, "{}: {:?}", r.id, r.message);
        assert!(
            r.tests.is_empty() && r.coverage.is_empty(),
            "{}: something ran",
            r.id
        );
        let message = r.message.as_deref().unwrap_or_default();
        assert!(
            message.contains("judge-only, not run") && message.contains("compile_error"),
            "{message}"
        );
        assert_eq!(r.judge_only(), Some("compile_error"));
    }
    let ring = by_id[format!("{ring}@m").as_str()];
    let candidate = ring.candidate.as_deref().unwrap();
    assert!(
        candidate.contains("TEST(A, B)") && candidate.contains("this is not C++"),
        "both chunks joined: {candidate}"
    );
    assert!(ring.answer.is_some(), "the judge reads the answer");
    let histogram = by_id[format!("{histogram}@m").as_str()];
    assert_eq!(histogram.candidate, None);
    assert!(
        histogram
            .message
            .as_deref()
            .unwrap()
            .contains("incomplete file"),
        "{:?}",
        histogram.message
    );
    let small = by_id["cppfix/src/small_vector.h#cpp_unit_test#po@m"];
    assert_eq!(small.candidate, None);
    assert!(
        small
            .message
            .as_deref()
            .unwrap()
            .contains("the answer is empty"),
        "{:?}",
        small.message
    );
}

/// The screen: a candidate whose answer reaches the verdict's machinery is not run and gets
/// outcome `rejected`, naming the construct and its line; what the prefix (the repository's
/// own setup) holds is not the model's doing; `--screen off` runs everything.
#[test]
fn candidates_that_reach_the_verdict_machinery_are_rejected_unrun() {
    let Some(py) = ready() else { return };
    let repo = clover_testkit::fixture("python");
    let exit = "import os\n\ndef test_add():\n    assert 1 == 2\n    os._exit(0)\n";
    let hook = "def test_add(request):\n    request.config.pluginmanager.register(object())\n";
    let honest = "def test_add():\n    assert helper() == 1\n";
    let mut with_prefix = python_response("s3", "tests/test_s3.py", honest);
    // The prefix uses `atexit`: the ground truth's setup, outside the model's lines.
    with_prefix.exec.prefix =
        "import atexit\n\ndef helper():\n    atexit.register(print)\n    return 1\n\n".into();
    let responses = vec![
        python_response("s1", "tests/test_s1.py", exit),
        python_response("s2", "tests/test_s2.py", hook),
        with_prefix,
    ];
    let args = [
        "--repo",
        repo.to_str().unwrap(),
        "--python",
        py.to_str().unwrap(),
    ];
    let (results, code, stderr) = run_stage(&responses, &args);
    assert_eq!(code, 0, "{stderr}");
    let [s1, s2, s3] = &results[..] else {
        panic!("{results:?} {stderr}")
    };
    assert_eq!(s1.outcome, Outcome::Rejected, "{:?}", s1.message);
    let m1 = s1.message.as_deref().unwrap();
    assert!(m1.contains("line 5:") && m1.contains("os._exit"), "{m1}");
    assert!(s1.tests.is_empty() && s1.exit_code.is_none(), "nothing ran");
    assert_eq!(
        s1.candidate.as_deref(),
        Some(exit),
        "the candidate is kept for reading"
    );
    assert_eq!(s2.outcome, Outcome::Rejected, "{:?}", s2.message);
    assert!(s2.message.as_deref().unwrap().contains("pluginmanager"));
    assert_eq!(
        s3.outcome,
        Outcome::Passed,
        "{:?} {}",
        s3.message,
        s3.stdout_tail
    );

    let mut off = args.to_vec();
    off.extend(["--screen", "off"]);
    let (results, code, stderr) = run_stage(&responses[..1], &off);
    assert_eq!(code, 0, "{stderr}");
    assert_ne!(
        results[0].outcome,
        Outcome::Rejected,
        "{:?}",
        results[0].message
    );
    assert!(results[0].exit_code.is_some(), "with the screen off it ran");
}

/// Direct mode finds the interpreter as streaming mode does: the repository's `.venv`, else
/// `$CLOVER_PYTHON`, without `--python` (it used `python3` on `PATH`, which has no pytest).
#[test]
fn direct_mode_finds_the_interpreter_like_streaming_mode() {
    let Some(py) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(
        repo.join("tests/test_one.py"),
        "def test_one():\n    assert 1 + 1 == 2\n",
    )
    .unwrap();
    let direct = |env_python: Option<&std::path::Path>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_clover-sandbox-run"));
        c.args(["--repo", repo.to_str().unwrap(), "--test-file"])
            .arg(repo.join("tests/test_one.py"))
            .env_remove("CLOVER_PYTHON")
            // A PATH whose python3 (if any) is not the test environment's.
            .env("PATH", "/usr/bin:/bin");
        if let Some(p) = env_python {
            c.env("CLOVER_PYTHON", p);
        }
        let out = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let r: RunResult = serde_json::from_slice(&out.stdout).unwrap();
        (r, stderr)
    };
    let (r, stderr) = direct(Some(&py));
    assert_eq!(
        r.outcome,
        Outcome::Passed,
        "$CLOVER_PYTHON: {:?} {stderr} {}",
        r.message,
        r.stderr_tail
    );
    // The test environment as the repository's own `.venv`.
    let venv = py.parent().and_then(std::path::Path::parent).unwrap();
    std::os::unix::fs::symlink(venv, repo.join(".venv")).unwrap();
    let (r, stderr) = direct(None);
    assert_eq!(
        r.outcome,
        Outcome::Passed,
        ".venv: {:?} {stderr} {}",
        r.message,
        r.stderr_tail
    );
}

/// An interpreter that cannot run pytest is found before the first run and stops the stage
/// with bad usage (exit 2) and a message that says how to fix it, in both modes; a good one
/// is reported once with its versions.
#[test]
fn an_interpreter_without_pytest_stops_the_stage_as_bad_usage() {
    let Some(py) = ready() else { return };
    let repo = clover_testkit::fixture("python");
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("bare");
    let made = Command::new(&py)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success());
    let bare = venv.join("bin/python");
    let responses = passing_python("b", 3);
    let args = |python: &std::path::Path| {
        vec![
            "--repo".to_string(),
            repo.to_str().unwrap().to_string(),
            "--python".to_string(),
            python.to_str().unwrap().to_string(),
        ]
    };
    let bad = args(&bare);
    let bad: Vec<&str> = bad.iter().map(String::as_str).collect();
    let (results, code, stderr) = run_stage(&responses, &bad);
    assert_eq!(code, 2, "{stderr}");
    assert!(results.is_empty(), "{results:?}");
    assert!(
        stderr.contains("cannot run clover's tests")
            && stderr.contains("No module named 'pytest'")
            && stderr.contains("pip install pytest pytest-cov coverage")
            && !stderr.contains("Code("),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("cannot run clover's tests").count(),
        1,
        "said once: {stderr}"
    );
    let good = args(&py);
    let good: Vec<&str> = good.iter().map(String::as_str).collect();
    let (results, code, stderr) = run_stage(&responses, &good);
    assert_eq!((code, results.len()), (0, 3), "{stderr}");
    assert_eq!(
        stderr.matches(", pytest ").count(),
        1,
        "versions once: {stderr}"
    );
    assert!(
        stderr.contains("Python 3.") && stderr.contains("coverage "),
        "{stderr}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_clover-sandbox-run"))
        .args(["--repo", repo.to_str().unwrap(), "--python"])
        .arg(&bare)
        .arg("--test-file")
        .arg(repo.join("tests/test_money.py"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("No module named 'pytest'"), "{stderr}");
}

/// A repository that cannot be opened is bad usage, as in extract (it was 1 here).
#[test]
fn a_repository_that_cannot_be_opened_is_bad_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_clover-sandbox-run"))
        .args(["--repo", "/nonexistent/clover-repo", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A batch log (stderr not a terminal) gets a progress line every --progress-every seconds:
/// records done of the input's total, the rate and the time left.
#[test]
fn a_batch_log_shows_progress_with_total_rate_and_eta() {
    let Some(py) = ready() else { return };
    let repo = clover_testkit::fixture("python");
    let responses = passing_python("p", 4);
    let args = [
        "--repo",
        repo.to_str().unwrap(),
        "--python",
        py.to_str().unwrap(),
        "--jobs",
        "1",
        "--progress-every",
        "0.000001",
    ];
    let (results, code, stderr) = run_stage(&responses, &args);
    assert_eq!((code, results.len()), (0, 4), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("clover-sandbox-run: progress: "))
        .collect();
    assert!(!lines.is_empty(), "{stderr}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("/4 records (") && l.contains("/s, ETA ")),
        "{lines:?}"
    );
    let (_, _, stderr) = run_stage(
        &responses,
        &[&args[..6], &["--progress-every", "0"]].concat(),
    );
    assert!(
        !stderr.contains("progress:"),
        "0 turns the lines off: {stderr}"
    );
}

/// On a terminal (a pseudo-terminal made by `script`) the stage draws a bar with the records
/// done of the total, the rate and the time left, counted by results written.
#[test]
fn a_terminal_shows_a_progress_bar() {
    let Some(py) = ready() else { return };
    let repo = clover_testkit::fixture("python");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let text: String = passing_python("t", 3)
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&input, text).unwrap();
    let command = format!(
        "{} {} -o {} --repo {} --python {} --jobs 1",
        env!("CARGO_BIN_EXE_clover-sandbox-run"),
        input.display(),
        dir.path().join("out.jsonl").display(),
        repo.display(),
        py.display()
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{screen}");
    assert!(
        screen.contains("3/3 records") && screen.contains("ETA"),
        "{screen}"
    );
}

/// `--cpus` (and the manifest's `cpus`) caps a run's CPU share: a candidate that busy-loops
/// for a second of wall time gets about a quarter of a core under `--cpus 0.25`.
#[test]
fn cpus_caps_a_runs_cpu_share() {
    let Some(py) = ready() else { return };
    let repo = clover_testkit::fixture("python");
    let test = "import time\n\ndef test_spin():\n    wall, cpu = time.monotonic(), time.process_time()\n    while time.monotonic() - wall < 1.0:\n        pass\n    share = (time.process_time() - cpu) / (time.monotonic() - wall)\n    assert share < 0.6, share\n";
    let r = python_response("c1", "tests/test_c.py", test);
    let args = [
        "--repo",
        repo.to_str().unwrap(),
        "--python",
        py.to_str().unwrap(),
        "--cpus",
        "0.25",
    ];
    let (results, code, stderr) = run_stage(&[r], &args);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        results[0].outcome,
        Outcome::Passed,
        "{:?} {}",
        results[0].message,
        results[0].stdout_tail
    );
    let (_, code, stderr) = run_stage(&[], &[&args[..4], &["--cpus", "-1"]].concat());
    assert_eq!(code, 2, "a negative share is bad usage: {stderr}");
}

/// A run that passes its wall clock says which limit, with its value and how to change it.
#[test]
fn a_timeout_names_its_limit() {
    let Some(py) = ready() else { return };
    let repo = clover_testkit::fixture("python");
    let test = "import time\n\ndef test_slow():\n    time.sleep(60)\n";
    let r = python_response("t1", "tests/test_t.py", test);
    let args = [
        "--repo",
        repo.to_str().unwrap(),
        "--python",
        py.to_str().unwrap(),
        "--timeout",
        "2",
    ];
    let (results, code, stderr) = run_stage(&[r], &args);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(results[0].outcome, Outcome::Timeout);
    let m = results[0].message.as_deref().unwrap_or_default();
    assert!(
        m.contains("wall-clock limit of 2 s") && m.contains("--timeout"),
        "{m}"
    );
}

/// Responses with the same candidate (the same file, text and selectors in one repository)
/// run once and share the result, which says so; the cold path (`--cold`) gives the warm
/// path's verdicts and coverage, and a Task I response is not measured.
#[test]
fn identical_candidates_run_once_and_cold_runs_agree_with_warm_ones() {
    let Some(py) = ready() else { return };
    let repo = clover_testkit::fixture("python");
    let pass = "from ledger.money import Money\n\ndef test_add():\n    assert (Money(150) + Money(50)).cents == 200\n";
    let fail =
        "from ledger.money import Money\n\ndef test_add():\n    assert Money(1).cents == 2\n";
    let mut cloze = python_response("c1", "tests/test_cl.py", pass);
    cloze.task = Task::AssertionCloze;
    // What the scoring reads is all that is measured: the target's file, the blocks' files.
    let region = |path: &str| serde_json::json!({"path": path, "start_line": 1, "end_line": 3});
    let mut targeted = python_response("t1", "tests/test_same.py", pass);
    targeted.task = Task::TargetedTest;
    targeted
        .scoring
        .insert("target".into(), region("src/ledger/money.py"));
    let mut blocks = python_response("k1", "tests/test_same.py", pass);
    blocks.scoring.insert(
        "blocks".into(),
        serde_json::json!([
            region("src/ledger/report.py"),
            region("src/ledger/money.py")
        ]),
    );
    let responses = vec![
        python_response("a1", "tests/test_same.py", pass),
        python_response("a2", "tests/test_same.py", pass),
        python_response("b1", "tests/test_other.py", fail),
        python_response("a3", "tests/test_same.py", pass),
        cloze,
        targeted,
        blocks,
    ];
    let args = |cold: bool| {
        let mut a = vec![
            "--repo".to_string(),
            repo.display().to_string(),
            "--python".into(),
            py.display().to_string(),
            "--jobs".into(),
            "2".into(),
        ];
        if cold {
            a.push("--cold".into());
        }
        a
    };
    let strs = |a: &[String]| a.iter().map(String::clone).collect::<Vec<_>>();
    let warm_args = strs(&args(false));
    let warm_args: Vec<&str> = warm_args.iter().map(String::as_str).collect();
    let (warm, code, stderr) = run_stage(&responses, &warm_args);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("2 result(s) reuse the run of an identical candidate"),
        "{stderr}"
    );
    // One run, shared to the test durations.
    let run = |r: &RunResult| {
        (
            r.outcome,
            r.tests.clone(),
            r.coverage.clone(),
            r.stdout_tail.clone(),
        )
    };
    assert_eq!(run(&warm[0]), run(&warm[1]));
    assert_eq!(run(&warm[0]), run(&warm[3]));
    let cold_args = strs(&args(true));
    let cold_args: Vec<&str> = cold_args.iter().map(String::as_str).collect();
    let (cold, code, stderr) = run_stage(&responses, &cold_args);
    assert_eq!(code, 0, "{stderr}");
    let verdicts = |rs: &[RunResult]| {
        rs.iter()
            .map(|r| {
                let tests: Vec<_> = r
                    .tests
                    .iter()
                    .map(|t| (t.name.clone(), t.outcome))
                    .collect();
                (r.id.clone(), r.outcome, tests, r.coverage.clone())
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(&warm), verdicts(&cold));
    assert_eq!(warm[0].outcome, Outcome::Passed);
    assert_eq!(warm[2].outcome, Outcome::Failed);
    // Task I is scored on its verdict alone: nothing measured.
    assert_eq!(warm[4].outcome, Outcome::Passed);
    assert!(warm[4].coverage.is_empty());
    // Facts that name no file: the whole package is measured.
    let of = |paths: &[&str]| {
        let mut files: Vec<_> = warm[0]
            .coverage
            .iter()
            .filter(|f| paths.contains(&f.path.as_str()))
            .cloned()
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files
    };
    assert!(warm[0].coverage.len() > 2, "{:?}", warm[0].coverage);
    assert_eq!(warm[5].coverage, of(&["src/ledger/money.py"]));
    assert_eq!(
        warm[6].coverage,
        of(&["src/ledger/money.py", "src/ledger/report.py"])
    );
    assert_eq!(warm[6].coverage.len(), 2);
}

/// The mutation fixture's one problem, as pack-context names it.
const MUTFIX_PROBLEM: &str = "mutfix/tests/test_price.py::test_floor";

/// Calibrate's part, done here with clover-mutate's own API and the real pytest (on the host,
/// in a copy of the fixture): the sample of every mutant of `floor_at_zero`'s body, judged by
/// the ground truth, as the sidecar record.
fn calibrated_mutants(py: &std::path::Path, repo: &std::path::Path) -> ProblemMutants {
    let path = "src/shop/price.py";
    let text = std::fs::read_to_string(repo.join(path)).unwrap();
    let files = [clover_mutate::SourceFile {
        path,
        language: Language::Python,
        text: &text,
        focus: clover_mutate::Focus::Lines(vec![[5, 7]]),
    }];
    let copy = tempfile::tempdir().unwrap();
    copy_dir(repo, copy.path());
    clover_mutate::judge_problem(MUTFIX_PROBLEM, &files, 20, 0, |m| {
        std::fs::write(copy.path().join(&m.path), &m.text).unwrap();
        let out = Command::new(py)
            .args([
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests/test_price.py",
            ])
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(copy.path())
            .output()
            .unwrap();
        std::fs::write(copy.path().join(path), &text).unwrap();
        Ok::<_, clover_mutate::MutateError>(match out.status.code() {
            Some(0) => clover_mutate::Verdict::Survived,
            _ => clover_mutate::Verdict::Killed {
                tests: vec!["test_floor".into()],
            },
        })
    })
    .unwrap()
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A Task III response of the mutation fixture whose blocks are `floor_at_zero`'s body.
fn mutfix_response(model: &str, test: &str) -> Response {
    let mut r = response(
        &format!("{MUTFIX_PROBLEM}#coverage_test#po"),
        "mutfix",
        Language::Python,
        "tests/test_candidate.py",
        &fenced("python", test),
    );
    r.id = format!("{}@{model}", r.instance_id);
    r.model = model.into();
    r.scoring.insert(
        "blocks".into(),
        serde_json::json!([{"path": "src/shop/price.py", "start_line": 5, "end_line": 7}]),
    );
    r
}

/// Every `duration_secs` removed, at any depth: what must be the same on every run.
fn without_timing(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            o.remove("duration_secs");
            o.values_mut().for_each(without_timing);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(without_timing),
        _ => {}
    }
}

/// `--mutation`: the ground truth kills every kept mutant (the equivalent boundary shift was
/// never kept), a test that asserts nothing kills none, and a test that fails on the original
/// code runs none; twice the same results.
#[test]
fn the_mutation_pass_scores_the_oracle_full_and_assert_true_zero() {
    let Some(py) = ready() else { return };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/mutfix");
    let record = calibrated_mutants(&py, &repo);
    // The known equivalent mutant survives the ground truth and is not kept; the known
    // killable one is kept.
    assert!(
        record
            .survived
            .iter()
            .any(|id| id.starts_with("src/shop/price.py:5:14:boundary")),
        "{record:?}"
    );
    assert!(record
        .kept
        .iter()
        .any(|m| m.operator == "comparison" && m.replacement == ">="));
    let kept = record.kept.len() as u32;
    let dir = tempfile::tempdir().unwrap();
    let sidecar = dir.path().join("calibrated.mutants.jsonl");
    std::fs::write(&sidecar, serde_json::to_string(&record).unwrap() + "\n").unwrap();

    let oracle = std::fs::read_to_string(repo.join("tests/test_price.py")).unwrap();
    let responses = vec![
        mutfix_response("oracle", &oracle),
        mutfix_response("assert_true", "def test_x():\n    assert True\n"),
        mutfix_response(
            "wrong",
            "from shop.price import floor_at_zero\n\ndef test_x():\n    assert floor_at_zero(1) == 2\n",
        ),
    ];
    let args = [
        "--repo",
        repo.to_str().unwrap(),
        "--python",
        py.to_str().unwrap(),
        "--mutation",
        sidecar.to_str().unwrap(),
    ];
    let (results, code, stderr) = run_stage(&responses, &args);
    assert_eq!(code, 0, "{stderr}");
    let [oracle, assert_true, wrong] = &results[..] else {
        panic!("{stderr}")
    };
    assert_eq!(oracle.outcome, Outcome::Passed, "{:?}", oracle.message);
    let m = &oracle.mutation;
    assert_eq!((m.kept, m.run, m.killed), (Some(kept), kept, kept), "{m:?}");
    assert!(m.survived.is_empty());
    assert_eq!(
        m.cold, 0,
        "no conftest imports the package: every run is warm"
    );
    let by_op: u32 = m.operators.iter().map(|o| o.killed).sum();
    assert_eq!(by_op, kept);
    let m = &assert_true.mutation;
    assert_eq!((m.kept, m.run, m.killed), (Some(kept), kept, 0), "{m:?}");
    assert_eq!(m.survived.len() as u32, kept);
    assert_eq!(wrong.outcome, Outcome::Failed);
    let m = &wrong.mutation;
    assert_eq!((m.kept, m.run, m.killed), (Some(kept), 0, 0), "{m:?}");
    assert!(
        stderr.contains(&format!(
            "mutation: {kept} of {} kept mutant(s) killed",
            3 * kept
        )),
        "{stderr}"
    );

    // The same verdicts and passes, byte for byte, on a second run (timing aside: the pass's
    // seconds, and pytest's own in the output tails).
    let (again, _, _) = run_stage(&responses, &args);
    let bytes = |rs: &[RunResult]| {
        rs.iter()
            .map(|r| {
                let mut v =
                    serde_json::to_value((&r.id, r.outcome, &r.tests, &r.mutation)).unwrap();
                without_timing(&mut v);
                v.to_string()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(bytes(&results), bytes(&again));
    // Without --mutation nothing is run or counted.
    let (plain, _, _) = run_stage(&responses, &args[..4]);
    assert_eq!(plain[0].mutation, Default::default());
}

/// Tests that kill mutants without testing behaviour: one that asserts its target's bytecode
/// hashes to the original's, one that asserts the focal file does, one that asserts a coverage
/// tracer is attached (mutant runs have none), all spelled past the screen (`--screen off`
/// shows the defence does not rest on it). With the equivalent mutant off they kill every kept
/// mutant they can tell, the oracle's score; with it on (the default) they fail on it too,
/// and earn no kill and no pass: outcome `forged`. None earns more kills than its honest twin
/// (the same test without the fingerprint). The oracle kills every mutant with it on (the
/// test above).
#[test]
fn tests_that_fingerprint_the_code_or_the_run_kill_nothing() {
    let Some(py) = ready() else { return };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/mutfix");
    let record = calibrated_mutants(&py, &repo);
    let kept = record.kept.len() as u32;
    assert!(kept > 0);
    let dir = tempfile::tempdir().unwrap();
    let sidecar = dir.path().join("calibrated.mutants.jsonl");
    std::fs::write(&sidecar, serde_json::to_string(&record).unwrap() + "\n").unwrap();
    // The original's fingerprints, as a forger would have them written in.
    let probe = Command::new(&py)
        .args([
            "-c",
            "import hashlib, sys; sys.path.insert(0, 'src'); from shop.price import floor_at_zero as f; \
             print(hashlib.sha256(f.__code__.co_code).hexdigest()); \
             print(hashlib.sha256(open('src/shop/price.py', 'rb').read()).hexdigest())",
        ])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&repo)
        .output()
        .unwrap();
    let out = String::from_utf8(probe.stdout).unwrap();
    let [code_hash, file_hash] = out.split_whitespace().collect::<Vec<_>>()[..] else {
        panic!("{out:?} {:?}", String::from_utf8_lossy(&probe.stderr))
    };
    let forgers = [
        (
            "bytecode",
            format!(
                "import hashlib\nfrom shop.price import floor_at_zero\n\ndef test_x():\n    \
                 assert floor_at_zero(3) == 3\n    \
                 assert hashlib.sha256(floor_at_zero.__code__.co_code).hexdigest() == {code_hash:?}\n"
            ),
        ),
        (
            "file",
            format!(
                "import hashlib, inspect\nfrom shop.price import floor_at_zero\n\ndef test_x():\n    \
                 assert floor_at_zero(3) == 3\n    \
                 path = inspect.getsourcefile(floor_at_zero)\n    \
                 assert hashlib.sha256(open(path, 'rb').read()).hexdigest() == {file_hash:?}\n"
            ),
        ),
        (
            "tracer",
            "import sys\nfrom shop.price import floor_at_zero\n\ndef test_x():\n    \
             assert floor_at_zero(3) == 3\n    \
             mon = getattr(sys, 'monitoring', None)\n    \
             assert sys.gettrace() is not None or (mon is not None and mon.get_tool(mon.COVERAGE_ID) is not None)\n"
                .to_string(),
        ),
    ];
    // Each forger's honest twin: the same test without its fingerprint, whose kills are the
    // behaviour's.
    let honest = "from shop.price import floor_at_zero\n\ndef test_x():\n    \
                  assert floor_at_zero(3) == 3\n";
    let responses: Vec<Response> = forgers
        .iter()
        .map(|(name, test)| mutfix_response(name, test))
        .chain([mutfix_response("honest", honest)])
        .collect();
    let args = [
        "--repo",
        repo.to_str().unwrap(),
        "--python",
        py.to_str().unwrap(),
        "--mutation",
        sidecar.to_str().unwrap(),
        "--screen",
        "off",
    ];
    // Unchecked: no equivalent mutant, and no witness (whose instrumented code a bytecode
    // fingerprint would not match).
    let off: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--equivalent-mutant", "off", "--witness", "off"])
        .collect();
    let (believed, code, stderr) = run_stage(&responses, &off);
    assert_eq!(code, 0, "{stderr}");
    let honest_kills = believed[forgers.len()].mutation.killed;
    assert!(
        honest_kills < kept,
        "{:?}",
        believed[forgers.len()].mutation
    );
    // Unchecked, a fingerprint kills every kept mutant (the warm worker patches a mutant's
    // code into its fork and leaves the file alone, so the file's hash kills no more than
    // the behaviour does there).
    for ((name, _), r) in forgers.iter().zip(&believed) {
        assert_eq!(r.outcome, Outcome::Passed, "{name}: {:?}", r.message);
        match *name {
            "file" => assert_eq!(r.mutation.killed, honest_kills, "{name}"),
            _ => assert_eq!(
                r.mutation.killed, kept,
                "{name}: the forgery works unchecked"
            ),
        }
    }
    let (results, code, stderr) = run_stage(&responses, &args);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(results[forgers.len()].outcome, Outcome::Passed);
    assert_eq!(results[forgers.len()].mutation.killed, honest_kills);
    for ((name, _), r) in forgers.iter().zip(&results) {
        if *name == "file" {
            assert_eq!(r.mutation.killed, honest_kills, "{name}: {:?}", r.message);
            continue;
        }
        if *name == "bytecode" && r.outcome == Outcome::Failed {
            // The witnessed code is not the original's: the fingerprint fails the plain run,
            // which earns nothing and has no mutation pass.
            assert_eq!(r.mutation.killed, 0, "{name}: {:?}", r.mutation);
            continue;
        }
        assert_eq!(r.outcome, Outcome::Forged, "{name}: {:?}", r.message);
        assert!(
            r.message
                .as_deref()
                .is_some_and(|m| m.contains("equivalent mutant")),
            "{name}: {:?}",
            r.message
        );
        assert!(r.tests.is_empty() && r.coverage.is_empty(), "{name}");
        let m = &r.mutation;
        assert_eq!((m.kept, m.killed), (Some(kept), 0), "{name}: {m:?}");
    }
    // Cold, each mutant's file is written over the original: the file's hash now tells
    // every mutant, and tells the equivalent one too.
    let cold: Vec<&str> = args.iter().copied().chain(["--cold"]).collect();
    let file_only = [responses[1].clone(), responses[forgers.len()].clone()];
    let cold_off: Vec<&str> = cold
        .iter()
        .copied()
        .chain(["--equivalent-mutant", "off"])
        .collect();
    let (unchecked, _, stderr) = run_stage(&file_only, &cold_off);
    assert_eq!(unchecked[0].mutation.killed, kept, "{stderr}");
    let (checked, _, stderr) = run_stage(&file_only, &cold);
    assert_eq!(checked[0].outcome, Outcome::Forged, "{stderr}");
    assert_eq!(checked[0].mutation.killed, 0);
    assert_eq!(checked[1].mutation.killed, honest_kills);
}

/// A mutated module that the repository's conftest imports cannot be given to a configured
/// warm worker (it has executed the original): those mutant runs go to a worker that
/// configures pytest per run, and judge as cold runs (`--cold`) do.
#[test]
fn mutants_of_a_module_the_conftest_imports_run_warm_and_judge_as_cold() {
    let Some(py) = ready() else { return };
    let repo = clover_testkit::fixture("python");
    let path = "src/ledger/money.py";
    let text = std::fs::read_to_string(repo.join(path)).unwrap();
    let files = [clover_mutate::SourceFile {
        path,
        language: Language::Python,
        text: &text,
        focus: clover_mutate::Focus::Lines(vec![[41, 42]]),
    }];
    let problem = "pyfix/tests/test_money.py::test_add";
    // Every mutant kept, as if the ground truth killed it: this test is about the runs.
    let record = clover_mutate::judge_problem(problem, &files, 3, 0, |_| {
        Ok::<_, clover_mutate::MutateError>(clover_mutate::Verdict::Killed { tests: vec![] })
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sidecar = dir.path().join("m.mutants.jsonl");
    std::fs::write(&sidecar, serde_json::to_string(&record).unwrap() + "\n").unwrap();
    let test = "from ledger.money import Money\n\ndef test_add():\n    assert (Money(150) + Money(50)).cents == 200\n";
    let mut r = python_response(
        &format!("{problem}#targeted_test#po"),
        "tests/test_c.py",
        test,
    );
    r.task = Task::TargetedTest;
    r.scoring.insert(
        "target".into(),
        serde_json::json!({"name": "__add__", "kind": "method", "path": path,
                           "start_line": 40, "end_line": 42, "import_lines": [[40, 40]]}),
    );
    let args = [
        "--repo",
        repo.to_str().unwrap(),
        "--python",
        py.to_str().unwrap(),
        "--mutation",
        sidecar.to_str().unwrap(),
    ];
    let (results, code, stderr) = run_stage(std::slice::from_ref(&r), &args);
    assert_eq!(code, 0, "{stderr}");
    let m = &results[0].mutation;
    assert_eq!(m.kept, Some(record.kept.len() as u32), "{m:?}");
    assert!(m.run > 0 && m.cold == 0, "{m:?}");
    // `+` → `-` in `__add__` is caught by a test of addition.
    assert!(m.killed >= 1, "{m:?}");
    let mut cold_args = args.to_vec();
    cold_args.push("--cold");
    let (cold, code, stderr) = run_stage(&[r], &cold_args);
    assert_eq!(code, 0, "{stderr}");
    let c = &cold[0].mutation;
    assert_eq!(
        (m.run, m.killed, &m.survived),
        (c.run, c.killed, &c.survived)
    );
}
