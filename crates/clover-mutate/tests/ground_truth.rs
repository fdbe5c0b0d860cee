//! The ground truth judges mutants with the real pytest and the real GoogleTest: fixtures whose
//! tests kill every mutant but the two boundary shifts, which no input can tell from the
//! original. (Run outside the sandbox: the fixtures are this crate's own code.)

use std::path::{Path, PathBuf};
use std::process::Command;

use clover_mutate::{
    apply, keep_killed, mutants, problem_mutants, Focus, Mutants, MutateError, Operator, Sampling,
    SourceFile, Verdict,
};
use clover_protocol::{Language, ProblemMutants, RecordKind};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clamp")
}

fn cpp_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clamp_cpp")
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
    verdict("pytest", &out, |l| {
        let failed = l.strip_prefix("FAILED ")?;
        Some(failed.split(" - ").next().unwrap_or(failed).to_string())
    })
}

/// Exit 0 survives, exit 1 kills (the tests `failed` finds in stdout's lines), anything else is
/// a runner that did not run.
fn verdict(
    runner: &str,
    out: &std::process::Output,
    failed: impl Fn(&str) -> Option<String>,
) -> Result<Verdict, String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => Ok(Verdict::Survived),
        Some(1) => Ok(Verdict::Killed {
            tests: stdout.lines().filter_map(failed).collect(),
        }),
        code => Err(format!("{runner} exited with {code:?}: {stdout}")),
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

/// Every mutant of a whole C++ source (a K above its sites).
fn every_mutant_of_cpp(path: &str, text: &str) -> Mutants {
    let files = [SourceFile {
        path,
        language: Language::Cpp,
        text,
        focus: Focus::Whole,
    }];
    let sampling = Sampling {
        max_mutants: usize::MAX,
        seed: 0,
    };
    mutants(&files, &sampling).unwrap()
}

/// Compiles `source` as `clamp.cc`, links it with the test object built once, and runs the
/// tests: only the mutated translation unit is compiled again, as sandbox-run will.
fn run_gtest(work: &Path, source: &str) -> Result<Verdict, String> {
    std::fs::write(work.join("clamp.cc"), source).map_err(|e| e.to_string())?;
    let run = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .current_dir(work)
            .output()
            .map_err(|e| e.to_string())
    };
    let compiled = run(&["g++", "-std=c++17", "-c", "clamp.cc", "-o", "clamp.o"])?;
    if !compiled.status.success() {
        return Ok(Verdict::Invalid {
            reason: String::from_utf8_lossy(&compiled.stderr).into_owned(),
        });
    }
    let linked = run(&[
        "g++",
        "test.o",
        "clamp.o",
        "-lgtest",
        "-lgtest_main",
        "-pthread",
        "-o",
        "tests",
    ])?;
    if !linked.status.success() {
        return Err(String::from_utf8_lossy(&linked.stderr).into_owned());
    }
    let out = run(&["./tests"])?;
    // `[  FAILED  ] Clamp.Below (0 ms)`; the summary repeats the name without a time.
    verdict("the test binary", &out, |l| {
        let failed = l.strip_prefix("[  FAILED  ] ")?.strip_suffix(" ms)")?;
        failed.split(" (").next().map(str::to_string)
    })
}

#[test]
fn gtest_kills_all_but_the_equivalent_boundary_mutants_and_every_mutant_compiles() {
    if clover_testkit::cpp_toolchain().is_none() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    for f in ["clamp.h", "clamp_test.cc"] {
        std::fs::copy(cpp_fixture().join(f), work.path().join(f)).unwrap();
    }
    let built = Command::new("g++")
        .args(["-std=c++17", "-c", "clamp_test.cc", "-o", "test.o"])
        .current_dir(work.path())
        .status()
        .unwrap();
    assert!(built.success());
    let text = std::fs::read_to_string(cpp_fixture().join("clamp.cc")).unwrap();
    assert_eq!(run_gtest(work.path(), &text), Ok(Verdict::Survived));

    let sample = every_mutant_of_cpp("clamp.cc", &text);
    // Per `if`: a negation, a comparison, a boundary; per `return`: `0` (typed by `int`).
    assert_eq!(sample.mutants.len(), 9);
    let calibration =
        keep_killed(sample.mutants.clone(), |m| run_gtest(work.path(), &m.text)).unwrap();
    assert!(
        calibration.invalid.is_empty(),
        "every mutant compiles: {:?}",
        calibration.invalid
    );
    assert_eq!(
        calibration.survived,
        ["clamp.cc:6:9:boundary:0", "clamp.cc:9:9:boundary:0"]
    );
    assert_eq!(calibration.kept.len(), 7);
    let (_, killed_by) = calibration
        .kept
        .iter()
        .find(|(m, _)| m.id == "clamp.cc:7:12:return_value:0")
        .expect("`return lo` → `return 0` is kept");
    assert_eq!(killed_by, &["Clamp.Below"]);
}

#[test]
fn every_cpp_mutant_of_a_source_with_compile_time_constants_compiles() {
    if clover_testkit::cpp_toolchain().is_none() {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compiles.cc");
    let text = std::fs::read_to_string(&path).unwrap();
    let sample = every_mutant_of_cpp("compiles.cc", &text);
    assert!(
        sample.mutants.len() > 40,
        "{} mutants",
        sample.mutants.len()
    );
    let work = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for m in &sample.mutants {
        std::fs::write(work.path().join("m.cc"), &m.text).unwrap();
        let out = Command::new("g++")
            .args(["-std=c++17", "-fsyntax-only", "m.cc"])
            .current_dir(work.path())
            .output()
            .unwrap();
        if !out.status.success() {
            failures.push(format!(
                "{} ({:?} -> {:?}): {}",
                m.id,
                m.original,
                m.replacement,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Nothing on the lines of the macro, the array size, the static_assert, the bit-fields,
    // the alignas, the case labels or the template argument.
    for line in [3, 4, 5, 10, 11, 15, 16, 21, 22, 31, 33, 43] {
        let on_line: Vec<&str> = sample
            .mutants
            .iter()
            .filter(|m| m.line == line)
            .map(|m| m.id.as_str())
            .collect();
        assert!(on_line.is_empty(), "line {line}: {on_line:?}");
    }
}
