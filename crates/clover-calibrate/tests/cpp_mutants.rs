//! `calibrate --mutants` on a C++ problem: the real binary, a small GoogleTest repository of
//! its own, and the sidecar read back through the wire types. The ground truth is compiled
//! once; each mutant recompiles the focal source only. A mutant it kills is kept with the
//! test that killed it, one it cannot tell from the original survives, one that does not
//! compile is invalid. A header-only focal source gets mutants too, each compiled into the
//! test file and the library sources that include it.

use std::path::{Path, PathBuf};
use std::process::Command;

use clover_manifest::RepoConfig;
use clover_protocol::{Problem, ProblemMutants, RecordReader, RecordWriter};

use clover_testkit::calc::SOURCE as CALC;

/// The repository below `dir`, and its problems as extract finds them.
fn repo(dir: &Path) -> (PathBuf, Vec<Problem>) {
    let root = clover_testkit::calc::write_repo(dir);
    let cfg = &RepoConfig::resolve(None, None, Some(&root)).unwrap()[0];
    let problems = clover_extract::extract(&clover_extract::ExtractOptions::from_repo(cfg))
        .expect("extract")
        .problems;
    (root, problems)
}

/// Runs calibrate with `--mutants` on `problems`; its stderr and the sidecar's records.
fn calibrate(dir: &Path, root: &Path, problems: &[Problem]) -> (String, Vec<ProblemMutants>) {
    let input = dir.join("problems.jsonl");
    let (mut w, _) = RecordWriter::create(&input, false).unwrap();
    for p in problems {
        w.write(p).unwrap();
    }
    w.finish().unwrap();
    let out = dir.join("out.jsonl");
    let run = Command::new(env!("CARGO_BIN_EXE_clover-calibrate"))
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .arg("--repo")
        .arg(root)
        .arg("--mutants")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "calibrate failed: {stderr}");
    let mut reader =
        RecordReader::open(Some(&dir.join("out.jsonl.mutants.jsonl")), 1 << 30).unwrap();
    let mut records = Vec::new();
    while let Some(r) = reader.next_record::<ProblemMutants>() {
        records.push(r.unwrap().1);
    }
    (stderr, records)
}

#[test]
fn the_ground_truth_keeps_the_cpp_mutants_it_kills() {
    let (Some(()), Some(())) = (clover_testkit::root(), clover_testkit::cpp_toolchain()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (root, problems) = repo(dir.path());
    assert_eq!(problems.len(), 1);
    let (stderr, records) = calibrate(dir.path(), &root, &problems);
    assert_eq!(records.len(), 1, "{stderr}");
    let r = &records[0];
    assert_eq!(r.id, "calc/src/calc.cc");
    let kept: Vec<(&str, &str, &[String])> = r
        .kept
        .iter()
        .map(|m| {
            (
                m.id.as_str(),
                m.replacement.as_str(),
                m.killed_by.as_slice(),
            )
        })
        .collect();
    // Checked by hand against CALC: `!(v > hi)`, `<=` and `return 0` (either return) change
    // what Clamp(5, 3) or Clamp(1, 3) gives, `""` what Greet gives.
    let clamps = ["Calc.Clamps".to_string()];
    let greets = ["Calc.Greets".to_string()];
    assert_eq!(
        kept,
        [
            (
                "src/calc.cc:4:7:negate_condition:0",
                "!(v > hi)",
                &clamps[..]
            ),
            ("src/calc.cc:4:9:comparison:0", "<=", &clamps[..]),
            ("src/calc.cc:4:22:return_value:0", "0", &clamps[..]),
            ("src/calc.cc:5:10:return_value:0", "0", &clamps[..]),
            ("src/calc.cc:8:53:constant:0", "\"\"", &greets[..]),
            ("src/calc.cc:8:53:return_value:0", "\"\"", &greets[..]),
        ],
        "{stderr}"
    );
    // `>` → `>=` is the same function: the ground truth cannot kill it.
    assert_eq!(r.survived, ["src/calc.cc:4:9:boundary:0"]);
    // `"hi " - name` does not compile: neither killed nor survived.
    assert_eq!(r.invalid, ["src/calc.cc:8:59:arithmetic:0"]);
    assert!(
        stderr.contains("mutants: 1 problems, 8 sampled, 6 kept, 1 survived, 1 invalid, "),
        "{stderr}"
    );
    // The repository is as it was: every mutant was written into a run's own view.
    assert_eq!(
        std::fs::read_to_string(root.join("src/calc.cc")).unwrap(),
        CALC
    );
}

#[test]
fn the_ground_truth_keeps_the_header_mutants_it_kills() {
    use clover_testkit::counter;
    let (Some(()), Some(())) = (clover_testkit::root(), clover_testkit::cpp_toolchain()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = counter::write_repo(dir.path());
    let cfg = &RepoConfig::resolve(None, None, Some(&root)).unwrap()[0];
    let problems = clover_extract::extract(&clover_extract::ExtractOptions::from_repo(cfg))
        .expect("extract")
        .problems;
    let ids: Vec<&str> = problems.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["counter/src/counter.h"]);
    let (stderr, records) = calibrate(dir.path(), &root, &problems);
    assert_eq!(records.len(), 1, "{stderr}");
    let r = &records[0];
    let kept: Vec<(&str, &[String])> = r
        .kept
        .iter()
        .map(|m| (m.id.as_str(), m.killed_by.as_slice()))
        .collect();
    // Checked by hand against the header: every mutant of Add, full and Label changes what
    // Counter.Adds sees; `count()` and `limit()` are called only from the library's
    // headroom.cc, which Counter.Headroom calls: their mutants are killed because that object
    // is compiled again with the mutated header.
    let adds = ["Counter.Adds".to_string()];
    let headroom = ["Counter.Headroom".to_string()];
    let by_adds = |id| (id, &adds[..]);
    assert_eq!(
        kept,
        [
            by_adds("src/counter.h:12:9:negate_condition:0"),
            by_adds("src/counter.h:12:16:arithmetic:0"),
            by_adds("src/counter.h:12:20:comparison:0"),
            by_adds("src/counter.h:12:20:boundary:0"),
            by_adds("src/counter.h:12:37:return_value:0"),
            by_adds("src/counter.h:13:5:delete_statement:0"),
            by_adds("src/counter.h:13:12:arithmetic:0"),
            by_adds("src/counter.h:14:12:return_value:0"),
            ("src/counter.h:16:28:return_value:0", &headroom[..]),
            ("src/counter.h:17:30:return_value:0", &headroom[..]),
            by_adds("src/counter.h:18:28:return_value:0"),
            by_adds("src/counter.h:18:35:comparison:0"),
            by_adds("src/counter.h:19:36:constant:0"),
            by_adds("src/counter.h:19:36:return_value:0"),
        ],
        "{stderr}"
    );
    // `full()` is asked at 2 of 3 only, where `>` and `false` say what `>=` says.
    assert_eq!(
        r.survived,
        [
            "src/counter.h:18:28:return_value:1",
            "src/counter.h:18:35:boundary:0"
        ]
    );
    // `"n=" - std::to_string(...)` does not compile: neither killed nor survived.
    assert_eq!(r.invalid, ["src/counter.h:19:41:arithmetic:0"]);
    assert!(
        stderr.contains("mutants: 1 problems, 17 sampled, 14 kept, 2 survived, 1 invalid, "),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(counter::HEADER_PATH)).unwrap(),
        counter::HEADER
    );
}
