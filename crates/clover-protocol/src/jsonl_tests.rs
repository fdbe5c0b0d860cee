use super::*;
use crate::records::{ScoreRow, Task};
use std::collections::BTreeMap;

fn row(id: &str) -> ScoreRow {
    ScoreRow {
        kind: RecordKind::ScoreRow,
        schema_version: SCHEMA_VERSION,
        id: id.to_string(),
        model: "oracle".into(),
        task: Task::AssertionCloze,
        answer_format: String::new(),
        setting: "po".into(),
        repo: "*".into(),
        n: 3,
        metrics: BTreeMap::from([("em".to_string(), 1.0)]),
    }
}

fn line(r: &ScoreRow) -> String {
    serde_json::to_string(r).unwrap()
}

/// Reads everything, returning ids of good records and the errors (line, id, message).
/// An error as (line, id, message).
type Reported = (u64, Option<String>, String);

fn read_all(input: &[u8], max: usize) -> (Vec<String>, Vec<Reported>) {
    let mut reader = RecordReader::new(input, "in.jsonl", max);
    let mut ok = Vec::new();
    let mut errs = Vec::new();
    while let Some(r) = reader.next_record::<ScoreRow>() {
        match r {
            Ok((_, rec)) => ok.push(rec.id),
            Err(e) => errs.push((e.line(), e.id().map(str::to_string), e.to_string())),
        }
    }
    (ok, errs)
}

#[test]
fn every_bad_line_is_reported_with_line_and_id_and_the_rest_is_read() {
    let good = line(&row("a"));
    let mut wrong_kind: serde_json::Value = serde_json::from_str(&line(&row("b"))).unwrap();
    wrong_kind["kind"] = "instance".into();
    let mut missing: serde_json::Value = serde_json::from_str(&line(&row("c"))).unwrap();
    missing.as_object_mut().unwrap().remove("model");
    let mut newer: serde_json::Value = serde_json::from_str(&line(&row("d"))).unwrap();
    newer["schema_version"] = 99.into();
    let mut bad_type: serde_json::Value = serde_json::from_str(&line(&row("e"))).unwrap();
    bad_type["n"] = "three".into();
    let mut input = Vec::new();
    for l in [
        good.clone(),                             // 1
        "{\"id\": \"x\", \"kind\": ".to_string(), // 2 malformed
        wrong_kind.to_string(),                   // 3
        missing.to_string(),                      // 4
        String::new(),                            // 5 blank: skipped
        newer.to_string(),                        // 6
        bad_type.to_string(),                     // 7
        "[1, 2]".to_string(),                     // 8 not an object
        line(&row("a")),                          // 9 duplicate of line 1
    ] {
        input.extend_from_slice(l.as_bytes());
        input.push(b'\n');
    }
    input.extend_from_slice(b"{\"id\": \"\xff\xfe\"}\n"); // 10 invalid UTF-8
    input.extend_from_slice(format!("{}\n", "x".repeat(300)).as_bytes()); // 11 too long
    input.extend_from_slice(line(&row("f")).as_bytes()); // 12 no final newline
    let (ok, errs) = read_all(&input, 256);
    assert_eq!(ok, vec!["a", "f"]);
    let lines: Vec<u64> = errs.iter().map(|e| e.0).collect();
    assert_eq!(lines, vec![2, 3, 4, 6, 7, 8, 9, 10, 11]);
    let find = |l: u64| errs.iter().find(|e| e.0 == l).unwrap();
    assert!(
        find(2).2.starts_with("in.jsonl:2: malformed JSON"),
        "{:?}",
        find(2)
    );
    assert_eq!(find(3).1.as_deref(), Some("b"));
    assert!(
        find(3)
            .2
            .contains("in.jsonl:3 (id b): expected a `score_row` record, found kind `instance`; this is pack-context's output: run generate, then sandbox-run, then score on it first"),
        "{:?}",
        find(3)
    );
    assert!(
        find(4)
            .2
            .contains("in.jsonl:4 (id c): missing field `model`"),
        "{:?}",
        find(4)
    );
    assert!(
        find(6).2.contains("(id d): schema_version 99 is newer"),
        "{:?}",
        find(6)
    );
    assert!(
        find(7).2.contains("(id e): invalid `score_row` record"),
        "{:?}",
        find(7)
    );
    assert!(find(8).2.contains("must be a JSON object"), "{:?}", find(8));
    assert!(
        find(9)
            .2
            .contains("(id a): duplicate id, first seen on line 1"),
        "{:?}",
        find(9)
    );
    assert!(
        find(10)
            .2
            .contains("not valid UTF-8 (first bad byte at column 9)"),
        "{:?}",
        find(10)
    );
    assert!(
        find(11).2.contains("longer than 256 bytes"),
        "{:?}",
        find(11)
    );
}

#[test]
fn a_line_far_over_the_cap_is_never_buffered_whole() {
    // 8 MiB of one line against a 1 KiB cap: rejected, and the next line is still read.
    let mut input = vec![b'{'; 8 << 20];
    input.push(b'\n');
    input.extend_from_slice(line(&row("after")).as_bytes());
    let mut reader = RecordReader::new(
        std::io::BufReader::with_capacity(4096, &input[..]),
        "big",
        1024,
    );
    let first = reader.next_record::<ScoreRow>().unwrap().unwrap_err();
    assert!(matches!(first, RecordError::TooLong { .. }));
    assert!(
        reader.buf.capacity() <= 1024 + 4096,
        "buffer grew to {}",
        reader.buf.capacity()
    );
    let (_, next) = reader.next_record::<ScoreRow>().unwrap().unwrap();
    assert_eq!(next.id, "after");
    assert_eq!(reader.line(), 2);
}

#[test]
fn empty_input_has_no_records() {
    assert_eq!(read_all(b"", 1024), (vec![], vec![]));
    assert_eq!(read_all(b"\n\n  \n", 1024), (vec![], vec![]));
}

#[test]
fn writer_goes_through_a_partial_file_and_resume_repairs_a_torn_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let (mut w, done) = RecordWriter::create(&out, false).unwrap();
    assert!(done.is_empty());
    w.write(&row("a")).unwrap();
    w.write(&row("b")).unwrap();
    // Before finish only the partial file exists, holding whole lines.
    assert!(!out.exists());
    let partial = partial_path(&out);
    assert_eq!(
        std::fs::read_to_string(&partial).unwrap().lines().count(),
        2
    );
    drop(w); // a crash: no finish
             // A crash in the middle of a write leaves half a line.
    let mut torn = std::fs::read(&partial).unwrap();
    torn.extend_from_slice(&line(&row("c")).as_bytes()[..20]);
    std::fs::write(&partial, &torn).unwrap();
    let (mut w, done) = RecordWriter::create(&out, true).unwrap();
    assert_eq!(done, HashSet::from(["a".to_string(), "b".to_string()]));
    w.write(&row("c")).unwrap();
    w.finish().unwrap();
    assert!(!partial.exists());
    let (ok, errs) = read_all(&std::fs::read(&out).unwrap(), 1 << 20);
    assert_eq!(ok, vec!["a", "b", "c"]);
    assert!(errs.is_empty(), "{errs:?}");
    // Resuming a finished output keeps it and appends.
    let (mut w, done) = RecordWriter::create(&out, true).unwrap();
    assert_eq!(done.len(), 3);
    w.write(&row("d")).unwrap();
    w.finish().unwrap();
    assert_eq!(
        read_all(&std::fs::read(&out).unwrap(), 1 << 20).0,
        vec!["a", "b", "c", "d"]
    );
    // Without --resume the output starts over.
    let (w, done) = RecordWriter::create(&out, false).unwrap();
    assert!(done.is_empty());
    w.finish().unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"");
}

/// `-o /dev/null` (or a FIFO) is written in place: a rename onto it would replace the device
/// with a regular file, for every program on the host. A FIFO stands in for the device here.
#[test]
fn an_output_that_is_not_a_regular_file_is_written_in_place() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    assert!(crate::is_special_file(&fifo));
    assert!(!crate::is_special_file(dir.path()));
    assert!(!crate::is_special_file(&dir.path().join("absent")));
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).unwrap())
    };
    let (mut w, done) = RecordWriter::create(&fifo, true).unwrap();
    assert!(done.is_empty());
    w.write(&row("a")).unwrap();
    w.write(&row("b")).unwrap();
    w.finish().unwrap();
    let got = reader.join().unwrap();
    assert_eq!(read_all(&got, 1 << 20).0, vec!["a", "b"]);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).unwrap())
    };
    crate::write_whole(&fifo, b"report\n").unwrap();
    assert_eq!(reader.join().unwrap(), b"report\n");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(!partial_path(&fifo).exists());
    // A regular file still goes through the partial file.
    let file = dir.path().join("report.txt");
    crate::write_whole(&file, b"whole\n").unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), b"whole\n");
    assert!(!partial_path(&file).exists());
}
