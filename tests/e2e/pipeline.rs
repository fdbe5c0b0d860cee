//! The whole pipeline on the Python fixture, the way the demo runs it: extract → calibrate →
//! pack-context → generate (the oracle and a trivial baseline) → sandbox-run → score. The oracle
//! answers with the ground truth and must succeed on (nearly) every instance of every task;
//! the baseline must score far below it, or the metrics would not tell models apart.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::{python_calibrated, run_ok, sandbox_python, shared_dir, tool};

/// Headline metric of each task, as `clover score --format json` names them (shares, 0 to 1).
const HEADLINE: &[(&str, &str)] = &[
    ("assertion_cloze", "rer"),
    ("targeted_test", "success_rate"),
    ("coverage_test", "success_rate"),
];

/// The models the pipeline answers with: the ground truth and a trivial baseline.
pub const MODELS: &[&str] = &["oracle", "copy-operand"];

/// What the pipeline after calibrate wrote: the instances, and per model of [`MODELS`] its
/// responses and their results.
#[derive(Debug)]
pub struct Outputs {
    pub instances: PathBuf,
    pub responses: Vec<PathBuf>,
    pub results: Vec<PathBuf>,
}

/// pack-context → generate → sandbox-run of `calibrated` (the Python fixture's) into `dir`,
/// with the stages `tool` makes (the workspace's, or those of an installed wheel); as the demo
/// packs the Python fixture. `tokenizer`: the model to pass, or `None` for pack-context's own
/// lookup.
pub fn run_after_calibrate(
    tool: &dyn Fn(&str) -> Command,
    calibrated: &Path,
    tokenizer: Option<&Path>,
    python: &Path,
    dir: &Path,
) -> Outputs {
    let fixture = clover_testkit::fixture("python");
    std::fs::create_dir_all(dir).unwrap();
    let instances = dir.join("instances.jsonl");
    let mut pack = tool("pack-context");
    pack.arg(calibrated).arg("--repo").arg(&fixture);
    if let Some(model) = tokenizer {
        pack.arg("--tokenizer").arg(model);
    }
    run_ok(
        pack.args(["--seed", "0", "--settings", "po,8k,64k"])
            .args([
                "--cloze-per-repo",
                "12",
                "--targeted-per-repo",
                "6",
                "--coverage-per-repo",
                "4",
            ])
            .arg("-o")
            .arg(&instances),
        0,
    );
    let (mut responses, mut results) = (Vec::new(), Vec::new());
    for model in MODELS {
        let answered = dir.join(format!("responses-{model}.jsonl"));
        let result = dir.join(format!("results-{model}.jsonl"));
        run_ok(
            tool("generate")
                .arg(&instances)
                .args(["--model", model])
                .arg("-o")
                .arg(&answered),
            0,
        );
        run_ok(
            tool("sandbox-run")
                .arg(&answered)
                .arg("--repo")
                .arg(&fixture)
                .arg("--python")
                .arg(python)
                .arg("-o")
                .arg(&result),
            0,
        );
        responses.push(answered);
        results.push(result);
    }
    Outputs {
        instances,
        responses,
        results,
    }
}

/// The pipeline with this build's stages on [`python_calibrated`], run once.
pub fn workspace_outputs(python: &Path, tokenizer: &Path) -> &'static Outputs {
    static OUTPUTS: OnceLock<Outputs> = OnceLock::new();
    OUTPUTS.get_or_init(|| {
        run_after_calibrate(
            &tool,
            python_calibrated(python),
            Some(tokenizer),
            python,
            &shared_dir().join("pipeline"),
        )
    })
}

#[test]
fn oracle_succeeds_on_every_task_and_the_baseline_does_not() {
    let Some(python) = sandbox_python() else {
        return;
    };
    let Some(tokenizer) = clover_testkit::tokenizer_model() else {
        return;
    };
    let results = &workspace_outputs(&python, &tokenizer).results;
    let ran = run_ok(tool("score").args(results).args(["--format", "json"]), 0);
    let report: serde_json::Value = serde_json::from_slice(&ran.stdout).expect("score's JSON");
    // (model, task, answer format) -> the headline metric in every setting. Tasks II and III
    // come in two answer formats, which score may report apart.
    let mut seen: BTreeMap<(String, String, String), Vec<f64>> = BTreeMap::new();
    for row in report["rows"].as_array().expect("rows") {
        let task = row["task"].as_str().unwrap();
        let Some((_, metric)) = HEADLINE.iter().find(|(t, _)| *t == task) else {
            continue;
        };
        let value = row["metrics"][*metric]
            .as_f64()
            .unwrap_or_else(|| panic!("{metric} in {row}"));
        assert!(row["n"].as_u64().unwrap() > 0, "{row}");
        let format = row["answer_format"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        seen.entry((
            row["model"].as_str().unwrap().to_string(),
            task.to_string(),
            format,
        ))
        .or_default()
        .push(value);
    }
    for (task, metric) in HEADLINE {
        let formats: Vec<&String> = seen
            .keys()
            .filter(|(m, t, _)| m == "oracle" && t == task)
            .map(|(_, _, f)| f)
            .collect();
        assert!(!formats.is_empty(), "{task}: no rows");
        for format in formats {
            let oracle = &seen[&("oracle".to_string(), task.to_string(), format.clone())];
            let baseline = &seen[&("copy-operand".to_string(), task.to_string(), format.clone())];
            assert_eq!(oracle.len(), 3, "{task} {format}: one row per setting");
            for v in oracle {
                assert!(
                    *v >= 0.95,
                    "the oracle scores {v} {metric} on {task} {format}"
                );
            }
            for (b, o) in baseline.iter().zip(oracle) {
                assert!(
                    *b <= o - 0.5,
                    "the baseline scores {b} {metric} on {task} {format}, too near the \
                     oracle's {o}"
                );
            }
        }
    }
}
