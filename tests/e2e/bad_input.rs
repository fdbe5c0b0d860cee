//! Bad input records, for every stage that reads records: each is reported with its line
//! and, when the line has one, its id (docs/ERRORS.md); the good records are processed exactly
//! as in an input that holds only them; the exit code is 3, or 4 with `--on-error stop`; an
//! empty input is an empty output.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::support::*;

/// Lines of an input holding two good records and every kind of bad one, and the messages
/// each bad one must produce (`{input}` stands for the input's path).
struct BadInput {
    lines: Vec<Vec<u8>>,
    expected: Vec<String>,
}

/// A good record with another id (and whatever `edit` changes), as JSON text.
fn variant(
    good: &str,
    id: &str,
    edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_str(good).unwrap();
    let map = v.as_object_mut().unwrap();
    map.insert("id".into(), id.into());
    edit(map);
    v.to_string().into_bytes()
}

/// `a` and `b` are good records of the kind the stage reads; `other_kind` is a kind it does
/// not; `unknown_repo` says whether the stage checks repositories.
fn bad_input(a: &str, b: &str, other_kind: &str, unknown_repo: bool) -> BadInput {
    let kind = serde_json::from_str::<serde_json::Value>(a).unwrap()["kind"]
        .as_str()
        .unwrap()
        .to_string();
    let a_id = id_of(a);
    let mut lines: Vec<Vec<u8>> = vec![a.as_bytes().to_vec()];
    let mut expected = Vec::new();
    let mut push = |line: Vec<u8>, message: String, lines: &mut Vec<Vec<u8>>| {
        lines.push(line);
        expected.push(format!("{{input}}:{}{message}", lines.len()));
    };
    push(
        br#"{"kind": "problem", "id": "#.to_vec(),
        ": malformed JSON: EOF while parsing".into(),
        &mut lines,
    );
    push(
        variant(a, "e2e/wrong-kind", |m| {
            m.insert("kind".into(), other_kind.into());
        }),
        format!(" (id e2e/wrong-kind): expected a `{kind}` record, found kind `{other_kind}`"),
        &mut lines,
    );
    push(
        variant(a, "e2e/missing-field", |m| {
            m.remove("repo");
        }),
        " (id e2e/missing-field): missing field `repo`".into(),
        &mut lines,
    );
    if unknown_repo {
        push(
            variant(a, "nowhere/tests/test_x.py::test_y", |m| {
                m.insert("repo".into(), "nowhere".into());
                // A response names its repository again in its execution spec.
                if let Some(exec) = m.get_mut("exec").and_then(|e| e.as_object_mut()) {
                    exec.insert("repo".into(), "nowhere".into());
                }
            }),
            " (id nowhere/tests/test_x.py::test_y): unknown repository `nowhere`".into(),
            &mut lines,
        );
    }
    push(
        b"{\"kind\": \"\xff\xfe\"}".to_vec(),
        ": line is not valid UTF-8 (first bad byte at column 11)".into(),
        &mut lines,
    );
    push(
        a.as_bytes().to_vec(),
        format!(" (id {a_id}): duplicate id, first seen on line 1"),
        &mut lines,
    );
    // A 100 MB line, over the default limit of 64 MiB.
    let mut huge = format!(r#"{{"kind":"{kind}","id":"e2e/huge","pad":""#).into_bytes();
    huge.resize(100 << 20, b'x');
    huge.extend_from_slice(br#""}"#);
    push(
        huge,
        ": line is longer than 67108864 bytes; raise --max-line-bytes if it is meant to be".into(),
        &mut lines,
    );
    lines.push(b"   ".to_vec());
    lines.push(b.as_bytes().to_vec());
    BadInput { lines, expected }
}

fn write_lines(path: &Path, lines: &[Vec<u8>]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for l in lines {
        f.write_all(l).unwrap();
        f.write_all(b"\n").unwrap();
    }
    f.flush().unwrap();
}

/// Feeds the bad input to `make(input, output)` and checks messages, output and exit codes
/// against a run over `a` and `b` alone. With `--on-error stop` the stage ends with exit 4 at
/// the first bad line, and whatever it wrote is whole records of the clean run, kept in
/// FILE.partial for a later `--resume`.
fn check(
    dir: &Path,
    a: &str,
    b: &str,
    other_kind: &str,
    unknown_repo: bool,
    make: &dyn Fn(&Path, &Path) -> Command,
) {
    let bad = bad_input(a, b, other_kind, unknown_repo);
    let clean_in = dir.join("clean.jsonl");
    write_lines(&clean_in, &[a.as_bytes().to_vec(), b.as_bytes().to_vec()]);
    let clean_out = dir.join("clean.out.jsonl");
    run_ok(&mut make(&clean_in, &clean_out), 0);
    assert!(
        !records(&clean_out).is_empty(),
        "the good records give output"
    );

    let input = dir.join("bad.jsonl");
    write_lines(&input, &bad.lines);
    let out = dir.join("bad.out.jsonl");
    let ran = run_ok(&mut make(&input, &out), 3);
    let errors: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.contains(": error: "))
        .collect();
    for want in &bad.expected {
        let want = want.replace("{input}", &input.display().to_string());
        assert!(
            errors.iter().any(|e| e.contains(&want)),
            "no error `{want}` in:\n{}",
            ran.stderr
        );
    }
    assert_eq!(
        errors.len(),
        bad.expected.len(),
        "one error per bad line:\n{}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains("xxxxxxxxxxxxxxxx"),
        "the long line is not echoed"
    );
    assert_same_records(&out, &clean_out);

    let stopped = dir.join("stopped.jsonl");
    let ran = run_ok(make(&input, &stopped).args(["--on-error", "stop"]), 4);
    assert_eq!(
        ran.stderr
            .lines()
            .filter(|l| l.contains(": error: "))
            .count(),
        1,
        "only the first bad line is reported:\n{}",
        ran.stderr
    );
    assert!(!stopped.exists(), "a stopped run is not complete");
    let partial = clover_protocol::partial_path(&stopped);
    // A stage that writes at the end (score's report) has written nothing at all.
    let written = if partial.exists() {
        records(&partial)
    } else {
        Vec::new()
    };
    let clean = records(&clean_out);
    assert!(written.len() <= clean.len());
    assert_eq!(
        written[..],
        clean[..written.len()],
        "a stop leaves whole, correct records"
    );

    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let empty_out = dir.join("empty.out.jsonl");
    run_ok(&mut make(&empty, &empty_out), 0);
    assert!(records(&empty_out).is_empty());
}

/// The first record of each of two test files of `path`.
fn two_records(path: &Path) -> (String, String) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let file = |l: &str| id_of(l).split("::").next().unwrap().to_string();
    let b = lines
        .iter()
        .find(|l| file(l) != file(lines[0]))
        .expect("two test files");
    (lines[0].to_string(), b.to_string())
}

#[test]
fn calibrate_reports_bad_records_and_goes_on() {
    let Some(python) = sandbox_python() else {
        return;
    };
    let (a, b) = two_records(python_problems());
    let dir = tempfile::tempdir().unwrap();
    check(dir.path(), &a, &b, "instance", true, &|input, out| {
        let mut cmd = tool("calibrate");
        calibrate_args(&mut cmd, &python);
        cmd.arg(input).arg("-o").arg(out);
        cmd
    });
}

#[test]
fn pack_context_reports_bad_records_and_goes_on() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let (a, b) = two_records(python_calibrated(&python));
    let dir = tempfile::tempdir().unwrap();
    check(dir.path(), &a, &b, "problem", true, &|input, out| {
        let mut cmd = tool("pack-context");
        cmd.arg("--repo")
            .arg(clover_testkit::fixture("python"))
            .arg("--tokenizer")
            .arg(&tokenizer)
            .args(["--settings", "po"])
            .arg(input)
            .arg("-o")
            .arg(out);
        cmd
    });
}

#[test]
fn generate_reports_bad_records_and_goes_on() {
    let instances = instances_jsonl(2);
    let mut lines = instances.lines();
    let (a, b) = (lines.next().unwrap(), lines.next().unwrap());
    let dir = tempfile::tempdir().unwrap();
    check(dir.path(), a, b, "response", false, &|input, out| {
        let mut cmd = tool("generate");
        cmd.args(["--model", "oracle"])
            .arg(input)
            .arg("-o")
            .arg(out);
        cmd
    });
}

#[test]
fn sandbox_run_reports_bad_records_and_goes_on() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let text = std::fs::read_to_string(python_oracle_responses(&python, &tokenizer)).unwrap();
    let mut lines = text.lines();
    let (a, b) = (lines.next().unwrap(), lines.next().unwrap());
    let dir = tempfile::tempdir().unwrap();
    check(dir.path(), a, b, "instance", true, &|input, out| {
        sandbox_run(&python, input, out)
    });
}

#[test]
fn score_reports_bad_records_and_goes_on() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let text = std::fs::read_to_string(python_oracle_results(&python, &tokenizer)).unwrap();
    let mut lines = text.lines();
    let (a, b) = (lines.next().unwrap(), lines.next().unwrap());
    let dir = tempfile::tempdir().unwrap();
    check(dir.path(), a, b, "response", false, &|input, out| {
        let mut cmd = tool("score");
        cmd.args(["--format", "jsonl"])
            .arg(input)
            .arg("-o")
            .arg(out);
        cmd
    });
}
