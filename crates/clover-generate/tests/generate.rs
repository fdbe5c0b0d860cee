//! Runs the real `clover-generate` binary: against a fake OpenAI-compatible server on loopback
//! (429 then success, 500, timeout, malformed JSON), and with the oracle, resume and shards.

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use clover_testkit::fake_chat::{ChatReply, ChatRequest, FakeChat};

use clover_protocol::{
    ExecSpec, Instance, RecordKind, RecordReader, Response, Task, DEFAULT_MAX_LINE_BYTES,
    SCHEMA_VERSION,
};

fn instance(id: &str, task: Task, prompt: &str, reference: &str) -> Instance {
    Instance {
        kind: RecordKind::Instance,
        schema_version: SCHEMA_VERSION,
        id: id.into(),
        problem_id: id.into(),
        repo: "pyfix".into(),
        task,
        setting: "po".into(),
        answer_format: "full".into(),
        prompt: prompt.into(),
        messages: vec![],
        prompt_tokens: 1,
        context_files: vec![],
        reference: reference.into(),
        exec: ExecSpec::default(),
        scoring: Default::default(),
    }
}

fn jsonl(instances: &[Instance]) -> String {
    instances
        .iter()
        .map(|i| serde_json::to_string(i).unwrap() + "\n")
        .collect()
}

fn read_responses(bytes: &[u8]) -> Vec<Response> {
    let mut reader = RecordReader::new(bytes, "out", DEFAULT_MAX_LINE_BYTES);
    let mut out = Vec::new();
    while let Some(r) = reader.next_record::<Response>() {
        out.push(r.expect("valid response").1);
    }
    out
}

fn generate(args: &[&str], stdin: &str) -> (Vec<Response>, String, i32) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_clover-generate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        read_responses(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// A chat-completions server on 127.0.0.1 that behaves as the prompt's `case:` word says, and
/// counts the requests of each case.
struct FakeServer {
    chat: FakeChat,
    hits: Arc<Mutex<HashMap<String, u32>>>,
}

impl FakeServer {
    fn start() -> Self {
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let h = Arc::clone(&hits);
        let chat = FakeChat::start(move |request| answer(request, &h));
        FakeServer { chat, hits }
    }

    fn url(&self) -> String {
        self.chat.url()
    }

    fn hits(&self, case: &str) -> u32 {
        self.hits.lock().unwrap().get(case).copied().unwrap_or(0)
    }
}

fn answer(request: &ChatRequest, hits: &Mutex<HashMap<String, u32>>) -> ChatReply {
    let prompt = request.message(0);
    let case = prompt
        .split_whitespace()
        .find_map(|w| w.strip_prefix("case:"))
        .unwrap_or("ok")
        .to_string();
    let n = {
        let mut h = hits.lock().unwrap();
        let n = h.entry(case.clone()).or_insert(0);
        *n += 1;
        *n
    };
    match case.as_str() {
        "429" if n == 1 => ChatReply {
            headers: "Retry-After: 1\r\n".into(),
            ..ChatReply::raw(429, "{\"error\":\"slow down\"}")
        },
        "429" => ChatReply::content("after the wait"),
        "500" => ChatReply::raw(500, "{\"error\":\"boom\"}"),
        "timeout" => {
            thread::sleep(Duration::from_secs(3));
            ChatReply::content("too late")
        }
        "malformed" => ChatReply::raw(200, "{\"choices\": ["),
        "echo" => {
            let b = &request.body;
            ChatReply::content(&format!(
                "{} t={} p={} max={} key={}",
                b["model"],
                b["temperature"],
                b["top_p"],
                b["max_tokens"],
                request.api_key.as_deref().unwrap_or("")
            ))
        }
        _ => {
            // Later instances answer sooner, so completion order differs from input order.
            let delay = prompt.len() as u64 % 7;
            thread::sleep(Duration::from_millis(delay * 20));
            ChatReply::content(&format!("answer to {prompt}"))
        }
    }
}

#[test]
fn openai_adapter_retries_records_failures_and_keeps_order() {
    let server = FakeServer::start();
    let mut instances = vec![
        instance("i/0", Task::TargetedTest, "case:429 write", "ref"),
        instance("i/1", Task::TargetedTest, "case:500 write", "ref"),
        instance("i/2", Task::TargetedTest, "case:timeout write", "ref"),
        instance("i/3", Task::TargetedTest, "case:malformed write", "ref"),
        instance("i/4", Task::AssertionCloze, "case:echo fill", "ref"),
    ];
    for k in 5..12 {
        instances.push(instance(
            &format!("i/{k}"),
            Task::CoverageTest,
            &"x".repeat(k),
            "ref",
        ));
    }
    let url = server.url();
    let started = Instant::now();
    let (responses, stderr, code) = {
        let mut child = Command::new(env!("CARGO_BIN_EXE_clover-generate"))
            .args([
                "--model",
                "openai",
                "--base-url",
                &url,
                "--model-name",
                "org/fake-7b",
                "--api-key-env",
                "CLOVER_TEST_KEY",
                "--max-retries",
                "2",
                "--backoff-ms",
                "10",
                "--timeout-secs",
                "0.5",
                "--concurrency",
                "3",
                "--max-tokens",
                "assertion_cloze=123",
            ])
            .env("CLOVER_TEST_KEY", "sekrit")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(jsonl(&instances).as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            read_responses(&out.stdout),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.code().unwrap(),
        )
    };
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<&str> = responses.iter().map(|r| r.instance_id.as_str()).collect();
    let want: Vec<&str> = instances.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, want, "responses come out in input order");
    assert!(responses.iter().all(|r| r.model == "fake-7b"));
    assert_eq!(responses[0].id, "i/0@fake-7b");

    // 429 with Retry-After: 1, then success: one retry, after at least the asked second.
    assert_eq!(responses[0].text, "after the wait");
    assert_eq!(responses[0].error, None);
    assert_eq!(server.hits("429"), 2);
    assert!(started.elapsed() >= Duration::from_secs(1));

    // 500 every time: three attempts (max-retries 2), then an error, never dropped.
    let e = responses[1].error.as_deref().unwrap();
    assert!(e.contains("HTTP 500") && e.contains("3 attempt"), "{e}");
    assert_eq!(responses[1].text, "");
    assert_eq!(server.hits("500"), 3);

    // A server slower than the timeout: each attempt times out.
    let e = responses[2].error.as_deref().unwrap();
    assert!(
        e.contains("3 attempt") && e.to_lowercase().contains("timeout"),
        "{e}"
    );

    // Malformed JSON with status 200 is final: no retry.
    let e = responses[3].error.as_deref().unwrap();
    assert!(e.contains("malformed"), "{e}");
    assert_eq!(server.hits("malformed"), 1);

    // Sampling parameters, the per-task max tokens and the key reach the server.
    assert_eq!(
        responses[4].text,
        "\"org/fake-7b\" t=0.2 p=1.0 max=123 key=sekrit"
    );
    for (r, i) in responses[5..].iter().zip(&instances[5..]) {
        assert_eq!(r.text, format!("answer to {}", i.prompt));
    }
    assert!(stderr.contains("12 response(s)") && stderr.contains("3 with an error"));
}

#[test]
fn oracle_resume_and_shards() {
    let dir = tempfile::tempdir().unwrap();
    let instances: Vec<Instance> = (0..20)
        .map(|k| {
            let mut i = instance(
                &format!("pyfix/t.py::test_{k}#targeted_test#full@po"),
                Task::TargetedTest,
                "p",
                &format!("import m\n\n\ndef test_{k}():\n    assert m.f({k})\n"),
            );
            i.problem_id = format!("pyfix/t.py::test_{k}");
            i
        })
        .collect();
    let input = dir.path().join("instances.jsonl");
    std::fs::write(&input, jsonl(&instances)).unwrap();
    let out = dir.path().join("responses.jsonl");
    let input_s = input.to_str().unwrap();
    let out_s = out.to_str().unwrap();

    let (rs, _, code) = generate(&["--model", "oracle", input_s], "");
    assert_eq!(code, 0);
    assert_eq!(rs.len(), 20);
    assert_eq!(rs[3].text, instances[3].reference);

    // Shards partition the instances; `cat` of the shards is the whole.
    let mut total = 0;
    for k in 0..3 {
        let shard = format!("{k}/3");
        let (rs, _, _) = generate(&["--model", "oracle", "--shard", &shard, input_s], "");
        total += rs.len();
    }
    assert_eq!(total, 20);

    // A first run of half the input, then a resumed run of the whole: nothing twice.
    std::fs::write(dir.path().join("half.jsonl"), jsonl(&instances[..10])).unwrap();
    let half = dir.path().join("half.jsonl");
    let (_, _, code) = generate(
        &[
            "--model",
            "assert-true",
            "-o",
            out_s,
            half.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 0);
    let (_, stderr, code) = generate(
        &["--model", "assert-true", "-o", out_s, "--resume", input_s],
        "",
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("10 already done"), "{stderr}");
    let all = read_responses(&std::fs::read(&out).unwrap());
    assert_eq!(all.len(), 20);
    assert_eq!(
        all[0].text, "import m\n\n\ndef test_0():\n    assert True\n",
        "the baseline keeps the declaration"
    );
}

#[test]
fn command_model_and_usage_errors() {
    let instances = vec![
        instance("a", Task::AssertionCloze, "first", "r"),
        instance("b", Task::AssertionCloze, "second", "r"),
    ];
    let (rs, stderr, code) = generate(
        &[
            "--model",
            "cmd",
            "--label",
            "shout",
            "--",
            "sh",
            "-c",
            "printf '%s:' \"$CLOVER_INSTANCE_ID\"; tr a-z A-Z",
        ],
        &jsonl(&instances),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(rs[0].text, "a:FIRST");
    assert_eq!(rs[1].text, "b:SECOND");
    assert_eq!(rs[1].model, "shout");

    let (_, stderr, code) = generate(&["--model", "cmd"], "");
    assert_eq!(code, 1);
    assert!(stderr.contains("needs a command"), "{stderr}");
    let (_, stderr, code) = generate(&["--model", "openai", "--model-name", "m"], "");
    assert_eq!(code, 1);
    assert!(stderr.contains("--base-url"), "{stderr}");
}
