//! Runs the real `clover-score` binary on crafted run results: the JSON, JSON Lines and table
//! outputs, the HTML report in headless Chromium, and the LLM judge against a fake
//! OpenAI-compatible server on loopback.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use clover_protocol::{
    FileCoverage, LineRanges, Outcome, RecordKind, RecordReader, RunResult, ScoreRow, Task,
    DEFAULT_MAX_LINE_BYTES, SCHEMA_VERSION,
};
use clover_testkit::fake_chat::{ChatReply, FakeChat};
use serde_json::{json, Value};

#[allow(clippy::too_many_arguments)]
fn result(
    model: &str,
    instance: &str,
    task: Task,
    setting: &str,
    repo: &str,
    outcome: Outcome,
    answer: &str,
    coverage: Vec<(&str, Vec<u32>)>,
    scoring: Value,
) -> RunResult {
    RunResult {
        kind: RecordKind::RunResult,
        schema_version: SCHEMA_VERSION,
        id: format!("{instance}@{model}"),
        instance_id: instance.into(),
        model: model.into(),
        task: Some(task),
        setting: setting.into(),
        repo: repo.into(),
        outcome,
        tests: vec![],
        coverage: coverage
            .into_iter()
            .map(|(p, l)| FileCoverage {
                path: p.into(),
                lines: LineRanges::from_lines(l),
            })
            .collect(),
        limit_hit: None,
        exit_code: Some(0),
        signal: None,
        candidate: Some(format!("import ledger\n{answer}")),
        answer: Some(answer.into()),
        message: None,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        scoring: serde_json::from_value(scoring).unwrap(),
        duration_secs: 0.1,
    }
}

/// Results of an oracle and a baseline on every task, in PO and two budgets, two repos.
fn results() -> Vec<RunResult> {
    let mut out = Vec::new();
    let cloze = json!({"reference": "total", "form": "binary", "operator": "==",
        "other_operand": "ledger.total()", "other_is_constant": false,
        "masked_line": "    assert ledger.total() == <MASK>"});
    let target = json!({"target": {"name": "Ledger", "kind": "class",
        "path": "src/ledger/accounts.py", "start_line": 10, "end_line": 30}});
    let blocks =
        json!({"blocks": [{"path": "src/ledger/money.py", "start_line": 101, "end_line": 106}]});
    let cpp = json!({"focal_source": "src/ring_buffer.cc", "focal_coverage": [[1, 10]]});
    for (k, setting) in ["po", "4k", "16k"].iter().enumerate() {
        for repo in ["pyfix", "other"] {
            let id = |t: &str| format!("{repo}/{t}#{setting}");
            // The oracle: right everywhere, except Task III at PO in one repo.
            out.push(result(
                "oracle",
                &id("c"),
                Task::AssertionCloze,
                setting,
                repo,
                Outcome::Passed,
                "total",
                vec![],
                cloze.clone(),
            ));
            out.push(result(
                "oracle",
                &id("t"),
                Task::TargetedTest,
                setting,
                repo,
                Outcome::Passed,
                "    led = Ledger()\n    assert led",
                vec![("src/ledger/accounts.py", vec![10, 11, 12])],
                target.clone(),
            ));
            let covered = if *setting == "po" && repo == "other" {
                vec![101, 102]
            } else {
                (101..=106).collect()
            };
            out.push(result(
                "oracle",
                &id("b"),
                Task::CoverageTest,
                setting,
                repo,
                Outcome::Passed,
                "    f()",
                vec![("src/ledger/money.py", covered)],
                blocks.clone(),
            ));
            out.push(result(
                "oracle",
                &id("x"),
                Task::CppUnitTest,
                setting,
                repo,
                Outcome::Passed,
                "TEST(R, A) { GOOD(); }",
                vec![("src/ring_buffer.cc", (1..=10).collect())],
                cpp.clone(),
            ));
            // The baseline: runs, but trivially; better with more context in Task I.
            let pred = if k == 2 && repo == "pyfix" {
                "total"
            } else {
                "ledger.total()"
            };
            out.push(result(
                "copy-operand",
                &id("c"),
                Task::AssertionCloze,
                setting,
                repo,
                Outcome::Passed,
                pred,
                vec![],
                cloze.clone(),
            ));
            out.push(result(
                "copy-operand",
                &id("t"),
                Task::TargetedTest,
                setting,
                repo,
                Outcome::Passed,
                "    assert True",
                vec![("src/ledger/accounts.py", vec![10])],
                target.clone(),
            ));
            out.push(result(
                "copy-operand",
                &id("b"),
                Task::CoverageTest,
                setting,
                repo,
                Outcome::NoCode,
                "",
                vec![],
                blocks.clone(),
            ));
            out.push(result(
                "copy-operand",
                &id("x"),
                Task::CppUnitTest,
                setting,
                repo,
                if repo == "pyfix" {
                    Outcome::Passed
                } else {
                    Outcome::CompileError
                },
                "TEST(R, B) { BAD(); }",
                vec![("src/ring_buffer.cc", vec![1, 2])],
                cpp.clone(),
            ));
        }
    }
    out
}

fn write_results(dir: &Path) -> (String, String) {
    let all = results();
    let (a, b): (Vec<_>, Vec<_>) = all.into_iter().partition(|r| r.model == "oracle");
    let write = |name: &str, rs: &[RunResult]| {
        let p = dir.join(name);
        let text: String = rs
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    (write("oracle.jsonl", &a), write("baseline.jsonl", &b))
}

fn score(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_clover-score"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn row<'a>(rows: &'a [Value], model: &str, task: &str, setting: &str, repo: &str) -> &'a Value {
    rows.iter()
        .find(|r| {
            r["model"] == model && r["task"] == task && r["setting"] == setting && r["repo"] == repo
        })
        .unwrap_or_else(|| panic!("no row {model}/{task}/{setting}/{repo}"))
}

#[test]
fn json_table_and_jsonl_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (oracle, baseline) = write_results(dir.path());
    let (out, stderr, code) = score(&["--format", "json", "--by-repo", &oracle, &baseline]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    // 2 models × 4 tasks × 3 settings × (all + 2 repos).
    assert_eq!(rows.len(), 2 * 4 * 3 * 3);
    for r in rows {
        for k in ["model", "task", "setting", "repo", "n", "metrics"] {
            assert!(r.get(k).is_some(), "{k} in {r}");
        }
    }
    let m = &row(rows, "oracle", "assertion_cloze", "po", "*")["metrics"];
    assert_eq!(
        (m["em"].as_f64(), m["er"].as_f64(), m["rer"].as_f64()),
        (Some(1.0), Some(1.0), Some(1.0))
    );
    let m = &row(rows, "copy-operand", "assertion_cloze", "po", "*")["metrics"];
    assert_eq!(
        (m["em"].as_f64(), m["er"].as_f64(), m["rer"].as_f64()),
        (Some(0.0), Some(1.0), Some(0.0))
    );
    let m = &row(rows, "copy-operand", "assertion_cloze", "16k", "pyfix")["metrics"];
    assert_eq!(m["em"].as_f64(), Some(1.0));
    let m = &row(rows, "oracle", "coverage_test", "po", "*")["metrics"];
    assert_eq!(
        (m["execution_rate"].as_f64(), m["success_rate"].as_f64()),
        (Some(1.0), Some(0.5))
    );
    let m = &row(rows, "copy-operand", "targeted_test", "4k", "*")["metrics"];
    assert_eq!(
        (m["execution_rate"].as_f64(), m["success_rate"].as_f64()),
        (Some(1.0), Some(0.0))
    );
    let m = &row(rows, "copy-operand", "coverage_test", "4k", "other")["metrics"];
    assert_eq!(m["no_code_rate"].as_f64(), Some(1.0));
    let m = &row(rows, "copy-operand", "cpp_unit_test", "po", "*")["metrics"];
    assert_eq!(
        (
            m["compile_rate"].as_f64(),
            m["pass_rate"].as_f64(),
            m["focal_coverage_vs_gt"].as_f64()
        ),
        (Some(0.5), Some(0.5), Some(0.2))
    );
    // Context utilization: oracle Task III goes from 50% at PO to 100% with context.
    let u = v["utilization"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["model"] == "oracle" && u["task"] == "coverage_test" && u["repo"] == "*")
        .unwrap();
    assert_eq!(
        (u["delta_max"].as_f64(), u["delta_min"].as_f64()),
        (Some(0.5), Some(0.5))
    );
    assert_eq!(u["best_setting"], "4k");

    // The same input gives the same bytes.
    let (again, _, _) = score(&["--format", "json", "--by-repo", &oracle, &baseline]);
    assert_eq!(out, again);

    // ScoreRow records read back through the wire types.
    let (out, _, code) = score(&["--format", "jsonl", &oracle, &baseline]);
    assert_eq!(code, 0);
    let mut reader = RecordReader::new(out.as_bytes(), "rows", DEFAULT_MAX_LINE_BYTES);
    let mut score_rows = Vec::new();
    while let Some(r) = reader.next_record::<ScoreRow>() {
        score_rows.push(r.unwrap().1);
    }
    assert!(score_rows
        .iter()
        .any(|r| r.id == "oracle/coverage_test/po/*" && r.n == 2));
    assert!(score_rows
        .iter()
        .any(|r| r.setting == "delta" && r.metrics.contains_key("delta_max")));

    // The table, from stdin.
    let mut child = Command::new(env!("CARGO_BIN_EXE_clover-score"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let text = std::fs::read(&oracle).unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let out = child.wait_with_output().unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("## Task I: assertion cloze"), "{table}");
    assert!(
        table.contains("| oracle | po | * | 2 | 100.0 | 100.0 | 100.0 | 0.0 |"),
        "{table}"
    );
    assert!(table.contains("Context utilization"));
}

/// A failed API call is its own column: `error_rate`, left out of every other rate's
/// denominator, in the JSON, the table (with its legend) and the HTML.
#[test]
fn api_errors_are_a_column_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let blocks =
        json!({"blocks": [{"path": "src/ledger/money.py", "start_line": 101, "end_line": 106}]});
    let mut rs = vec![result(
        "m",
        "pyfix/a",
        Task::CoverageTest,
        "po",
        "pyfix",
        Outcome::Passed,
        "assert f()",
        vec![("src/ledger/money.py", (101..=106).collect())],
        blocks.clone(),
    )];
    for k in 0..3 {
        let mut r = result(
            "m",
            &format!("pyfix/e{k}"),
            Task::CoverageTest,
            "po",
            "pyfix",
            Outcome::ApiError,
            "",
            vec![],
            blocks.clone(),
        );
        (r.candidate, r.answer) = (None, None);
        rs.push(r);
    }
    let path = dir.path().join("results.jsonl");
    let text: String = rs
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap();

    let (out, stderr, code) = score(&["--format", "json", path]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let r = row(
        v["rows"].as_array().unwrap(),
        "m",
        "coverage_test",
        "po",
        "*",
    );
    assert_eq!(r["n"], 4);
    let m = &r["metrics"];
    assert_eq!(
        (
            m["error_rate"].as_f64(),
            m["execution_rate"].as_f64(),
            m["success_rate"].as_f64(),
            m["no_code_rate"].as_f64()
        ),
        (Some(0.75), Some(1.0), Some(1.0), Some(0.0)),
        "the three failed calls count in no model metric"
    );

    let (table, _, code) = score(&["--format", "table", path]);
    assert_eq!(code, 0);
    assert!(
        table.contains("| no_code_rate | rejected_rate | error_rate |")
            && table.contains("| m | po | * | 4 | 100.0 | 100.0 | 0.0 | 0.0 | 75.0 |")
            && table.contains("every other rate leaves those out of its denominator"),
        "{table}"
    );
    let (html, _, code) = score(&["--format", "html", path]);
    assert_eq!(code, 0);
    assert!(
        html.contains("<th>error_rate (%)</th>")
            && html.contains("<td class=\"num\">75.0</td>")
            && html.contains("<p class=\"legend\">n counts every result; error_rate"),
        "{html}"
    );
}

/// An instances file given to score is said to be one, once, with the stages that come
/// between, not once per line.
#[test]
fn an_instances_file_is_named_once_with_the_stages_between() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("instances.jsonl");
    let line =
        |i: usize| format!("{{\"kind\":\"instance\",\"schema_version\":1,\"id\":\"i{i}\"}}\n");
    std::fs::write(&input, (0..84).map(line).collect::<String>()).unwrap();
    let (out, stderr, code) = score(&[input.to_str().unwrap()]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(
        stderr.matches("found kind `instance`").count(),
        1,
        "said once: {stderr}"
    );
    assert!(
        stderr
            .contains("this is pack-context's output: run generate, then sandbox-run on it first")
            && stderr.contains("83 more `instance` record(s) skipped for the same reason")
            && stderr.contains("84 bad record(s)"),
        "{stderr}"
    );
    assert!(out.contains("no run results to score"), "{out}");
}

#[test]
fn bad_records_are_reported_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (oracle, _) = write_results(dir.path());
    let mut text = std::fs::read_to_string(&oracle).unwrap();
    text.push_str("{\"kind\": \"run_result\", oops\n");
    std::fs::write(&oracle, text).unwrap();
    let (out, stderr, code) = score(&["--format", "json", &oracle]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("oracle.jsonl:25"), "{stderr}");
    assert!(out.contains("\"rows\""));
    let (_, _, code) = score(&["--on-error", "stop", &oracle]);
    assert_eq!(code, 4);
}

/// Chromium, when installed (`cargo xtask setup` installs it).
fn chromium() -> Option<&'static str> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|c| Path::new(c).exists());
    clover_testkit::require("chromium", found)
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (oracle, baseline) = write_results(dir.path());
    let html = dir.path().join("report.html");
    let (_, stderr, code) = score(&[
        "--format",
        "html",
        "-o",
        html.to_str().unwrap(),
        &oracle,
        &baseline,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let page = std::fs::read_to_string(&html).unwrap();
    for external in ["src=", "href=", "<link", "<script", "url(", "@import"] {
        assert!(!page.contains(external), "self-contained: no `{external}`");
    }

    let profile = tempfile::tempdir().unwrap();
    let shot = dir.path().join("report.png");
    let run = |extra: &[&str]| {
        let mut cmd = Command::new(chromium);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", html.display()))
        .stdin(Stdio::null());
        let out = cmd.output().expect("chromium runs");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (dom, log) = run(&["--dump-dom"]);
    // A plot per task and metric (Task I: EM, ER, RER; II: execution, success, called; III:
    // execution, success; C++: compile, pass, success), each with a line per model.
    assert_eq!(dom.matches("<svg").count(), 11, "{dom}");
    assert_eq!(dom.matches("class=\"series\"").count(), 22);
    assert!(dom.contains("data-model=\"copy-operand\""));
    assert!(dom.contains("<table>"));
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let (_, log) = run(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1000,1400",
    ]);
    let png = std::fs::read(&shot).unwrap_or_else(|_| panic!("no screenshot: {log}"));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a real picture"
    );
    if let Ok(keep) = std::env::var("CLOVER_KEEP_REPORT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// A judge on 127.0.0.1 that prefers the candidate holding `GOOD();`, and otherwise always
/// answers `A` (a position-biased judge).
fn fake_judge() -> FakeChat {
    FakeChat::start(|request| ChatReply::content(judge_verdict(request.message(1))))
}

/// The fake judge's verdict on one pairwise prompt.
fn judge_verdict(prompt: &str) -> &'static str {
    let a = prompt
        .split("### Candidate A")
        .nth(1)
        .and_then(|rest| rest.split("### Candidate B").next())
        .unwrap_or("");
    let b = prompt.split("### Candidate B").nth(1).unwrap_or("");
    match (a.contains("GOOD();"), b.contains("GOOD();")) {
        (false, true) => "**B**",
        _ => "A",
    }
}

/// Passing C++ results of instance `id`, one per `(model, answer)`.
fn passed_cpp_answers(id: &str, answers: &[(&str, &str)]) -> Vec<RunResult> {
    let cpp = json!({"focal_source": "src/ring_buffer.cc"});
    answers
        .iter()
        .map(|(model, answer)| {
            result(
                model,
                id,
                Task::CppUnitTest,
                "po",
                "cppfix",
                Outcome::Passed,
                answer,
                vec![],
                cpp.clone(),
            )
        })
        .collect()
}

/// Writes passing C++ results of `count` instances, one per `(model, answer)` each, and
/// returns the file.
fn write_cpp_answers(dir: &Path, count: usize, answers: &[(&str, &str)]) -> std::path::PathBuf {
    let text: String = (0..count)
        .flat_map(|k| {
            passed_cpp_answers(&format!("cppfix/src/ring_buffer.cc#chunk{k}@po"), answers)
        })
        .map(|r| serde_json::to_string(&r).unwrap() + "\n")
        .collect();
    let input = dir.join("results.jsonl");
    std::fs::write(&input, text).unwrap();
    input
}

#[test]
fn llm_judge_pairs_in_both_orders() {
    let judge = fake_judge();
    let dir = tempfile::tempdir().unwrap();
    // Three models on C++: `good` writes GOOD();, `bad` and `worse` do not. The oracle's
    // answers are the ground truth and are not judged themselves.
    let input = write_cpp_answers(
        dir.path(),
        6,
        &[
            ("oracle", "TEST(R, T) { GOOD(); }"),
            ("good", "TEST(R, A) { GOOD(); }"),
            ("bad", "TEST(R, B) { BAD(); }"),
            ("worse", "TEST(R, C) { }"),
        ],
    );
    let url = judge.url();
    let (out, stderr, code) = score(&[
        "--format",
        "json",
        "--judge",
        "openai",
        "--judge-base-url",
        &url,
        "--judge-model-name",
        "judge",
        "--judge-concurrency",
        "3",
        input.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let judge_rows = v["judge"].as_array().unwrap();
    let find = |m: &str, o: &str| {
        judge_rows
            .iter()
            .find(|r| r["model"] == m && r["opponent"] == o)
            .unwrap_or_else(|| panic!("no {m} vs {o}: {judge_rows:?}"))
    };
    let g = find("good", "bad");
    assert_eq!(
        (g["win"].as_u64(), g["tie"].as_u64(), g["loss"].as_u64()),
        (Some(6), Some(0), Some(0))
    );
    let ci = g["win_ci95"].as_array().unwrap();
    assert!(
        ci[0].as_f64().unwrap() > 0.5 && ci[1].as_f64() == Some(1.0),
        "{ci:?}"
    );
    assert_eq!(find("bad", "good")["loss"].as_u64(), Some(6));
    // The position-biased judge says A in both orders: a tie, not a win.
    let t = find("bad", "worse");
    assert_eq!(
        (t["win"].as_u64(), t["tie"].as_u64(), t["loss"].as_u64()),
        (Some(0), Some(6), Some(0))
    );
    assert!(judge_rows
        .iter()
        .all(|r| r["model"] != "oracle" && r["opponent"] != "oracle"));
    let (table, _, _) = score(&[
        "--judge",
        "openai",
        "--judge-base-url",
        &url,
        "--judge-model-name",
        "judge",
        input.to_str().unwrap(),
    ]);
    assert!(
        table.contains("LLM judge")
            && table.contains("| good | bad | cpp_unit_test | po | 6 | 100.0 | 0.0 | 0.0 |"),
        "{table}"
    );
}

/// The paper's reading (`--judge-order single`): each pair asked once, the first model by
/// name as A, so the position-biased judge's `A` is a win; with a swap seed about half the
/// pairs show the other model first. A judge that cannot be reached decides nothing: its
/// pairs are `undecided` (not ties), a warning says so, and the exit code is 3.
#[test]
fn the_judge_in_one_order_and_a_judge_that_is_down() {
    let judge = fake_judge();
    let dir = tempfile::tempdir().unwrap();
    let input = write_cpp_answers(
        dir.path(),
        40,
        &[
            ("oracle", "TEST(R, T) { GOOD(); }"),
            ("bad", "TEST(R, B) { BAD(); }"),
            ("worse", "TEST(R, C) { }"),
        ],
    );
    let url = judge.url();
    let run = |url: &str, extra: &[&str]| {
        let mut args = vec![
            "--format",
            "json",
            "--judge",
            "openai",
            "--judge-base-url",
            url,
            "--judge-model-name",
            "judge",
            "--judge-max-retries",
            "0",
        ];
        args.extend_from_slice(extra);
        args.push(input.to_str().unwrap());
        let (out, stderr, code) = score(&args);
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        (v, stderr, code)
    };
    let counts = |v: &Value| {
        let r = v["judge"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["model"] == "bad" && r["opponent"] == "worse")
            .cloned()
            .unwrap();
        let n = |k: &str| r[k].as_u64().unwrap();
        (n("win"), n("tie"), n("loss"), n("undecided"), n("orders"))
    };
    let (v, stderr, code) = run(&url, &["--judge-order", "single"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&v), (40, 0, 0, 0, 1), "`bad` is always shown as A");
    let (v, _, _) = run(&url, &["--judge-order", "single", "--judge-swap-seed", "7"]);
    let (win, tie, loss, undecided, _) = counts(&v);
    assert_eq!((tie, undecided, win + loss), (0, 0, 40));
    assert!((10..=30).contains(&win), "a seeded half swapped: {win}");
    let (again, _, _) = run(&url, &["--judge-order", "single", "--judge-swap-seed", "7"]);
    assert_eq!(
        counts(&again),
        counts(&v),
        "the same seed swaps the same pairs"
    );
    let (v, _, code) = run(&url, &[]);
    assert_eq!(
        (code, counts(&v)),
        (0, (0, 40, 0, 0, 2)),
        "both orders: a tie"
    );

    let down = clover_testkit::fake_chat::refused_url();
    let (v, stderr, code) = run(&down, &[]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(counts(&v), (0, 0, 0, 40, 2), "no pair passes as a tie");
    assert!(
        stderr.contains("the judge failed 80 request(s)") && stderr.contains("undecided"),
        "{stderr}"
    );
    let table = {
        let args = [
            "--judge",
            "openai",
            "--judge-base-url",
            &down,
            "--judge-model-name",
            "judge",
            "--judge-max-retries",
            "0",
            input.to_str().unwrap(),
        ];
        score(&args).0
    };
    assert!(
        table.contains("| win 95% CI | undecided |")
            && table.contains(
                "| bad | worse | cpp_unit_test | po | 0 | 0.0 | 0.0 | 0.0 | 0.0–100.0 | 40 |"
            ),
        "{table}"
    );
}

/// The judge's ground truth from `--instances`: a bad line there is reported with its file and
/// line and counted (exit 3), and every other instance is still judged.
#[test]
fn bad_lines_in_the_instances_file_are_reported_and_the_rest_judged() {
    use clover_protocol::{ExecSpec, Instance};
    let judge = fake_judge();
    let dir = tempfile::tempdir().unwrap();
    let (mut rs, mut instances) = (Vec::new(), Vec::new());
    for k in 0..4 {
        let id = format!("cppfix/src/ring_buffer.cc#chunk{k}@po");
        rs.extend(passed_cpp_answers(
            &id,
            &[
                ("good", "TEST(R, A) { GOOD(); }"),
                ("bad", "TEST(R, B) { }"),
            ],
        ));
        let instance = Instance {
            kind: RecordKind::Instance,
            schema_version: SCHEMA_VERSION,
            id: id.clone(),
            problem_id: id,
            repo: "cppfix".into(),
            task: Task::CppUnitTest,
            setting: "po".into(),
            answer_format: "full".into(),
            prompt: "Write tests.\n".into(),
            messages: vec![],
            prompt_tokens: 3,
            context_files: vec![],
            reference: "TEST(R, T) { GOOD(); }".into(),
            exec: ExecSpec::default(),
            scoring: Default::default(),
        };
        instances.push(serde_json::to_string(&instance).unwrap());
        if k == 1 {
            instances.push("{\"kind\": \"instance\", \"id\": ".into());
        }
    }
    let input = dir.path().join("results.jsonl");
    let lines = |v: &[String]| v.iter().map(|l| format!("{l}\n")).collect::<String>();
    let results: Vec<String> = rs
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    std::fs::write(&input, lines(&results)).unwrap();
    let instances_path = dir.path().join("instances.jsonl");
    std::fs::write(&instances_path, lines(&instances)).unwrap();
    let url = judge.url();
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "--format",
            "json",
            "--judge",
            "openai",
            "--judge-base-url",
            &url,
            "--judge-model-name",
            "judge",
            "--instances",
            instances_path.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a.push(input.to_str().unwrap().into());
        a
    };
    let a = args(&[]);
    let (out, stderr, code) = score(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains(&format!("{}:3: malformed JSON", instances_path.display())),
        "{stderr}"
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let row = v["judge"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"] == "good" && r["opponent"] == "bad")
        .cloned()
        .unwrap_or_else(|| panic!("no good vs bad: {v}"));
    assert_eq!(row["win"].as_u64(), Some(4), "{row}");
    let a = args(&["--on-error", "stop"]);
    let (_, stderr, code) = score(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 4, "{stderr}");
}

/// `--rer-constants`: a passing answer `-1` to `assert <MASK>` is RER as `ast.Constant` reads
/// it (the default: a `UnaryOp` is no constant) and trivial in clover's reading.
#[test]
fn rer_constants_is_a_flag_with_ast_as_default() {
    let dir = tempfile::tempdir().unwrap();
    let scoring = json!({"reference": "x", "form": "unary", "operator": null,
        "other_operand": null, "other_is_constant": null, "masked_line": "assert <MASK>"});
    let r = result(
        "m",
        "r/t.py::test_a#0",
        Task::AssertionCloze,
        "po",
        "r",
        Outcome::Passed,
        "-1",
        vec![],
        scoring,
    );
    let path = dir.path().join("results.jsonl");
    std::fs::write(&path, serde_json::to_string(&r).unwrap() + "\n").unwrap();
    let path = path.to_str().unwrap();
    let rer = |extra: &[&str]| {
        let mut args = vec!["--format", "json", path];
        args.extend_from_slice(extra);
        let (out, stderr, code) = score(&args);
        assert_eq!(code, 0, "{stderr}");
        let v: Value = serde_json::from_str(&out).unwrap();
        v["rows"][0]["metrics"]["rer"].as_f64().unwrap()
    };
    assert_eq!(rer(&[]), 1.0);
    assert_eq!(rer(&["--rer-constants", "ast"]), 1.0);
    assert_eq!(rer(&["--rer-constants", "clover"]), 0.0);
}
