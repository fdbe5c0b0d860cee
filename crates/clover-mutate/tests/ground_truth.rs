//! The ground truth judges mutants with the real pytest: a fixture whose tests kill every
//! mutant but the two boundary shifts, which no input can tell from the original.

use std::path::{Path, PathBuf};
use std::process::Command;

use clover_mutate::{
    apply, keep_killed, mutants, problem_mutants, Focus, MutateError, Operator, Sampling,
    SourceFile, Verdict,
};
use clover_protocol::{Language, ProblemMutants, RecordKind};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clamp")
}

/// Runs the fixture's tests on `source` as `clamp.py`, in a copy of the fixture.
fn run_ground_truth(python: &Path, work: &Path, source: &str) -> Result<Verdict, String> {
    std::fs::copy(fixture().join("test_clamp.py"), work.join("test_clamp.py"))
        .map_err(|e| e.to_string())?;
    std::fs::write(work.join("clamp.py"), source).map_err(|e| e.to_string())?;
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider"])
        .arg("test_clamp.py")
        .current_dir(work)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => Ok(Verdict::Survived),
        Some(1) => Ok(Verdict::Killed {
            tests: stdout
                .lines()
                .filter_map(|l| l.strip_prefix("FAILED "))
                .map(|l| l.split(" - ").next().unwrap_or(l).to_string())
                .collect(),
        }),
        code => Err(format!("pytest exited with {code:?}: {stdout}")),
    }
}

#[test]
fn the_ground_truth_kills_all_but_the_equivalent_boundary_mutants() {
    let Some(python) = clover_testkit::python() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture().join("clamp.py")).unwrap();
    assert_eq!(
        run_ground_truth(&python, work.path(), &text),
        Ok(Verdict::Survived),
        "the ground truth passes on the original"
    );

    // Task II's focus: the target's body, not its `def` line or the module docstring.
    let files = [SourceFile {
        path: "clamp.py",
        language: Language::Python,
        text: &text,
        focus: Focus::Lines(vec![[6, 10]]),
    }];
    let sampling = Sampling {
        max_mutants: 100,
        seed: 5,
    };
    let sample = mutants(&files, &sampling).unwrap();
    assert_eq!(
        sample.mutants.len(),
        sample.candidates,
        "a K above the sites takes all"
    );
    // Per `if`: a negation, a comparison, a boundary; per `return`: `None`.
    assert_eq!(sample.mutants.len(), 9);
    assert!(sample.mutants.iter().all(|m| (6..=10).contains(&m.line)));

    let calibration = keep_killed(sample.mutants.clone(), |m| {
        run_ground_truth(&python, work.path(), &m.text)
    })
    .unwrap();

    let boundary: Vec<&str> = sample
        .mutants
        .iter()
        .filter(|m| m.operator == Operator::Boundary)
        .map(|m| m.id.as_str())
        .collect();
    assert_eq!(
        boundary,
        ["clamp.py:6:10:boundary:0", "clamp.py:8:10:boundary:0"]
    );
    assert_eq!(calibration.survived, boundary, "equivalent mutants survive");
    assert!(calibration.invalid.is_empty());
    assert_eq!(
        calibration.kept.len() + boundary.len(),
        sample.mutants.len(),
        "every other mutant is killed"
    );
    let (returns_none, killed_by) = calibration
        .kept
        .iter()
        .find(|(m, _)| m.id == "clamp.py:7:16:return_value:0")
        .expect("`return lo` → `return None` is kept");
    assert_eq!(returns_none.replacement, "None");
    assert_eq!(killed_by, &["test_clamp.py::test_below"]);

    // The sidecar record round-trips through JSON, and its mutants apply to the file again.
    let record = problem_mutants("fixture/clamp", &sampling, &files, &sample, calibration);
    assert_eq!(record.kind, RecordKind::ProblemMutants);
    assert_eq!(record.survived, boundary);
    let line = serde_json::to_string(&record).unwrap();
    let back: ProblemMutants = serde_json::from_str(&line).unwrap();
    assert_eq!(back, record);
    for kept in &record.kept {
        let m = sample.mutants.iter().find(|m| m.id == kept.id).unwrap();
        assert_eq!(apply(kept, &text).unwrap(), m.text);
    }
    let changed = text.replace("return x", "return x  # edited");
    assert!(matches!(
        apply(&record.kept[0], &changed),
        Err(MutateError::Stale { .. })
    ));
}
