//! `clover-sandbox-run --mutation` on C++ responses: the real binary on a small GoogleTest
//! repository of its own, with the kept mutants judged here as calibrate judges them (the
//! ground truth through the GoogleTest runner's mutant harness). The oracle kills every kept
//! mutant, a test without assertions none, a test that fails on the original code runs none;
//! the same for the mutants of a header-only focal source.
//! Prints the seconds of a mutant run against the candidate's plain run (never asserted).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clover_gtest::{CppProject, GtestRun, LibraryCache, Replacement};
use clover_protocol::{
    ExecSpec, Language, Outcome, ProblemMutants, RecordKind, Response, RunResult, Task,
    SCHEMA_VERSION,
};
use clover_sandbox::{Limits, Sandbox, WriteFile};

const PROBLEM: &str = "calc/src/calc.cc";
use clover_testkit::calc::{SOURCE as CALC, TEST as ORACLE, TEST_PATH};

fn repo(dir: &Path) -> PathBuf {
    clover_testkit::calc::write_repo(dir)
}

fn limits() -> Limits {
    Limits {
        wall: std::time::Duration::from_secs(300),
        cpu_secs: 300,
        ..Limits::default()
    }
}

/// Calibrate's part, with clover-mutate's own API and the runner's mutant harness: every
/// mutant of the focal source, judged by the ground truth, as the sidecar record.
fn calibrated_mutants(root: &Path) -> ProblemMutants {
    judged(root, PROBLEM, "src/calc.cc", CALC, TEST_PATH, ORACLE)
}

/// Every mutant of `source` (at `path`) of problem `id`, judged by the test file `test` at
/// `test_path`, as the sidecar record.
fn judged(
    root: &Path,
    id: &str,
    path: &str,
    source: &str,
    test_path: &str,
    test: &str,
) -> ProblemMutants {
    let sandbox = Sandbox::new().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = LibraryCache::new(cache_dir.path()).unwrap();
    let cfg = &clover_manifest::RepoConfig::resolve(None, None, Some(root)).unwrap()[0];
    let project = CppProject::from_config(cfg);
    let truth = GtestRun {
        project: &project,
        test_file: WriteFile {
            path: test_path.into(),
            contents: test.into(),
        },
        filter: Vec::new(),
        limits: limits(),
    };
    let harness = truth.mutant_harness(&sandbox, &cache).unwrap().unwrap();
    let files = [clover_mutate::SourceFile {
        path,
        language: Language::Cpp,
        text: source,
        focus: clover_mutate::Focus::Whole,
    }];
    clover_mutate::judge_problem(id, &files, 20, 0, |m| {
        let replaced = Replacement {
            source: Path::new(&m.path),
            text: m.text.as_bytes(),
        };
        let r = harness.run(&sandbox, Some(replaced), &limits()).unwrap();
        Ok::<_, clover_mutate::MutateError>(match r.outcome {
            Outcome::Passed => clover_mutate::Verdict::Survived,
            Outcome::CompileError => clover_mutate::Verdict::Invalid {
                reason: r.message.unwrap_or_default(),
            },
            _ => clover_mutate::Verdict::Killed { tests: Vec::new() },
        })
    })
    .unwrap()
}

/// A response of `model` to the problem's one C++ instance, answering `test`.
fn response(model: &str, test: &str) -> Response {
    response_to(PROBLEM, "calc", TEST_PATH, model, test)
}

/// A response of `model` to the one C++ instance of `problem` of `repo`, answering `test`
/// at `test_path`.
fn response_to(problem: &str, repo: &str, test_path: &str, model: &str, test: &str) -> Response {
    let instance_id = format!("{problem}#cpp_unit_test#po");
    Response {
        kind: RecordKind::Response,
        schema_version: SCHEMA_VERSION,
        id: format!("{instance_id}@{model}"),
        instance_id,
        model: model.into(),
        task: Task::CppUnitTest,
        setting: "po".into(),
        repo: repo.into(),
        text: format!("Here is the test:\n```cpp\n{test}```\n"),
        error: None,
        generation: Default::default(),
        exec: ExecSpec {
            repo: repo.into(),
            language: Some(Language::Cpp),
            candidate_path: test_path.into(),
            prefix: String::new(),
            suffix: String::new(),
            selectors: Vec::new(),
        },
        scoring: BTreeMap::new(),
    }
}

/// Runs the stage with `--mutation sidecar` on `responses` to the repository at `root`; its
/// results.
fn sandbox_run(dir: &Path, root: &Path, responses: &[Response], sidecar: &Path) -> Vec<RunResult> {
    let input = dir.join("responses.jsonl");
    let text: String = responses
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&input, text).unwrap();
    let output = dir.join("results.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_clover-sandbox-run"))
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .arg("--repo")
        .arg(root)
        .arg("--mutation")
        .arg(sidecar)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_cpp_mutation_pass_scores_the_oracle_full_and_a_hollow_test_zero() {
    let (Some(()), Some(())) = (clover_testkit::root(), clover_testkit::cpp_toolchain()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let record = calibrated_mutants(&root);
    // The equivalent boundary shift survives the ground truth, the string subtraction does
    // not compile; neither is kept.
    assert_eq!(
        record.survived,
        ["src/calc.cc:4:9:boundary:0"],
        "{record:?}"
    );
    assert_eq!(
        record.invalid,
        ["src/calc.cc:8:59:arithmetic:0"],
        "{record:?}"
    );
    let kept = record.kept.len() as u32;
    assert!(kept >= 4, "{record:?}");
    let sidecar = dir.path().join("calibrated.mutants.jsonl");
    std::fs::write(&sidecar, serde_json::to_string(&record).unwrap() + "\n").unwrap();

    let responses = [
        response("oracle", ORACLE),
        response(
            "hollow",
            "#include <gtest/gtest.h>\n#include \"calc.h\"\n\n\
             TEST(Calc, Runs) { Clamp(5, 3); Greet(\"x\"); }\n",
        ),
        response(
            "wrong",
            "#include <gtest/gtest.h>\n#include \"calc.h\"\n\n\
             TEST(Calc, Wrong) { EXPECT_EQ(Clamp(5, 3), 4); }\n",
        ),
    ];
    let results = sandbox_run(dir.path(), &root, &responses, &sidecar);
    let [oracle, hollow, wrong] = &results[..] else {
        panic!("{results:?}")
    };
    assert_eq!(oracle.outcome, Outcome::Passed, "{:?}", oracle.message);
    let m = &oracle.mutation;
    assert_eq!((m.kept, m.run, m.killed), (Some(kept), kept, kept), "{m:?}");
    assert!(m.survived.is_empty());
    // A test without assertions runs the code and notices nothing.
    assert_eq!(hollow.outcome, Outcome::Passed, "{:?}", hollow.message);
    let m = &hollow.mutation;
    assert_eq!((m.kept, m.run, m.killed), (Some(kept), kept, 0), "{m:?}");
    assert_eq!(m.survived.len(), kept as usize);
    // A test that fails on the original code is run against none, each kept mutant counted.
    assert_eq!(wrong.outcome, Outcome::Failed);
    let m = &wrong.mutation;
    assert_eq!((m.kept, m.run, m.killed), (Some(kept), 0, 0), "{m:?}");
    // The repository is as it was.
    assert_eq!(
        std::fs::read_to_string(root.join("src/calc.cc")).unwrap(),
        CALC
    );

    // What a mutant run costs against the candidate's own run (compile, link, run and
    // coverage), for the report; never asserted. The pass compiles no test file: its harness
    // is the object the candidate's run kept.
    for r in [oracle, hollow] {
        let m = &r.mutation;
        eprintln!(
            "C++ {}: plain run {:.2} s, mutation pass {:.2} s for {} mutants ({:.2} s each; the \
             test file compiled once, in its run)",
            r.model,
            r.duration_secs - m.duration_secs,
            m.duration_secs,
            m.run,
            m.duration_secs / f64::from(m.run)
        );
    }
}

#[test]
fn the_oracle_kills_every_kept_mutant_of_a_header() {
    use clover_testkit::counter;
    let (Some(()), Some(())) = (clover_testkit::root(), clover_testkit::cpp_toolchain()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = counter::write_repo(dir.path());
    let problem = "counter/src/counter.h";
    let record = judged(
        &root,
        problem,
        counter::HEADER_PATH,
        counter::HEADER,
        counter::TEST_PATH,
        counter::TEST,
    );
    // `limit_` → `0` reaches the test through the library's headroom.cc only.
    assert!(
        record
            .kept
            .iter()
            .any(|m| m.id == "src/counter.h:17:30:return_value:0"),
        "{record:?}"
    );
    assert!(
        !record.survived.is_empty() && !record.invalid.is_empty(),
        "{record:?}"
    );
    let kept = record.kept.len() as u32;
    let sidecar = dir.path().join("calibrated.mutants.jsonl");
    std::fs::write(&sidecar, serde_json::to_string(&record).unwrap() + "\n").unwrap();
    let answer = |model, test| response_to(problem, "counter", counter::TEST_PATH, model, test);
    let responses = [
        answer("oracle", counter::TEST),
        answer("hollow", counter::HOLLOW),
    ];
    let results = sandbox_run(dir.path(), &root, &responses, &sidecar);
    let [oracle, hollow] = &results[..] else {
        panic!("{results:?}")
    };
    assert_eq!(oracle.outcome, Outcome::Passed, "{:?}", oracle.message);
    let m = &oracle.mutation;
    assert_eq!((m.kept, m.run, m.killed), (Some(kept), kept, kept), "{m:?}");
    assert_eq!(hollow.outcome, Outcome::Passed, "{:?}", hollow.message);
    let m = &hollow.mutation;
    assert_eq!((m.kept, m.run, m.killed), (Some(kept), kept, 0), "{m:?}");
    assert_eq!(
        std::fs::read_to_string(root.join(counter::HEADER_PATH)).unwrap(),
        counter::HEADER
    );
}
