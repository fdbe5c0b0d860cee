//! What every end-to-end test uses: the stage binaries, runs, record comparison, SIGKILL in
//! the middle of a run, and the fixture pipeline's outputs shared by several tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use clover_protocol::partial_path;

/// Fields that hold timings; they are dropped by name before records are compared.
pub const TIMING_FIELDS: &[&str] = &["duration_secs"];

/// Fields of run results that hold the run's own console output, which holds timings too
/// (pytest ends with "1 passed in 0.05s"); dropped as well when records are compared.
pub const CONSOLE_FIELDS: &[&str] = &["stdout_tail", "stderr_tail"];

/// The folder holding the stage binaries of this build, built once per test process.
///
/// The test runs from `target/<profile>/deps/`; `cargo build --bins` of the same profile puts
/// the binaries one folder up (the build lock is free while tests run).
pub fn bin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test's own path");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("tests run from target/<profile>/deps")
            .to_path_buf();
        let profile = match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(other) => other.to_string(),
        };
        let status = Command::new(env!("CARGO"))
            .args(["build", "--workspace", "--bins", "--quiet", "--profile"])
            .arg(&profile)
            .current_dir(clover_testkit::workspace_root())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cargo build --bins failed");
        for tool in [
            "clover",
            "clover-extract",
            "clover-calibrate",
            "clover-pack-context",
        ] {
            assert!(
                dir.join(tool).is_file(),
                "{tool} is not in {}",
                dir.display()
            );
        }
        dir
    })
}

/// A command running `clover-<stage>` of this build.
pub fn tool(stage: &str) -> Command {
    let mut cmd = Command::new(bin_dir().join(format!("clover-{stage}")));
    cmd.stdin(Stdio::null());
    cmd
}

/// What a finished command did.
#[derive(Debug)]
pub struct Ran {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Runs `cmd` to the end, capturing its output.
pub fn run(cmd: &mut Command) -> Ran {
    let out = cmd.output().expect("the command starts");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `cmd` and asserts it exits with `code`.
pub fn run_ok(cmd: &mut Command, code: i32) -> Ran {
    let ran = run(cmd);
    assert_eq!(ran.code, code, "{cmd:?}\n{}", ran.stderr);
    ran
}

/// The problem records of `problems` (one JSON Lines text) but those of `test_file`.
pub fn without_test_file(problems: &Path, test_file: &str) -> String {
    std::fs::read_to_string(problems)
        .unwrap()
        .lines()
        .filter(|l| {
            let p: clover_protocol::Problem = serde_json::from_str(l).unwrap();
            p.python.is_none_or(|py| py.test_file != test_file)
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

fn drop_timing(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for f in TIMING_FIELDS.iter().chain(CONSOLE_FIELDS) {
                map.remove(*f);
            }
            map.values_mut().for_each(drop_timing);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_timing),
        // A list or part written as its JSON text (schema version 3: a result's `tests`).
        serde_json::Value::String(s) if s.starts_with(['[', '{']) => {
            if let Ok(mut inner) = serde_json::from_str::<serde_json::Value>(s) {
                drop_timing(&mut inner);
                *s = inner.to_string();
            }
        }
        _ => {}
    }
}

/// The records of a JSON Lines file with their timing fields dropped, one compact JSON text
/// each. Fails on a line that is not a whole JSON object — a half-written line — and on a
/// file that does not end with a newline.
pub fn records(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{} ends in a half-written line",
        path.display()
    );
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| {
                panic!("{}:{}: not a whole record ({e})", path.display(), i + 1)
            });
            assert!(v.is_object(), "{}:{}: not an object", path.display(), i + 1);
            drop_timing(&mut v);
            v.to_string()
        })
        .collect()
}

/// The id of a record given as JSON text.
pub fn id_of(record: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(record).expect("a record");
    v["id"].as_str().expect("records have an id").to_string()
}

/// Asserts that ids are unique.
pub fn assert_unique_ids(records: &[String], what: &str) {
    let mut ids: Vec<String> = records.iter().map(|r| id_of(r)).collect();
    ids.sort();
    for pair in ids.windows(2) {
        assert_ne!(pair[0], pair[1], "{what}: id written twice");
    }
}

/// The top-level fields where two records differ, each with both values (cut to 600 bytes).
fn fields_that_differ(got: &str, want: &str) -> String {
    let (g, w): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(got).expect("a record"),
        serde_json::from_str(want).expect("a record"),
    );
    let cut = |v: Option<&serde_json::Value>| {
        let s = v.map_or("(none)".to_string(), |v| v.to_string());
        match s.char_indices().nth(600) {
            Some((i, _)) => format!("{}…", &s[..i]),
            None => s,
        }
    };
    let mut keys: Vec<&String> = g
        .as_object()
        .into_iter()
        .chain(w.as_object())
        .flat_map(|o| o.keys())
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| g.get(k.as_str()) != w.get(k.as_str()))
        .map(|k| {
            format!(
                "\n  {k}: got {}\n  {k}: want {}",
                cut(g.get(k.as_str())),
                cut(w.get(k.as_str()))
            )
        })
        .collect()
}

/// Asserts that `got` holds exactly the records of `want`, in the same order (timing fields
/// aside), with no id twice.
pub fn assert_same_records(got: &Path, want: &Path) {
    let (g, w) = (records(got), records(want));
    assert_unique_ids(&g, &got.display().to_string());
    if g != w {
        let gi: Vec<String> = g.iter().map(|r| id_of(r)).collect();
        let wi: Vec<String> = w.iter().map(|r| id_of(r)).collect();
        assert_eq!(
            gi,
            wi,
            "{} and {} hold other ids",
            got.display(),
            want.display()
        );
        let first = g.iter().zip(&w).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{} differs from {} at record {} ({}): {}",
            got.display(),
            want.display(),
            first + 1,
            gi[first],
            fields_that_differ(&g[first], &w[first])
        );
    }
}

/// `text` with every `0x` and six or more hex digits (an object's address) replaced by `0x…`.
pub fn without_addresses(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("0x") {
        out.push_str(&rest[..at]);
        let digits = rest[at + 2..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        if digits >= 6 {
            out.push_str("0x…");
        } else {
            out.push_str(&rest[at..at + 2 + digits]);
        }
        rest = &rest[at + 2 + digits..];
    }
    out.push_str(rest);
    out
}

/// [`assert_same_records`] of two sandbox-run outputs once object addresses, which differ
/// between any two processes, are masked ([`without_addresses`]); the masked copies are
/// written into `scratch`.
pub fn assert_same_results(got: &Path, want: &Path, scratch: &Path) {
    let masked = |path: &Path, name: &str| {
        let to = scratch.join(format!(
            "{name}-{}",
            path.file_name().unwrap().to_string_lossy()
        ));
        let text = std::fs::read_to_string(path).unwrap();
        std::fs::write(&to, without_addresses(&text)).unwrap();
        to
    };
    assert_same_records(&masked(got, "got"), &masked(want, "want"));
}

/// Asserts that the records of `shards`, joined and sorted by id, are those of `whole` sorted
/// by id, and that each record is in exactly one shard.
pub fn assert_shards_join(shards: &[PathBuf], whole: &Path) {
    let mut joined: Vec<String> = shards.iter().flat_map(|s| records(s)).collect();
    assert_unique_ids(&joined, "the joined shards");
    let mut all = records(whole);
    assert!(
        !all.is_empty(),
        "{} is empty: nothing to split",
        whole.display()
    );
    for s in shards {
        assert!(
            records(s).len() < all.len(),
            "{} holds every record: the split did nothing",
            s.display()
        );
    }
    joined.sort_by_key(|r| id_of(r));
    all.sort_by_key(|r| id_of(r));
    assert_eq!(
        joined.len(),
        all.len(),
        "the shards hold another number of records"
    );
    assert!(joined == all, "the joined shards differ from the whole run");
}

/// Starts `cmd`, which writes `-o out`, waits until `out.partial` holds a whole record, and
/// kills the process with SIGKILL. Returns the number of whole records it left.
pub fn kill_after_first_record(cmd: &mut Command, out: &Path) -> usize {
    let partial = partial_path(out);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the stage starts");
    // Only a bound on a hang, not a timing assertion.
    let give_up = Instant::now() + Duration::from_secs(600);
    let written = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("{cmd:?} ended ({status}) before it could be killed; give it a slower input");
        }
        let lines = std::fs::read(&partial)
            .map(|b| b.iter().filter(|&&c| c == b'\n').count())
            .unwrap_or(0);
        if lines >= 1 {
            child.kill().expect("SIGKILL");
            child.wait().expect("reaped");
            break std::fs::read(&partial)
                .map(|b| b.iter().filter(|&&c| c == b'\n').count())
                .unwrap_or(0);
        }
        assert!(Instant::now() < give_up, "{cmd:?} wrote nothing");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        !out.exists(),
        "a killed stage left a finished {}",
        out.display()
    );
    written
}

/// Kills the run `make(false)` builds (it writes `-o out`) after its first record, leaves half
/// a record at the end of the partial output as a crash mid-write would, reruns it as
/// `make(true)` (the same run with `--resume`), and asserts the result equals `reference`, an
/// uninterrupted run's output.
pub fn assert_resume_after_kill(make: &dyn Fn(bool) -> Command, out: &Path, reference: &Path) {
    let kept = kill_after_first_record(&mut make(false), out);
    assert!(kept >= 1);
    let partial = partial_path(out);
    let mut text = std::fs::read(&partial).unwrap();
    text.extend_from_slice(br#"{"kind":"half-writ"#);
    std::fs::write(&partial, text).unwrap();
    let ran = run_ok(&mut make(true), 0);
    assert!(
        ran.stderr.contains("dropped a half-written last line"),
        "the torn line is reported: {}",
        ran.stderr
    );
    assert!(!partial.exists(), "the partial file is renamed into place");
    assert_same_records(out, reference);
}

/// A folder for shared outputs of this test process, under cargo's tmp folder.
pub fn shared_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-shared");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// The Python test environment when the sandbox can run (root); a skip or failure otherwise.
pub fn sandbox_python() -> Option<PathBuf> {
    clover_testkit::root()?;
    clover_testkit::python()
}

/// The problems of `fixtures/python` calibrate can judge the same way every time: those of
/// `tests/test_flaky.py` are left out, since one of them fails at random by design (it is
/// what the flakiness check is tested on) and would change the output from run to run.
pub fn python_problems() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| extract_python(&tool, shared_dir()))
}

/// extract of `fixtures/python` into `dir/problems.jsonl` with the stages `tool` makes (this
/// build's, or an installed wheel's), less `tests/test_flaky.py` (see [`python_problems`]).
pub fn extract_python(tool: &dyn Fn(&str) -> Command, dir: &Path) -> PathBuf {
    let all = dir.join("problems-all.jsonl");
    run_ok(
        tool("extract")
            .arg("--repo")
            .arg(clover_testkit::fixture("python"))
            .arg("-o")
            .arg(&all),
        0,
    );
    let kept = without_test_file(&all, "tests/test_flaky.py");
    let path = dir.join("problems.jsonl");
    std::fs::write(&path, kept).unwrap();
    path
}

/// The flags calibrate runs with in these tests: the fixture, the test Python, one run.
pub fn calibrate_args(cmd: &mut Command, python: &Path) {
    cmd.arg("--repo")
        .arg(clover_testkit::fixture("python"))
        .arg("--python")
        .arg(python)
        .args(["--runs", "1"]);
}

/// An uninterrupted calibration of [`python_problems`], made once.
pub fn python_calibrated(python: &Path) -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = shared_dir().join("calibrated.jsonl");
        calibrate_python(&tool, python_problems(), python, &path);
        path
    })
}

/// calibrate of `problems` (the Python fixture's) into `out` with [`calibrate_args`] and the
/// stages `tool` makes.
pub fn calibrate_python(
    tool: &dyn Fn(&str) -> Command,
    problems: &Path,
    python: &Path,
    out: &Path,
) {
    let mut cmd = tool("calibrate");
    calibrate_args(&mut cmd, python);
    run_ok(cmd.arg(problems).arg("-o").arg(out), 0);
}

/// Copies a folder tree (regular files and folders only).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `n` task instances of the fixture repository, as JSON Lines; their answers do not matter.
pub fn instances_jsonl(n: usize) -> String {
    use clover_protocol::{ExecSpec, Instance, RecordKind, Task, SCHEMA_VERSION};
    (0..n)
        .map(|k| {
            let id = format!("pyfix/tests/test_e2e.py::test_{k}");
            let instance = Instance {
                kind: RecordKind::Instance,
                schema_version: SCHEMA_VERSION,
                id: format!("{id}#assertion_cloze#po#0"),
                problem_id: id,
                repo: "pyfix".into(),
                task: Task::AssertionCloze,
                setting: "po".into(),
                answer_format: "part".into(),
                prompt: format!("prompt {k}\n"),
                messages: vec![],
                prompt_tokens: 3,
                context_files: vec![],
                reference: format!("{k}"),
                exec: ExecSpec::default(),
                scoring: Default::default(),
            };
            serde_json::to_string(&instance).unwrap() + "\n"
        })
        .collect()
}

/// The oracle's responses to the problem-only instances of [`python_calibrated`], made once:
/// input for the tests of sandbox-run.
pub fn python_oracle_responses(python: &Path, tokenizer: &Path) -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let instances = shared_dir().join("po-instances.jsonl");
        run_ok(
            tool("pack-context")
                .arg(python_calibrated(python))
                .arg("--repo")
                .arg(clover_testkit::fixture("python"))
                .arg("--tokenizer")
                .arg(tokenizer)
                .args(["--seed", "0", "--settings", "po"])
                .args(["--cloze-per-repo", "3", "--targeted-per-repo", "2"])
                .args(["--coverage-per-repo", "2"])
                .arg("-o")
                .arg(&instances),
            0,
        );
        let path = shared_dir().join("po-responses.jsonl");
        run_ok(
            tool("generate")
                .arg(&instances)
                .args(["--model", "oracle"])
                .arg("-o")
                .arg(&path),
            0,
        );
        path
    })
}

/// `clover sandbox-run` over `input` into `out`, on the Python fixture, one run at a time.
pub fn sandbox_run(python: &Path, input: &Path, out: &Path) -> Command {
    let mut cmd = tool("sandbox-run");
    cmd.arg(input)
        .arg("--repo")
        .arg(clover_testkit::fixture("python"))
        .arg("--python")
        .arg(python)
        .args(["--jobs", "1"])
        .arg("-o")
        .arg(out);
    cmd
}

/// sandbox-run's results for [`python_oracle_responses`], made once: input for score's tests.
pub fn python_oracle_results(python: &Path, tokenizer: &Path) -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = shared_dir().join("po-results.jsonl");
        let responses = python_oracle_responses(python, tokenizer);
        run_ok(&mut sandbox_run(python, responses, &path), 0);
        path
    })
}
