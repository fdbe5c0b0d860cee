//! The whole pipeline on the C++ fixture, the way the demo runs it: extract → calibrate →
//! pack-context → generate (the oracle and a trivial baseline) → sandbox-run → score. The
//! fixture's `tokenizer.cc` is long enough to be cut into chunks, each its own instance; their
//! answers must come back as one test file per source, compiled, run and measured once. The
//! oracle must compile, pass and cover what the ground truth covers on every source; the
//! baseline (one `EXPECT_TRUE(true)` per chunk) compiles and passes but covers nothing, so its
//! success rate must be far below.

use std::path::{Path, PathBuf};

use clover_protocol::{FileCoverage, Instance, Outcome, Response, RunResult};

use crate::support::{run_ok, tool};

/// Root (the sandbox), the C++ tools, and the tokenizer.
fn cpp_ready() -> Option<PathBuf> {
    clover_testkit::root()?;
    clover_testkit::cpp_toolchain()?;
    clover_testkit::tokenizer_model()
}

fn read<T: clover_protocol::Record>(path: &Path) -> Vec<T> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What a run must reproduce, by result id (sorted): the outcome and the lines covered. (A
/// whole record also holds the test binary's output, with its timings.)
fn facts(results: &Path) -> Vec<(String, Outcome, Vec<FileCoverage>)> {
    let mut out: Vec<_> = read::<RunResult>(results)
        .into_iter()
        .map(|r| (r.id, r.outcome, r.coverage))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The instances of fixtures/`name` in `dir`: extract, calibrate (one run), pack-context.
fn cpp_instances(name: &str, dir: &Path, tokenizer: &Path) -> PathBuf {
    let fixture = clover_testkit::fixture(name);
    let problems = dir.join("problems.jsonl");
    let calibrated = dir.join("calibrated.jsonl");
    let instances = dir.join("instances.jsonl");
    run_ok(
        tool("extract")
            .arg("--repo")
            .arg(&fixture)
            .arg("-o")
            .arg(&problems),
        0,
    );
    run_ok(
        tool("calibrate")
            .arg(&problems)
            .arg("--repo")
            .arg(&fixture)
            .args(["--runs", "1"])
            .arg("-o")
            .arg(&calibrated),
        0,
    );
    run_ok(
        tool("pack-context")
            .arg(&calibrated)
            .arg("--repo")
            .arg(&fixture)
            .arg("--tokenizer")
            .arg(tokenizer)
            .args(["--seed", "0"])
            .arg("-o")
            .arg(&instances),
        0,
    );
    instances
}

/// `generate --model MODEL` over the instances, then `sandbox-run` with `extra` flags.
fn answer_and_run(instances: &Path, model: &str, dir: &Path) -> (PathBuf, PathBuf) {
    let responses = dir.join(format!("responses-{model}.jsonl"));
    let results = dir.join(format!("results-{model}.jsonl"));
    run_ok(
        tool("generate")
            .arg(instances)
            .args(["--model", model])
            .arg("-o")
            .arg(&responses),
        0,
    );
    run_ok(sandbox_run(&responses).arg("-o").arg(&results), 0);
    (responses, results)
}

fn sandbox_run(responses: &Path) -> std::process::Command {
    let mut cmd = tool("sandbox-run");
    cmd.arg(responses)
        .arg("--repo")
        .arg(clover_testkit::fixture("cpp"));
    cmd
}

/// glog's `mock-log_unittest.cc` checks that `__FILE__` ends with its own name, and so does
/// the test of fixtures/cpp-file-name: the oracle passes only when its candidate is compiled
/// where the ground truth stands, under its name, with the ground truth out of the way.
#[test]
fn a_cpp_oracle_is_compiled_under_the_ground_truths_name() {
    let Some(tokenizer) = cpp_ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let instances = cpp_instances("cpp-file-name", dir.path(), &tokenizer);
    let calibrated: Vec<clover_protocol::CalibratedProblem> =
        read(&dir.path().join("calibrated.jsonl"));
    let [problem] = &calibrated[..] else {
        panic!("one pair: {calibrated:?}")
    };
    assert!(
        problem.exclusion.is_none(),
        "the ground truth passes in calibrate: {:?}",
        problem.exclusion
    );
    let responses = dir.path().join("responses.jsonl");
    let results = dir.path().join("results.jsonl");
    run_ok(
        tool("generate")
            .arg(&instances)
            .args(["--model", "oracle"])
            .arg("-o")
            .arg(&responses),
        0,
    );
    let fixture = clover_testkit::fixture("cpp-file-name");
    run_ok(
        tool("sandbox-run")
            .arg(&responses)
            .arg("--repo")
            .arg(&fixture)
            .arg("-o")
            .arg(&results),
        0,
    );
    let got: Vec<RunResult> = read(&results);
    let [result] = &got[..] else {
        panic!("one result: {got:?}")
    };
    assert_eq!(
        result.outcome,
        Outcome::Passed,
        "{:?}\n{}",
        result.message,
        result.stdout_tail
    );
    assert_eq!(result.tests.len(), 2);
    assert!(
        result
            .tests
            .iter()
            .all(|t| t.outcome == clover_protocol::TestOutcome::Passed),
        "{:?}",
        result.tests
    );
    // The view took the candidate; the repository kept its ground truth.
    let truth = std::fs::read_to_string(fixture.join("tests/base_name_test.cc")).unwrap();
    assert!(truth.contains("OfThisFile"));
}

/// The source/test pairs of fixtures/cpp: ring_buffer, tokenizer and histogram, and the
/// header-only small_vector.
const SOURCES: usize = 4;

/// One test, so the instances (a C++ calibration) are made once; its own folder, since the
/// shared one is reset by every e2e test process.
#[test]
fn cpp_oracle_succeeds_on_every_source_and_chunks_join_into_one_file() {
    let Some(tokenizer) = cpp_ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let instances = cpp_instances("cpp", dir.path(), &tokenizer);
    oracle_and_baseline(&instances, dir.path());
    shards_resume_and_missing_answers(&instances, dir.path());
}

/// The oracle compiles, passes and covers what the ground truth covers on every source; the
/// baseline passes but covers nothing.
fn oracle_and_baseline(instances: &Path, dir: &Path) {
    let chunked: Vec<Instance> = read(instances);
    let sources: std::collections::BTreeSet<&str> =
        chunked.iter().map(|i| i.file_instance_id()).collect();
    assert_eq!(
        sources.len(),
        SOURCES,
        "the source/test pairs of the fixture"
    );
    assert!(
        chunked.len() > sources.len(),
        "tokenizer.cc is cut into chunks, each its own instance"
    );

    let mut results = Vec::new();
    for model in ["oracle", "copy-operand"] {
        let (_, path) = answer_and_run(instances, model, dir);
        let got: Vec<RunResult> = read(&path);
        let ids: std::collections::BTreeSet<String> =
            got.iter().map(|r| r.instance_id.clone()).collect();
        assert_eq!(
            got.len(),
            SOURCES,
            "{model}: one result per source, not per chunk"
        );
        assert_eq!(
            ids,
            sources.iter().map(|s| s.to_string()).collect(),
            "{model}: results carry the file instance ids"
        );
        let tk = got
            .iter()
            .find(|r| r.instance_id.contains("tokenizer.cc"))
            .unwrap();
        assert_eq!(
            tk.scoring["chunk_instance_ids"].as_array().unwrap().len(),
            chunked
                .iter()
                .filter(|i| i.file_instance_id() == tk.instance_id)
                .count(),
            "{model}: every chunk of tokenizer.cc went into its one file"
        );
        results.push(path);
    }

    let ran = run_ok(tool("score").args(&results).args(["--format", "json"]), 0);
    let report: serde_json::Value = serde_json::from_slice(&ran.stdout).expect("score's JSON");
    let metrics = |model: &str| -> &serde_json::Value {
        let row = report["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["model"] == model && r["task"] == "cpp_unit_test" && r["repo"] == "*")
            .unwrap_or_else(|| panic!("no cpp_unit_test row of {model}"));
        assert_eq!(row["n"], SOURCES, "{row}");
        &row["metrics"]
    };
    let value =
        |m: &serde_json::Value, k: &str| m[k].as_f64().unwrap_or_else(|| panic!("no {k} in {m}"));
    let (oracle, baseline) = (metrics("oracle"), metrics("copy-operand"));
    for k in [
        "compile_rate",
        "pass_rate",
        "success_rate",
        "focal_coverage_vs_gt",
    ] {
        assert!(value(oracle, k) >= 0.95, "the oracle's {k}: {oracle}");
    }
    // The baseline compiles and passes — it is a valid test file — but tests nothing.
    assert_eq!(value(baseline, "pass_rate"), 1.0, "{baseline}");
    for k in ["success_rate", "focal_coverage_vs_gt"] {
        assert!(
            value(baseline, k) <= value(oracle, k) - 0.5,
            "the baseline's {k} is too near the oracle's: {baseline} vs {oracle}"
        );
    }
    judged_with_the_instances_references(instances, &results);
}

/// The LLM judge with the ground truth from `--instances`: sandbox-run gives a chunked source
/// one result under the file's instance id, which no instance has; score must still find that
/// file's reference (every chunk holds the whole test file) and judge every source. The
/// fake judge on loopback answers `A` (position-biased: a tie over both orders) only when the
/// ground truth it is shown is an instance's reference, and something unreadable otherwise.
fn judged_with_the_instances_references(instances: &Path, results: &[PathBuf]) {
    let references: std::collections::BTreeSet<String> = read::<Instance>(instances)
        .into_iter()
        .map(|i| i.reference)
        .collect();
    assert!(references.iter().all(|r| r.contains("TEST")));
    let judge = clover_testkit::fake_chat::FakeChat::start(move |request| {
        let truth = request
            .message(1)
            .split("### Ground truth\n```\n")
            .nth(1)
            .and_then(|rest| rest.split("\n```\n\n### Candidate A").next())
            .unwrap_or("");
        let verdict = if references.contains(truth) {
            "A"
        } else {
            "not shown the reference"
        };
        clover_testkit::fake_chat::ChatReply::content(verdict)
    });
    let ran = run_ok(
        tool("score")
            .args(results)
            .args(["--format", "json", "--judge", "openai", "--judge-base-url"])
            .arg(judge.url())
            .args(["--judge-model-name", "judge", "--judge-exclude", "nobody"])
            .arg("--instances")
            .arg(instances),
        0,
    );
    let stderr = &ran.stderr;
    assert!(!stderr.contains("no ground truth"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&ran.stdout).expect("score's JSON");
    let row = judge_row(&report, "copy-operand", "oracle");
    let count = |k: &str| row[k].as_u64().unwrap_or_else(|| panic!("no {k} in {row}"));
    assert_eq!(
        (
            count("win"),
            count("tie"),
            count("loss"),
            count("undecided")
        ),
        (0, SOURCES as u64, 0, 0),
        "{row}"
    );
}

/// The judge's row of `model` against `opponent` in score's JSON report.
fn judge_row(report: &serde_json::Value, model: &str, opponent: &str) -> serde_json::Value {
    report["judge"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"] == model && r["opponent"] == opponent)
        .cloned()
        .unwrap_or_else(|| panic!("no {model} vs {opponent} row: {report}"))
}

/// The chunks of a source stay together through `--shard` and `--resume`, and a source whose
/// chunk responses did not all arrive gets a result that says so, with nothing run. Reuses
/// the oracle's responses and results that [`oracle_and_baseline`] left in `dir`.
fn shards_resume_and_missing_answers(instances: &Path, dir: &Path) {
    let responses = dir.join("responses-oracle.jsonl");
    let whole = dir.join("results-oracle.jsonl");

    // generate's shards: every chunk of a source in one shard (by instance id, the two
    // chunks of tokenizer.cc would fall in different shards of two).
    let mut seen = std::collections::BTreeMap::new();
    for k in 0..2 {
        let shard_responses = dir.join(format!("responses-{k}.jsonl"));
        run_ok(
            tool("generate")
                .arg(instances)
                .args(["--model", "oracle", "--shard", &format!("{k}/2")])
                .arg("-o")
                .arg(&shard_responses),
            0,
        );
        for r in read::<Response>(&shard_responses) {
            let file = r.file_response_id().into_owned();
            assert_eq!(
                *seen.entry(file.clone()).or_insert(k),
                k,
                "{file}: chunks in two shards"
            );
        }
    }
    assert_eq!(seen.len(), SOURCES, "every source in some shard");
    // sandbox-run's shards: together, the whole run's files, each once, with the same
    // outcomes and lines.
    let mut joined = Vec::new();
    for k in 0..2 {
        let out = dir.join(format!("shard-{k}.jsonl"));
        run_ok(
            sandbox_run(&responses)
                .args(["--shard", &format!("{k}/2")])
                .arg("-o")
                .arg(&out),
            0,
        );
        let got = facts(&out);
        assert!(
            got.len() < SOURCES,
            "shard {k} holds every source: the split did nothing"
        );
        joined.extend(got);
    }
    joined.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(joined, facts(&whole));

    // --resume: an output holding the chunked source's result skips both its chunks.
    let resumed = dir.join("resumed.jsonl");
    let tk_line = std::fs::read_to_string(&whole)
        .unwrap()
        .lines()
        .find(|l| {
            serde_json::from_str::<RunResult>(l)
                .unwrap()
                .id
                .contains("tokenizer.cc")
        })
        .unwrap()
        .to_string();
    std::fs::write(
        clover_protocol::partial_path(&resumed),
        format!("{tk_line}\n"),
    )
    .unwrap();
    let ran = run_ok(
        sandbox_run(&responses)
            .arg("-o")
            .arg(&resumed)
            .arg("--resume"),
        0,
    );
    let chunks = read::<Instance>(instances)
        .iter()
        .filter(|i| i.id.contains("tokenizer.cc"))
        .count();
    assert!(
        ran.stderr.contains(&format!("{chunks} already done")),
        "{}",
        ran.stderr
    );
    assert_eq!(
        facts(&resumed),
        facts(&whole),
        "the resumed run holds every file once"
    );

    // A missing chunk: only the first chunk's response of tokenizer.cc.
    let first_only = dir.join("first-chunk.jsonl");
    let line = std::fs::read_to_string(&responses)
        .unwrap()
        .lines()
        .find(|l| {
            serde_json::from_str::<Response>(l)
                .unwrap()
                .instance_id
                .ends_with("tokenizer.cc#cpp_unit_test#po#0")
        })
        .unwrap()
        .to_string();
    std::fs::write(&first_only, format!("{line}\n")).unwrap();
    let out = dir.join("incomplete.jsonl");
    let ran = run_ok(sandbox_run(&first_only).arg("-o").arg(&out), 0);
    assert!(
        ran.stderr.contains("missed the response to a chunk"),
        "{}",
        ran.stderr
    );
    let got: Vec<RunResult> = read(&out);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].outcome, Outcome::Error);
    assert!(got[0].candidate.is_none(), "nothing ran");
    let message = got[0].message.as_deref().unwrap_or("");
    assert!(
        message.contains("no response for chunk(s) 1 of the 2"),
        "{message}"
    );
    let ran = run_ok(tool("score").arg(&out).args(["--format", "json"]), 0);
    let report: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap();
    assert_eq!(
        report["rows"][0]["metrics"]["compile_rate"], 0.0,
        "an incomplete file was never compiled"
    );
}

/// The judge-only path through the real stages (issue 16, item 6): a pair whose ground
/// truth fails — a copy of the fixture with a failing TEST added to ring_buffer's test file —
/// is excluded by calibrate; `pack-context --judge-only-excluded` builds it anyway, marked;
/// generate answers it; sandbox-run runs nothing for it (outcome `judge_only`, the answer
/// taken out); score counts it in no execution row but judges it, and says how many.
#[test]
fn a_pair_whose_ground_truth_fails_is_judged_and_never_run() {
    let Some(tokenizer) = cpp_ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("cppfix");
    crate::support::copy_dir(&clover_testkit::fixture("cpp"), &repo);
    let broken = repo.join("tests/ring_buffer_test.cc");
    let mut test = std::fs::read_to_string(&broken).unwrap();
    test.push_str("\nTEST(Broken, GroundTruthFails) { EXPECT_EQ(1, 2); }\n");
    std::fs::write(&broken, test).unwrap();
    let path = |name: &str| dir.path().join(name);

    // Two pairs keep the calibration short: the broken one and one that runs.
    let all = run_ok(tool("extract").arg("--repo").arg(&repo), 0);
    let two: String = String::from_utf8(all.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.contains("src/ring_buffer.cc") || l.contains("src/histogram.cc"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(two.lines().count(), 2, "{two}");
    std::fs::write(path("problems.jsonl"), two).unwrap();
    run_ok(
        tool("calibrate")
            .arg(path("problems.jsonl"))
            .arg("--repo")
            .arg(&repo)
            .args(["--runs", "1", "-o"])
            .arg(path("calibrated.jsonl")),
        0,
    );
    let calibrated: Vec<clover_protocol::CalibratedProblem> = read(&path("calibrated.jsonl"));
    let excluded: Vec<&str> = calibrated
        .iter()
        .filter(|c| c.exclusion.is_some())
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(excluded, ["cppfix/src/ring_buffer.cc"], "{calibrated:?}");

    let pack = |extra: &[&str], out: &str| {
        run_ok(
            tool("pack-context")
                .arg(path("calibrated.jsonl"))
                .arg("--repo")
                .arg(&repo)
                .arg("--tokenizer")
                .arg(&tokenizer)
                .args(extra)
                .arg("-o")
                .arg(path(out)),
            0,
        );
        read::<Instance>(&path(out))
    };
    assert!(pack(&[], "kept.jsonl")
        .iter()
        .all(|i| !i.problem_id.ends_with("ring_buffer.cc")));
    let instances = pack(&["--judge-only-excluded"], "instances.jsonl");
    let marked: Vec<&Instance> = instances
        .iter()
        .filter(|i| i.judge_only().is_some())
        .collect();
    assert!(!marked.is_empty());
    assert!(marked
        .iter()
        .all(|i| i.problem_id.ends_with("ring_buffer.cc") && i.judge_only() == Some("failed")));

    let mut results = Vec::new();
    for model in ["oracle", "copy-operand"] {
        let responses = path(&format!("responses-{model}.jsonl"));
        let result = path(&format!("results-{model}.jsonl"));
        run_ok(
            tool("generate")
                .arg(path("instances.jsonl"))
                .args(["--model", model, "-o"])
                .arg(&responses),
            0,
        );
        run_ok(
            tool("sandbox-run")
                .arg(&responses)
                .arg("--repo")
                .arg(&repo)
                .arg("-o")
                .arg(&result),
            0,
        );
        let got: Vec<RunResult> = read(&result);
        assert_eq!(got.len(), 2, "{model}: one result per source");
        for r in &got {
            let judge_only = r.instance_id.contains("ring_buffer.cc");
            assert_eq!(
                r.outcome == Outcome::JudgeOnly,
                judge_only,
                "{}: {:?} {:?}",
                r.id,
                r.outcome,
                r.message
            );
            if judge_only {
                assert!(
                    r.tests.is_empty() && r.coverage.is_empty(),
                    "{}: it ran",
                    r.id
                );
                assert!(r.answer.is_some(), "{}: no answer for the judge", r.id);
            }
        }
        results.push(result);
    }

    // A position-biased judge (always `A`): a tie over both orders, a verdict all the same.
    let judge = clover_testkit::fake_chat::FakeChat::start(|_| {
        clover_testkit::fake_chat::ChatReply::content("A")
    });
    let ran = run_ok(
        tool("score")
            .args(&results)
            .args(["--format", "json", "--judge", "openai", "--judge-base-url"])
            .arg(judge.url())
            .args(["--judge-model-name", "judge", "--judge-exclude", "nobody"])
            .arg("--instances")
            .arg(path("instances.jsonl")),
        0,
    );
    let report: serde_json::Value = serde_json::from_slice(&ran.stdout).expect("score's JSON");
    for model in ["oracle", "copy-operand"] {
        let row = report["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["model"] == model && r["repo"] == "*")
            .unwrap_or_else(|| panic!("no row of {model}: {report}"));
        assert_eq!(row["n"], 1, "only the pair that ran: {row}");
    }
    assert_eq!(report["judge_only"]["cpp_unit_test"], 2, "{report}");
    let row = judge_row(&report, "oracle", "copy-operand");
    assert_eq!(
        (row["n"].as_u64(), row["judge_only"].as_u64()),
        (Some(2), Some(1)),
        "both pairs judged, one of them judge-only: {row}"
    );
}
