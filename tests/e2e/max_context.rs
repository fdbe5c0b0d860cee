//! A model's maximum context through the stages: generate does not send an instance whose
//! prompt and answer reserve exceed `--max-context`, sandbox-run runs nothing for it (outcome
//! `over_max_context`), and score leaves it out of every row and of Δ, saying how many.

use std::collections::BTreeSet;

use clover_protocol::{
    Instance, Outcome, RecordReader, Response, RunResult, DEFAULT_MAX_LINE_BYTES,
};

use crate::support::{python_calibrated, run_ok, sandbox_python, sandbox_run, shared_dir, tool};

/// The records of type `$t` in the JSON Lines file `$path`.
macro_rules! read {
    ($t:ty, $path:expr) => {{
        let bytes = std::fs::read($path).unwrap();
        let mut reader = RecordReader::new(&bytes[..], "records", DEFAULT_MAX_LINE_BYTES);
        let mut out: Vec<$t> = Vec::new();
        while let Some(r) = reader.next_record::<$t>() {
            out.push(r.expect("a valid record").1);
        }
        out
    }};
}

#[test]
fn instances_over_the_max_context_are_marked_not_run_and_left_out_of_the_scores() {
    let Some(python) = sandbox_python() else {
        return;
    };
    let Some(tokenizer) = clover_testkit::tokenizer_model() else {
        return;
    };
    let dir = shared_dir().join("max-context");
    std::fs::create_dir_all(&dir).unwrap();
    let instances = dir.join("instances.jsonl");
    run_ok(
        tool("pack-context")
            .arg(python_calibrated(&python))
            .arg("--repo")
            .arg(clover_testkit::fixture("python"))
            .arg("--tokenizer")
            .arg(&tokenizer)
            .args([
                "--seed",
                "0",
                "--tasks",
                "assertion_cloze",
                "--settings",
                "po,4k",
            ])
            .args(["--cloze-per-repo", "3"])
            .arg("-o")
            .arg(&instances),
        0,
    );
    let all = read!(Instance, &instances);
    // A window that holds every problem-only prompt and some budget prompts not: the answer
    // reserve is one token.
    let window = all
        .iter()
        .filter(|i| i.setting == "po")
        .map(|i| i.prompt_tokens + 1)
        .max()
        .expect("problem-only instances");
    let over: BTreeSet<&str> = all
        .iter()
        .filter(|i| i.prompt_tokens + 1 > window)
        .map(|i| i.id.as_str())
        .collect();
    assert!(
        !over.is_empty(),
        "some 4k prompt is longer than every po one"
    );

    let responses = dir.join("responses.jsonl");
    let ran = run_ok(
        tool("generate")
            .arg(&instances)
            .args(["--model", "oracle", "--max-tokens", "1", "--max-context"])
            .arg(window.to_string())
            .arg("-o")
            .arg(&responses),
        0,
    );
    assert!(
        ran.stderr
            .contains(&format!("{} instance(s) not sent", over.len())),
        "{}",
        ran.stderr
    );
    let skipped: BTreeSet<String> = read!(Response, &responses)
        .into_iter()
        .filter(|r| r.generation.skipped.as_deref() == Some("over_max_context"))
        .map(|r| r.instance_id)
        .collect();
    assert_eq!(
        skipped.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        over
    );

    let results = dir.join("results.jsonl");
    run_ok(&mut sandbox_run(&python, &responses, &results), 0);
    for r in read!(RunResult, &results) {
        let is_over = over.contains(r.instance_id.as_str());
        assert_eq!(r.outcome == Outcome::OverMaxContext, is_over, "{}", r.id);
        if is_over {
            assert_eq!(
                (&r.candidate, r.tests.len()),
                (&None, 0),
                "nothing ran: {}",
                r.id
            );
        }
    }

    let ran = run_ok(tool("score").arg(&results).args(["--format", "json"]), 0);
    let report: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap();
    assert_eq!(report["over_max_context"]["assertion_cloze"], over.len());
    let n_4k: u64 = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["setting"] == "4k")
        .map(|r| r["n"].as_u64().unwrap())
        .sum();
    let all_4k = all.iter().filter(|i| i.setting == "4k").count() as u64;
    let over_4k = all
        .iter()
        .filter(|i| i.setting == "4k" && over.contains(i.id.as_str()))
        .count() as u64;
    assert_eq!(n_4k, all_4k - over_4k, "{report}");
    // The only budget lost results, so there is no Δ to report.
    assert_eq!(report["utilization"], serde_json::json!([]), "{report}");
    let table = run_ok(tool("score").arg(&results), 0);
    assert!(
        String::from_utf8_lossy(&table.stdout).contains("were not asked, their prompt being over"),
        "{}",
        String::from_utf8_lossy(&table.stdout)
    );
}
