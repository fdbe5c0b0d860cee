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
        mutation: Default::default(),
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
    (
        write_jsonl(&dir.join("oracle.jsonl"), &a),
        write_jsonl(&dir.join("baseline.jsonl"), &b),
    )
}

/// Writes `rs` as JSON Lines to `path`; returns the path as text.
fn write_jsonl(path: &Path, rs: &[RunResult]) -> String {
    let text: String = rs
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(path, text).unwrap();
    path.display().to_string()
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
    let path = write_jsonl(&dir.path().join("results.jsonl"), &rs);
    let path = path.as_str();

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
        table.contains("| no_code_rate | rejected_rate | forged_rate | error_rate |")
            && table.contains("| m | po | * | 4 | 100.0 | 100.0 | 0.0 | 0.0 | 0.0 | 75.0 |")
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
    let html = dir.path().join("report.html");
    let (_, stderr, code) = score(&html_report_args(dir.path()).as_refs());
    assert_eq!(code, 0, "{stderr}");
    let page = std::fs::read_to_string(&html).unwrap();
    for external in ["src=", "<link", "<script", "url(", "@import"] {
        assert!(!page.contains(external), "self-contained: no `{external}`");
    }
    // The only links: the samples files beside the page.
    assert!(
        page.split("href=\"")
            .skip(1)
            .all(|rest| rest.starts_with("report.samples/")),
        "relative links only"
    );

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
    // Then one per task and repository: 11 + 4 × 2 charts, two models each.
    assert_eq!(dom.matches("<svg").count(), 19, "{dom}");
    assert_eq!(dom.matches("class=\"series\"").count(), 38);
    assert!(dom.contains("data-model=\"copy-operand\""));
    assert!(dom.contains("<table>"));
    for section in ["id=\"metadata\"", "id=\"legend\"", "id=\"leaderboard\""] {
        assert!(dom.contains(section), "{section} in the DOM");
    }
    assert!(dom.contains("meta-llama/Llama-3.1-8B-Instruct") && dom.contains("2026-12-01"));
    assert_eq!(dom.matches("class=\"samples\"").count(), 2 * 4 * 3 * 3);
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

/// `score`'s flags for the fake judge at `url`, then `rest`.
fn with_judge<'a>(url: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--judge",
        "openai",
        "--judge-base-url",
        url,
        "--judge-model-name",
        "judge",
    ];
    args.extend_from_slice(rest);
    args
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
    let (out, stderr, code) = score(&with_judge(
        &url,
        &[
            "--format",
            "json",
            "--judge-concurrency",
            "3",
            input.to_str().unwrap(),
        ],
    ));
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
    let (table, _, _) = score(&with_judge(&url, &[input.to_str().unwrap()]));
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
        let mut args = with_judge(url, &["--format", "json", "--judge-max-retries", "0"]);
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
        let args = with_judge(
            &down,
            &["--judge-max-retries", "0", input.to_str().unwrap()],
        );
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
        let mut a: Vec<String> = with_judge(
            &url,
            &[
                "--format",
                "json",
                "--instances",
                instances_path.to_str().unwrap(),
            ],
        )
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

/// An element of a parsed page: its name, attributes, parent and all the text inside it.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: std::collections::BTreeMap<String, String>,
    parent: Option<usize>,
    text: String,
}

/// The page parsed as XML (the report is well-formed XHTML): every element, in document
/// order. A page that is not well-formed fails the test here.
fn parse_page(page: &str) -> Vec<Element> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(page);
    let mut out: Vec<Element> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    loop {
        let event = reader.read_event().expect("well-formed page");
        let (start, empty) = match &event {
            Event::Start(e) => (Some(e.clone()), false),
            Event::Empty(e) => (Some(e.clone()), true),
            _ => (None, false),
        };
        if let Some(e) = start {
            let attrs = e
                .attributes()
                .map(|a| {
                    let a = a.expect("attribute");
                    (
                        String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                        a.unescape_value().unwrap().into_owned(),
                    )
                })
                .collect();
            out.push(Element {
                name: String::from_utf8(e.name().as_ref().to_vec()).unwrap(),
                attrs,
                parent: open.last().copied(),
                text: String::new(),
            });
            if !empty {
                open.push(out.len() - 1);
            }
            continue;
        }
        match event {
            Event::End(_) => {
                open.pop();
            }
            Event::Text(t) => {
                let t = t.unescape().unwrap();
                for &i in &open {
                    out[i].text.push_str(&t);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(open.is_empty(), "unclosed elements");
    out
}

/// Whether element `i` lies inside element `ancestor`.
fn inside(page: &[Element], mut i: usize, ancestor: usize) -> bool {
    while let Some(p) = page[i].parent {
        if p == ancestor {
            return true;
        }
        i = p;
    }
    false
}

fn by_id(page: &[Element], id: &str) -> usize {
    page.iter()
        .position(|e| e.attrs.get("id").is_some_and(|v| v == id))
        .unwrap_or_else(|| panic!("no element #{id}"))
}

/// Response records of both fixture models, as generate writes them: the settings the
/// report's metadata shows.
fn write_responses(dir: &Path) -> String {
    let response = |setting: &str, model: &str, name: &str, adapter: &str, t: Option<f64>| {
        json!({
            "kind": "response", "schema_version": SCHEMA_VERSION,
            "id": format!("pyfix/c#{setting}@{model}"),
            "instance_id": format!("pyfix/c#{setting}"), "model": model,
            "task": "assertion_cloze", "setting": setting, "repo": "pyfix", "text": "x",
            "error": null,
            "generation": {"adapter": adapter, "model_name": name,
                "base_url": "http://127.0.0.1:8000/v1", "temperature": t,
                "top_p": 0.95, "max_tokens": 200, "seed": 7, "attempts": 1,
                "duration_secs": 0.5, "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
            "exec": {"repo": "pyfix", "language": null, "candidate_path": "t.py", "prefix": "",
                "suffix": "", "selectors": []},
            "scoring": {}
        })
        .to_string()
    };
    let llama = "meta-llama/Llama-3.1-8B-Instruct";
    let p = dir.join("responses.jsonl");
    let text = [
        response("po", "copy-operand", llama, "openai", Some(0.2)),
        // A second call of the same model with the same settings is one entry.
        response("4k", "copy-operand", llama, "openai", Some(0.2)),
        response("po", "oracle", "oracle", "oracle", None),
    ]
    .join("\n");
    std::fs::write(&p, text + "\n").unwrap();
    p.display().to_string()
}

/// The fixture's results and responses written to `dir`, and the arguments that make
/// `dir/report.html` of them.
struct HtmlArgs {
    oracle: String,
    baseline: String,
    responses: String,
    args: Vec<String>,
}

impl HtmlArgs {
    fn as_refs(&self) -> Vec<&str> {
        self.args.iter().map(String::as_str).collect()
    }
}

fn html_report_args(dir: &Path) -> HtmlArgs {
    let (oracle, baseline) = write_results(dir);
    let responses = write_responses(dir);
    let html = dir.join("report.html").display().to_string();
    let args = [
        "--format",
        "html",
        "-o",
        &html,
        "--responses",
        &responses,
        "--date",
        "2026-12-01",
        &oracle,
        &baseline,
    ]
    .map(String::from)
    .to_vec();
    HtmlArgs {
        oracle,
        baseline,
        responses,
        args,
    }
}

/// The HTML report: metadata (date, version, inputs, models with full ids and sampling), the
/// legend, a leaderboard, a chart per metric (EM and ER too) and per repository, intervals,
/// and every row linked to a samples file that holds exactly its results; the same input
/// gives the same bytes.
#[test]
fn html_report_has_metadata_legend_leaderboard_charts_and_sample_links() {
    let dir = tempfile::tempdir().unwrap();
    let owned = html_report_args(dir.path());
    let args = owned.as_refs();
    let [oracle, baseline, responses] = [&owned.oracle, &owned.baseline, &owned.responses];
    let html = dir.path().join("report.html");
    let (_, stderr, code) = score(&args);
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&html).unwrap();
    let page = parse_page(&text);

    let meta = &page[by_id(&page, "metadata")].text;
    for expected in [
        "2026-12-01",
        env!("CARGO_PKG_VERSION"),
        oracle.as_str(),
        baseline.as_str(),
        "24 result(s)",
        responses.as_str(),
        "meta-llama/Llama-3.1-8B-Instruct",
        "http://127.0.0.1:8000/v1",
        "0.2",
        "0.95",
        "1000 replicates, seed 0",
    ] {
        assert!(
            meta.contains(expected),
            "metadata lacks {expected:?}: {meta}"
        );
    }
    let models = page
        .iter()
        .filter(|e| e.name == "table" && e.attrs.get("class").is_some_and(|c| c == "models"))
        .map(|t| &t.text)
        .next()
        .expect("a models table");
    assert_eq!(models.matches("copy-operand").count(), 1, "{models}");

    let legend = by_id(&page, "legend");
    let terms: Vec<&str> = page
        .iter()
        .enumerate()
        .filter(|(i, e)| e.name == "dt" && inside(&page, *i, legend))
        .map(|(_, e)| e.text.as_str())
        .collect();
    for t in [
        "em",
        "er",
        "rer",
        "success_rate",
        "called_rate",
        "error_rate",
        "95% CI",
    ] {
        assert!(terms.contains(&t), "legend lacks {t}: {terms:?}");
    }

    // The leaderboard: one table per task, the oracle first on Task III.
    let boards: Vec<usize> = page
        .iter()
        .enumerate()
        .filter(|(_, e)| e.attrs.get("class").is_some_and(|c| c == "leaderboard"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(boards.len(), 4);
    let task3 = boards
        .iter()
        .copied()
        .find(|&i| page[i].attrs["data-task"] == "coverage_test")
        .unwrap();
    let first_row = page
        .iter()
        .enumerate()
        .find(|(i, e)| e.name == "tr" && inside(&page, *i, task3) && e.text.starts_with('1'))
        .unwrap()
        .1;
    assert!(
        first_row.text.starts_with("1oracle100.0"),
        "{}",
        first_row.text
    );

    // A chart per task and metric over all repositories, and one per task and repository.
    let charts: Vec<(&str, &str, &str)> = page
        .iter()
        .filter(|e| e.name == "svg" && e.attrs.contains_key("data-metric"))
        .map(|e| {
            (
                e.attrs["data-task"].as_str(),
                e.attrs["data-metric"].as_str(),
                e.attrs["data-repo"].as_str(),
            )
        })
        .collect();
    for metric in ["em", "er", "rer"] {
        assert!(
            charts.contains(&("assertion_cloze", metric, "*")),
            "{charts:?}"
        );
    }
    for task in [
        "assertion_cloze",
        "targeted_test",
        "coverage_test",
        "cpp_unit_test",
    ] {
        for repo in ["pyfix", "other"] {
            assert_eq!(
                charts.iter().filter(|c| c.0 == task && c.2 == repo).count(),
                1,
                "{task} {repo}: {charts:?}"
            );
        }
    }
    assert_eq!(charts.len(), 11 + 8);
    assert!(text.contains("class=\"ci\""), "intervals are drawn");

    // Every row links to its samples; each file holds exactly the row's results.
    let links: Vec<(&Element, &str)> = page
        .iter()
        .filter(|e| e.name == "a")
        .map(|e| (e, e.attrs["href"].as_str()))
        .collect();
    let rows = 2 * 4 * 3 * 3;
    assert_eq!(links.len(), rows);
    for (a, href) in &links {
        assert!(
            href.starts_with("report.samples/") && !href.contains(".."),
            "{href}"
        );
        let row = &page[a.parent.and_then(|td| page[td].parent).unwrap()];
        let file = dir.path().join(href);
        let mut reader = RecordReader::open(Some(&file), DEFAULT_MAX_LINE_BYTES).unwrap();
        let mut n = 0;
        while let Some(r) = reader.next_record::<RunResult>() {
            let r = r.unwrap().1;
            assert!(row.text.starts_with(&r.model), "{} in {}", r.id, row.text);
            assert!(
                row.text.contains(&format!("{}{}", r.setting, r.repo))
                    || row.text.contains(&format!("{}*", r.setting)),
                "{} in {}",
                r.id,
                row.text
            );
            n += 1;
        }
        assert_eq!(a.text, format!("{n} result(s)"));
    }

    // The JSON carries the same metadata, an unset setting as null.
    let (json, _, _) = score(&[
        "--format",
        "json",
        "--responses",
        responses,
        "--date",
        "2026-12-01",
        oracle,
        baseline,
    ]);
    let meta: Value = serde_json::from_str::<Value>(&json).unwrap()["metadata"].clone();
    assert_eq!(meta["date"], "2026-12-01");
    let models = meta["models"].as_array().unwrap();
    assert_eq!(models.len(), 2, "{meta}");
    assert_eq!(models[0]["model"], "copy-operand");
    assert_eq!(models[0]["model_name"], "meta-llama/Llama-3.1-8B-Instruct");
    assert_eq!(models[0]["temperature"], 0.2);
    assert_eq!(models[1]["temperature"], Value::Null);
    assert_eq!(meta["responses"][0]["records"], 3);

    // The same input gives the same bytes, samples included.
    let samples = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(d.join("report.samples"))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().into_string().unwrap(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = samples(dir.path());
    assert_eq!(before.len(), rows);
    let (_, stderr, code) = score(&args);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read_to_string(&html).unwrap(), text);
    assert_eq!(samples(dir.path()), before);
}

/// An HTML report to an output that is no regular file has no samples folder beside it: as
/// root, `-o /dev/null` would otherwise make one in the host's /dev.
#[test]
fn an_html_report_to_dev_null_writes_no_samples() {
    let dir = tempfile::tempdir().unwrap();
    let (oracle, _) = write_results(dir.path());
    let (_, stderr, code) = score(&["--format", "html", "-o", "/dev/null", &oracle]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!Path::new("/dev/null.samples").exists());
}

/// Without --date the run date comes from SOURCE_DATE_EPOCH, and without either the report
/// says it was not recorded: no output reads the clock.
#[test]
fn the_run_date_is_given_never_read_from_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let (oracle, _) = write_results(dir.path());
    let run = |epoch: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_clover-score"));
        cmd.args(["--format", "json", "--bootstrap", "0", &oracle])
            .env_remove("SOURCE_DATE_EPOCH");
        if let Some(e) = epoch {
            cmd.env("SOURCE_DATE_EPOCH", e);
        }
        let out = cmd.output().unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let v = run(Some("1700000000"));
    assert_eq!(v["metadata"]["date"], "2023-11-14 22:13:20 UTC");
    assert_eq!(v["metadata"]["bootstrap"]["replicates"], 0);
    assert!(v["rows"][0]["ci"].as_object().unwrap().is_empty());
    assert_eq!(run(None)["metadata"]["date"], Value::Null);
}

/// Intervals in the table and the JSON: seeded, so a rerun gives the same bytes, and another
/// seed may move them but never the point estimates.
#[test]
fn intervals_in_the_table_and_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let (oracle, baseline) = write_results(dir.path());
    let (out, stderr, code) = score(&["--format", "json", &oracle, &baseline]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let r = row(rows, "oracle", "coverage_test", "po", "*");
    // One of the two results succeeds: the resamples go from none to both.
    assert_eq!(r["ci"]["success_rate"], json!([0.0, 1.0]));
    assert_eq!(r["ci"]["execution_rate"], json!([1.0, 1.0]));
    let (table, _, _) = score(&[&oracle, &baseline]);
    assert!(table.contains("| success_rate 95% CI |"), "{table}");
    assert!(
        table
            .contains("| oracle | po | * | 2 | 100.0 | 50.0 | 0.0 | 0.0 | 0.0 | 0.0 | 0.0–100.0 |"),
        "{table}"
    );
    assert!(
        table.contains("percentile bootstrap over the row's instances (1000 replicates, seed 0)")
    );
    let (again, _, _) = score(&["--format", "json", &oracle, &baseline]);
    assert_eq!(out, again);
}

/// The table of `id` in `--tables paper --format json` output.
fn paper_table<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no table {id}"))
}

/// `--tables paper` through the binary: every table in Markdown and JSON, the statistics from
/// the instances file, and the HTML with CPP-UT-Bench's figures.
#[test]
fn paper_tables_from_results_and_instances() {
    let dir = tempfile::tempdir().unwrap();
    let (oracle, baseline) = write_results(dir.path());
    let (md, stderr, code) = score(&["--tables", "paper", &oracle, &baseline]);
    assert_eq!(code, 0, "{stderr}");
    for title in [
        "## CLOVER Table 2",
        "## CLOVER Table 3",
        "## CLOVER Table 8",
        "## CLOVER §4.1",
        "## CPP-UT-Bench Table 1",
    ] {
        assert!(md.contains(title), "{title}: {md}");
    }
    // Task I in problem-only (Table 3): the baseline copies the other operand, so it runs
    // but is never EM nor RER.
    assert!(md.contains("| copy-operand | 0.0 | 100.0 | 0.0 |"), "{md}");
    // Table 4: its RER over PO and the paper's budgets, 4k and 16k run.
    assert!(
        md.contains("| copy-operand | 0.0 | 0.0 | — | 50.0 | — | — | — | 50.0 | +50.0 | +0.0 |"),
        "{md}"
    );
    assert!(md.contains("pass it with --instances"), "{md}");

    let instances = dir.path().join("instances.jsonl");
    let instance = |problem: &str, task: &str, setting: &str, tokens: u32| {
        json!({
            "kind": "instance", "schema_version": SCHEMA_VERSION,
            "id": format!("{problem}#{setting}"), "problem_id": problem, "repo": "pyfix",
            "task": task, "setting": setting, "answer_format": "file", "prompt": "p",
            "messages": [], "prompt_tokens": tokens, "context_files": [],
            "reference": "TEST(A, B) {}\n",
            "exec": {"repo": "pyfix", "language": null, "candidate_path": "t.cc", "prefix": "",
                "suffix": "", "selectors": []},
            "scoring": {"chunk_count": 1}
        })
        .to_string()
    };
    std::fs::write(
        &instances,
        [
            instance("pyfix/c", "assertion_cloze", "po", 100),
            instance("pyfix/c", "assertion_cloze", "4k", 3000),
            instance("pyfix/x.cc", "cpp_unit_test", "po", 500),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    let inst = instances.to_str().unwrap();
    let paper_json = |extra: &[&str]| -> Value {
        let mut args = vec!["--tables", "paper", "--format", "json"];
        args.extend_from_slice(extra);
        let (json, stderr, code) = score(&args);
        assert_eq!(code, 0, "{stderr}");
        serde_json::from_str(&json).unwrap()
    };
    let v = paper_json(&["--instances", inst, &oracle, &baseline]);
    let t2 = &v["tables"][0];
    assert_eq!(t2["id"], "clover-2");
    assert_eq!(
        t2["rows"][0],
        json!(["assertion_cloze", "PO", 1, 1, 1, 100.0])
    );
    let cpp = paper_table(&v, "cpp-fig-2-3");
    assert_eq!(
        cpp["rows"][0],
        json!(["pyfix", 1, 0, 1, null, null, null, 1.0, 1.0, 1, 500.0])
    );

    // extract's problem record gives the source's and the test's lengths.
    let problems = dir.path().join("problems.jsonl");
    let span = json!({"start_line": 1, "end_line": 4, "start_byte": 0, "end_byte": 40});
    let problem = json!({
        "kind": "problem", "schema_version": SCHEMA_VERSION, "id": "pyfix/x.cc",
        "repo": "pyfix", "language": "cpp", "python": null,
        "cpp": {"file_name": "x.cc", "file_path": "src/x.cc", "test_path": "t/x_test.cc",
            "header_path": null, "code": "int f() {\n  return 1;\n}\nint g();\n",
            "unit_test": "TEST(X, F) {\n  EXPECT_EQ(f(), 1);\n}\n", "tests": [],
            "chunks": [{"index": 0, "span": span, "code": ""}]}
    });
    std::fs::write(&problems, format!("{problem}\n")).unwrap();
    let problems = problems.to_str().unwrap();
    let v = paper_json(&["--instances", inst, "--problems", problems, &oracle]);
    // Table 1 holds the domain, which only a manifest gives.
    assert_eq!(paper_table(&v, "cpp-1")["rows"][0], json!(["pyfix", null]));
    let cpp = paper_table(&v, "cpp-fig-2-3");
    assert_eq!(
        cpp["rows"][0],
        json!(["pyfix", 1, 0, 1, 4.0, 4.0, 4, 3.0, 3.0, 3, 500.0])
    );

    let html = dir.path().join("paper.html");
    let (_, stderr, code) = score(&[
        "--tables",
        "paper",
        "--format",
        "html",
        "--instances",
        inst,
        "--problems",
        problems,
        "-o",
        html.to_str().unwrap(),
        &oracle,
        &baseline,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let page = std::fs::read_to_string(&html).unwrap();
    let parsed = parse_page(&page);
    for id in [
        "metadata",
        "clover-2",
        "clover-3",
        "clover-gap",
        "cpp-1",
        "cpp-fig-2-3",
        "cpp-pairs",
        "cpp-source-lines",
        "cpp-test-lines",
    ] {
        by_id(&parsed, id);
    }
    let (_, stderr, code) = score(&["--tables", "paper", "--format", "jsonl", &oracle]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--tables paper"), "{stderr}");
}

/// A Task III result whose mutation pass kept `kept` mutants (3 of them `comparison`, the
/// rest `constant`) and killed `killed`, the comparisons first.
fn mutated(model: &str, instance: &str, outcome: Outcome, kept: u32, killed: u32) -> RunResult {
    let blocks =
        json!({"blocks": [{"path": "src/ledger/money.py", "start_line": 101, "end_line": 106}]});
    let mut r = result(
        model,
        instance,
        Task::CoverageTest,
        "po",
        "pyfix",
        outcome,
        "assert f()",
        vec![("src/ledger/money.py", (101..=106).collect())],
        blocks,
    );
    let comparison = kept.min(3);
    r.mutation = clover_protocol::Mutation {
        kept: Some(kept),
        run: if outcome == Outcome::Passed { kept } else { 0 },
        killed,
        operators: vec![
            clover_protocol::OperatorKills {
                operator: "comparison".into(),
                kept: comparison,
                killed: killed.min(comparison),
            },
            clover_protocol::OperatorKills {
                operator: "constant".into(),
                kept: kept - comparison,
                killed: killed.saturating_sub(comparison),
            },
        ],
        ..Default::default()
    };
    r
}

/// `mutation_score` is killed over kept mutants pooled over a row, in the table, the JSON
/// (with each operator's kill rate) and the HTML; the oracle kills every kept mutant and
/// assert-true none; a row without a pass has no such column.
#[test]
fn the_mutation_score_is_a_column_with_kill_rates_by_operator() {
    let dir = tempfile::tempdir().unwrap();
    let rs = [
        mutated("oracle", "pyfix/a", Outcome::Passed, 5, 5),
        mutated("oracle", "pyfix/b", Outcome::Passed, 3, 3),
        mutated("assert_true", "pyfix/a", Outcome::Passed, 5, 0),
        mutated("assert_true", "pyfix/b", Outcome::Passed, 3, 0),
        mutated("m", "pyfix/a", Outcome::Passed, 5, 4),
        mutated("m", "pyfix/b", Outcome::Failed, 3, 0),
    ];
    let path = write_jsonl(&dir.path().join("results.jsonl"), &rs);
    let path = path.as_str();
    let (out, stderr, code) = score(&["--format", "json", path]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let score_of = |model: &str| {
        row(rows, model, "coverage_test", "po", "*")["metrics"]["mutation_score"].clone()
    };
    assert_eq!(score_of("oracle"), 1.0);
    assert_eq!(score_of("assert_true"), 0.0);
    assert_eq!(score_of("m"), 0.5);
    let m = &row(rows, "m", "coverage_test", "po", "*")["mutation"];
    assert_eq!(
        (m["kept"].as_u64(), m["killed"].as_u64()),
        (Some(8), Some(4))
    );
    assert_eq!(m["operators"]["comparison"]["kill_rate"], 0.5);
    assert_eq!(m["operators"]["constant"]["kept"], 2);
    assert_eq!(m["operators"]["constant"]["kill_rate"], 0.5);

    let (table, _, code) = score(&["--format", "table", path]);
    assert_eq!(code, 0);
    let header = table.lines().find(|l| l.starts_with("| model |")).unwrap();
    assert!(
        header.contains("| success_rate | mutation_score | no_code_rate |"),
        "{header}"
    );
    let oracle = table.lines().find(|l| l.starts_with("| oracle |")).unwrap();
    assert!(oracle.contains("100.0"), "{oracle}");

    let html = dir.path().join("report.html");
    let (_, stderr, code) = score(&["--format", "html", "-o", html.to_str().unwrap(), path]);
    assert_eq!(code, 0, "{stderr}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<th>mutation_score (%)</th>"));

    // Without a pass, no column.
    let plain = dir.path().join("plain.jsonl");
    let mut r = rs[0].clone();
    r.mutation = Default::default();
    std::fs::write(&plain, serde_json::to_string(&r).unwrap() + "\n").unwrap();
    let (table, _, _) = score(&["--format", "table", plain.to_str().unwrap()]);
    assert!(!table.contains("mutation_score"), "{table}");
}

/// C++ rows carry the mutation score too (sandbox-run's pass over the focal source's kept
/// mutants): the oracle 100%, a test without assertions 0%, in the JSON and the table.
#[test]
fn cpp_rows_show_the_mutation_score() {
    let dir = tempfile::tempdir().unwrap();
    let cpp = |model: &str, killed: u32| {
        let mut r = mutated(model, "cppfix/src/a.cc", Outcome::Passed, 4, killed);
        r.task = Some(Task::CppUnitTest);
        r.instance_id = "cppfix/src/a.cc#cpp_unit_test#po".into();
        r.id = format!("{}@{model}", r.instance_id);
        r.scoring = serde_json::from_value(
            json!({"focal_source": "src/a.cc", "focal_coverage": [[1, 10]]}),
        )
        .unwrap();
        r
    };
    let rs = [cpp("oracle", 4), cpp("assert_true", 0)];
    let path = write_jsonl(&dir.path().join("results.jsonl"), &rs);
    let (out, stderr, code) = score(&["--format", "json", path.as_str()]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let score_of = |model: &str| {
        row(rows, model, "cpp_unit_test", "po", "*")["metrics"]["mutation_score"].as_f64()
    };
    assert_eq!(
        (score_of("oracle"), score_of("assert_true")),
        (Some(1.0), Some(0.0))
    );
    let (table, _, code) = score(&["--format", "table", path.as_str()]);
    assert_eq!(code, 0);
    let header = table.lines().find(|l| l.starts_with("| model |")).unwrap();
    assert!(header.contains("| mutation_score |"), "{header}");
}

/// Judge-only results (outcome `judge_only`: calibrate could not run the pair's ground
/// truth) are judged like any other pair and counted so, but are in no execution row: a
/// model is not charged with a run that never happened, nor credited with one.
#[test]
fn judge_only_results_are_judged_and_in_no_execution_metric() {
    let judge = fake_judge();
    let dir = tempfile::tempdir().unwrap();
    let answers = [
        ("oracle", "TEST(R, T) { GOOD(); }"),
        ("good", "TEST(R, A) { GOOD(); }"),
        ("bad", "TEST(R, B) { BAD(); }"),
    ];
    let mut results = Vec::new();
    for k in 0..2 {
        results.extend(passed_cpp_answers(
            &format!("cppfix/src/ran.cc#{k}"),
            &answers,
        ));
        for mut r in passed_cpp_answers(&format!("cppfix/src/broken.cc#{k}"), &answers) {
            r.outcome = Outcome::JudgeOnly;
            r.scoring
                .insert("judge_only".into(), json!("compile_error"));
            results.push(r);
        }
    }
    let input = write_jsonl(&dir.path().join("results.jsonl"), &results);
    let url = judge.url();
    let (out, stderr, code) = score(&with_judge(&url, &["--format", "json", &input]));
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    for model in ["oracle", "good", "bad"] {
        let r = row(rows, model, "cpp_unit_test", "po", "*");
        assert_eq!(r["n"], 2, "only the pairs that ran: {r}");
        assert_eq!(r["metrics"]["pass_rate"], 1.0, "{r}");
    }
    assert_eq!(v["judge_only"]["cpp_unit_test"], 6, "{}", v["judge_only"]);
    let g = v["judge"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"] == "good" && r["opponent"] == "bad")
        .unwrap();
    assert_eq!(
        (g["n"].as_u64(), g["win"].as_u64(), g["judge_only"].as_u64()),
        (Some(4), Some(4), Some(2)),
        "every pair judged, the judge-only ones counted: {g}"
    );

    let (table, stderr, code) = score(&with_judge(&url, &[&input]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        table.contains("6 result(s) are judge-only")
            && table.contains("| good | bad | cpp_unit_test | po | 4 | 100.0 | 0.0 | 0.0 |")
            && table.contains("| 0 | 2 |"),
        "{table}"
    );
}

/// The committed rendering of every paper table (`--tables paper`, Markdown).
const PAPER_TABLES_EXPECTED: &str = "tests/data/paper_tables.expected.md";

/// A fixed set of results that fills every paper table: three models, one of them without a
/// maximum context; Task I in PO and three budgets (one partly over a model's maximum
/// context); Tasks II and III in both answer formats, with a setting of each that the paper
/// does not build the task in (Task II 128k, Task III PO); C++ pairs in two repositories,
/// one with a domain in the manifest.
fn paper_fixture(dir: &Path) -> Vec<String> {
    let cloze = json!({"reference": "total", "form": "binary", "operator": "==",
        "other_operand": "ledger.total()", "other_is_constant": false,
        "masked_line": "    assert ledger.total() == <MASK>"});
    let target = json!({"target": {"name": "Ledger", "kind": "class",
        "path": "src/ledger/accounts.py", "start_line": 10, "end_line": 30}});
    let blocks =
        json!({"blocks": [{"path": "src/ledger/money.py", "start_line": 101, "end_line": 106}]});
    let mut out = Vec::new();
    let mut add = |model: &str,
                   task: Task,
                   format: &str,
                   setting: &str,
                   n: usize,
                   outcome: Outcome,
                   answer: &str,
                   coverage: Vec<(&str, Vec<u32>)>| {
        let mut scoring = match task {
            Task::AssertionCloze => cloze.clone(),
            Task::TargetedTest => target.clone(),
            _ => blocks.clone(),
        };
        scoring["answer_format"] = json!(format);
        let id = format!("pyfix/{task:?}/{n}#{setting}#{format}");
        out.push(result(
            model, &id, task, setting, "pyfix", outcome, answer, coverage, scoring,
        ));
    };
    use Outcome::{Failed, OverMaxContext, Passed};
    use Task::{AssertionCloze as I, CoverageTest as III, TargetedTest as II};
    // Task I. big-128k: a trivial pass at PO, the reference at 4k and 128k, a failure at 8k.
    for (setting, answers) in [
        ("po", [("ledger.total()", Passed), ("total", Passed)]),
        ("4k", [("total", Passed), ("total", Passed)]),
        ("8k", [("total", Failed), ("total", Passed)]),
        ("128k", [("total", Passed), ("sum", Passed)]),
    ] {
        for (n, (answer, outcome)) in answers.into_iter().enumerate() {
            add("big-128k", I, "line", setting, n, outcome, answer, vec![]);
        }
    }
    // small-8k: right at PO and 4k; at 8k one prompt was over its maximum context.
    for (setting, outcomes) in [
        ("po", [Passed, Failed]),
        ("4k", [Passed, Passed]),
        ("8k", [Passed, OverMaxContext]),
    ] {
        for (n, outcome) in outcomes.into_iter().enumerate() {
            add("small-8k", I, "line", setting, n, outcome, "total", vec![]);
        }
    }
    // unsized: no maximum context recorded; PO only.
    add("unsized", I, "line", "po", 0, Passed, "total", vec![]);
    // Tasks II and III for big-128k and small-8k, in both formats.
    let called = || vec![("src/ledger/accounts.py", vec![10, 11, 12])];
    for model in ["big-128k", "small-8k"] {
        for format in ["full", "part"] {
            for setting in ["po", "8k", "128k"] {
                let good = model == "big-128k" || setting == "po";
                add(
                    model,
                    II,
                    format,
                    setting,
                    0,
                    Passed,
                    "    led = Ledger()\n    assert led",
                    called(),
                );
                let (outcome, answer) = if good && format == "full" {
                    (Passed, "    assert Ledger")
                } else {
                    (Failed, "    assert True")
                };
                add(
                    model,
                    II,
                    format,
                    setting,
                    1,
                    outcome,
                    answer,
                    vec![("src/ledger/accounts.py", vec![10])],
                );
            }
            for setting in ["po", "64k", "128k"] {
                add(
                    model,
                    III,
                    format,
                    setting,
                    0,
                    Passed,
                    "    f()",
                    vec![("src/ledger/money.py", (101..=106).collect())],
                );
                // Runs but covers only part of the block: executed, not a success.
                let outcome = if model == "big-128k" { Passed } else { Failed };
                add(
                    model,
                    III,
                    format,
                    setting,
                    1,
                    outcome,
                    "    g()",
                    vec![("src/ledger/money.py", vec![101, 102])],
                );
            }
        }
    }
    let results = write_jsonl(&dir.join("results.jsonl"), &out);

    // Responses: the maximum context each model ran with (none for `unsized`).
    let response = |model: &str, max_context: i64| {
        json!({
            "kind": "response", "schema_version": SCHEMA_VERSION,
            "id": format!("pyfix/c#po@{model}"), "instance_id": "pyfix/c#po", "model": model,
            "task": "assertion_cloze", "setting": "po", "repo": "pyfix", "text": "x",
            "error": null,
            "generation": {"adapter": "openai", "model_name": model, "max_context": max_context,
                "attempts": 1, "duration_secs": 0.5},
            "exec": {"repo": "pyfix", "language": null, "candidate_path": "t.py", "prefix": "",
                "suffix": "", "selectors": []},
            "scoring": {}
        })
        .to_string()
    };
    let responses = dir.join("responses.jsonl");
    std::fs::write(
        &responses,
        [
            response("big-128k", 131072),
            response("small-8k", 8192),
            response("unsized", -1),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();

    // Instances (Table 2) and C++ problems (Table 1, Figs. 2–3) in two repositories.
    let instance =
        |problem: &str, repo: &str, task: &str, setting: &str, format: &str, tokens: u32| {
            json!({
                "kind": "instance", "schema_version": SCHEMA_VERSION,
                "id": format!("{problem}#{setting}#{format}"), "problem_id": problem, "repo": repo,
                "task": task, "setting": setting, "answer_format": format, "prompt": "p",
                "messages": [], "prompt_tokens": tokens, "context_files": [],
                "reference": "TEST(A, B) {}\n",
                "exec": {"repo": repo, "language": null, "candidate_path": "t.py", "prefix": "",
                    "suffix": "", "selectors": []},
                "scoring": {"chunk_count": 1}
            })
            .to_string()
        };
    let instances = dir.join("instances.jsonl");
    std::fs::write(
        &instances,
        [
            instance("pyfix/c", "pyfix", "assertion_cloze", "po", "line", 120),
            instance("pyfix/c", "pyfix", "assertion_cloze", "4k", "line", 3900),
            instance("pyfix/t", "pyfix", "targeted_test", "po", "part", 300),
            instance("pyfix/t", "pyfix", "targeted_test", "po", "full", 310),
            instance("pyfix/b", "pyfix", "coverage_test", "po", "full", 400),
            instance("pyfix/b", "pyfix", "coverage_test", "64k", "full", 60000),
            instance(
                "ringbuf/r.cc",
                "ringbuf",
                "cpp_unit_test",
                "po",
                "file",
                800,
            ),
            instance(
                "kvstore/k.cc",
                "kvstore",
                "cpp_unit_test",
                "po",
                "file",
                1200,
            ),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    let problem = |id: &str, repo: &str, code_lines: usize, test_lines: usize| {
        let span = json!({"start_line": 1, "end_line": 1, "start_byte": 0, "end_byte": 0});
        json!({
            "kind": "problem", "schema_version": SCHEMA_VERSION, "id": id, "repo": repo,
            "language": "cpp", "python": null,
            "cpp": {"file_name": "a.cc", "file_path": "src/a.cc", "test_path": "tests/a_test.cc",
                "header_path": null, "code": "int x;\n".repeat(code_lines),
                "unit_test": "TEST(A, B) {}\n".repeat(test_lines), "tests": [],
                "chunks": [{"index": 0, "span": span, "code": ""}]}
        })
        .to_string()
    };
    let problems = dir.join("problems.jsonl");
    std::fs::write(
        &problems,
        [
            problem("ringbuf/r.cc", "ringbuf", 120, 40),
            problem("ringbuf/s.cc", "ringbuf", 80, 30),
            problem("kvstore/k.cc", "kvstore", 200, 90),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    for repo in ["ringbuf", "kvstore"] {
        std::fs::create_dir_all(dir.join(repo)).unwrap();
    }
    let manifest = dir.join("clover.toml");
    std::fs::write(
        &manifest,
        "[[repo]]\nname = \"ringbuf\"\npath = \"ringbuf\"\nlanguage = \"cpp\"\ndomain = \"concurrency\"\n\n\
         [[repo]]\nname = \"kvstore\"\npath = \"kvstore\"\nlanguage = \"cpp\"\n",
    )
    .unwrap();
    [
        "--tables".to_string(),
        "paper".into(),
        "--responses".into(),
        responses.display().to_string(),
        "--instances".into(),
        instances.display().to_string(),
        "--problems".into(),
        problems.display().to_string(),
        "--manifest".into(),
        manifest.display().to_string(),
        results,
    ]
    .to_vec()
}

/// Every paper table, rendered from the fixed results above, equals the committed
/// rendering, so a change of a table's layout or contents is a reviewed change. After a
/// deliberate change, `CLOVER_BLESS=1 cargo test -p clover-score --test score paper_tables_`
/// rewrites the expected file; a normal run only reads it.
#[test]
fn paper_tables_match_the_committed_rendering() {
    let dir = tempfile::tempdir().unwrap();
    let args = paper_fixture(dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (md, stderr, code) = score(&args);
    assert_eq!(code, 0, "{stderr}");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PAPER_TABLES_EXPECTED);
    if std::env::var_os("CLOVER_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &md).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert!(
        md == want,
        "{} differs from the rendering; if the change is meant, rerun with CLOVER_BLESS=1\n--- got:\n{md}",
        path.display()
    );
    // What the paper's tables hold, checked apart from the layout.
    let titles: Vec<&str> = md.lines().filter(|l| l.starts_with("## ")).collect();
    let numbered = [
        "## CLOVER Table 2 ",
        "## CLOVER Table 3 ",
        "## CLOVER Table 4 ",
        "## CLOVER Table 5 ",
        "## CLOVER Table 6 ",
        "## CLOVER Table 7 ",
        "## CLOVER Table 8 ",
        "## CPP-UT-Bench Table 1 ",
    ];
    for n in numbered {
        assert_eq!(titles.iter().filter(|t| t.starts_with(n)).count(), 1, "{n}");
    }
    // clover's own tables borrow no number.
    for t in titles.iter().filter(|t| t.contains("clover's")) {
        assert!(!t.contains("Table"), "{t}");
    }
}
