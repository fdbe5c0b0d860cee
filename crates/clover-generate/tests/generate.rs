//! Runs the real `clover-generate` binary: against a fake OpenAI-compatible server on loopback
//! (429 then success, 400/401/404, 500, slow, refused, malformed JSON), and with the oracle,
//! resume (errors asked again, other settings refused) and shards.

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use clover_testkit::fake_chat::{refused_url, ChatReply, ChatRequest, FakeChat};

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
        "timeout" => ChatReply::slow(Duration::from_secs(3), ChatReply::content("too late")),
        "malformed" => ChatReply::raw(200, "{\"choices\": ["),
        "echo" => {
            let b = &request.body;
            ChatReply::finished(
                &format!(
                    "{} t={} p={} max={} seed={} key={}",
                    b["model"],
                    b["temperature"],
                    b["top_p"],
                    b["max_tokens"],
                    b["seed"],
                    request.api_key.as_deref().unwrap_or("")
                ),
                "length",
                17,
                123,
            )
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
                "--seed",
                "7",
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
    assert_eq!(code, 3, "some responses hold an error: {stderr}");
    let ids: Vec<&str> = responses.iter().map(|r| r.instance_id.as_str()).collect();
    let want: Vec<&str> = instances.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, want, "responses come out in input order");
    // The model is named by its full id, `/` and all.
    assert!(responses.iter().all(|r| r.model == "org/fake-7b"));
    assert_eq!(responses[0].id, "i/0@org/fake-7b");
    for r in &responses {
        let g = &r.generation;
        assert_eq!(g.adapter, "openai");
        assert_eq!(g.model_name.as_deref(), Some("org/fake-7b"));
        assert_eq!(g.base_url.as_deref(), Some(url.as_str()));
        assert_eq!(
            (g.temperature, g.top_p, g.seed),
            (Some(0.2), Some(1.0), Some(7))
        );
        assert!(g.duration_secs > 0.0);
    }
    assert_eq!(responses[4].generation.max_tokens, Some(123));
    assert_eq!(responses[5].generation.max_tokens, Some(4000));
    assert_eq!(
        (
            responses[0].generation.attempts,
            responses[0].generation.http_status
        ),
        (2, Some(200))
    );
    assert_eq!(
        (
            responses[1].generation.attempts,
            responses[1].generation.http_status
        ),
        (3, Some(500))
    );

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
        "\"org/fake-7b\" t=0.2 p=1.0 max=123 seed=7 key=sekrit"
    );
    let g = &responses[4].generation;
    assert_eq!(g.finish_reason.as_deref(), Some("length"));
    let usage = g.usage.unwrap();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (17, 123));
    for (r, i) in responses[5..].iter().zip(&instances[5..]) {
        assert_eq!(r.text, format!("answer to {}", i.prompt));
    }
    assert!(stderr.contains("12 response(s)") && stderr.contains("3 with an error"));
    assert!(stderr.contains("rerun with --resume"), "{stderr}");
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
    let g = &all[0].generation;
    assert_eq!(
        (
            g.adapter.as_str(),
            g.attempts,
            g.duration_secs,
            &g.model_name
        ),
        ("assert-true", 0, 0.0, &None),
        "a baseline makes no call and is not timed, so its output is the same on every run"
    );
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

    // Bad usage exits 2, as docs/ERRORS.md says.
    let (_, stderr, code) = generate(&["--model", "cmd"], "");
    assert_eq!(code, 2);
    assert!(stderr.contains("needs a command"), "{stderr}");
    let (_, stderr, code) = generate(&["--model", "openai", "--model-name", "m"], "");
    assert_eq!(code, 2);
    assert!(stderr.contains("needs --base-url"), "{stderr}");
    let (_, stderr, code) = generate(
        &[
            "--model",
            "openai",
            "--model-name",
            "m",
            "--base-url",
            "localhost:8000/v1",
        ],
        "",
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("must start with http:// or https://, e.g. http://localhost:8000/v1"),
        "{stderr}"
    );
    let (_, stderr, code) = generate(&["--model", "oracle", "--label", "a@b"], "");
    assert_eq!(code, 2);
    assert!(stderr.contains("hold no `@`"), "{stderr}");
    // A label may hold `/`, as model ids do.
    let (rs, _, code) = generate(
        &["--model", "oracle", "--label", "org/oracle-v2"],
        &jsonl(&instances),
    );
    assert_eq!(code, 0);
    assert_eq!(rs[0].id, "a@org/oracle-v2");
}

/// The flags of an openai run against `url`, then `extra`.
fn openai_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--model",
        "openai",
        "--base-url",
        url,
        "--model-name",
        "org/m-1",
        "--backoff-ms",
        "1",
        "--timeout-secs",
        "10",
    ];
    args.extend_from_slice(extra);
    args
}

fn numbered(n: usize, prompt: impl Fn(usize) -> String) -> Vec<Instance> {
    (0..n)
        .map(|k| {
            instance(
                &format!("r/t.py::test_{k}"),
                Task::TargetedTest,
                &prompt(k),
                "ref",
            )
        })
        .collect()
}

#[test]
fn requests_that_would_all_fail_stop_the_run_early() {
    let input = jsonl(&numbered(30, |k| format!("write test {k}")));
    for status in [400, 401, 403, 404] {
        let server = FakeChat::always(move || ChatReply::error(status));
        let url = server.url();
        let (rs, stderr, code) = generate(
            &openai_args(&url, &["--concurrency", "2", "--max-retries", "3"]),
            &input,
        );
        assert_eq!(code, 1, "{stderr}");
        assert!(
            stderr
                .contains("the first 4 requests all failed and any other would fail the same way")
                && stderr.contains(&format!("HTTP {status}"))
                && stderr.contains("check --base-url, --model-name and the API key"),
            "{stderr}"
        );
        assert_eq!(rs.len(), 4, "what is done is written: {stderr}");
        for r in &rs {
            assert!(r.error.is_some());
            assert_eq!(
                (r.generation.attempts, r.generation.http_status),
                (1, Some(status)),
                "a status that would repeat is not retried"
            );
        }
        // At most the in-flight window (4 × concurrency) beyond the four, never the 30.
        assert!(server.requests() <= 4 + 8, "{} requests", server.requests());
    }

    // Nothing listens: refused at once, never retried (the server was never reached).
    let url = refused_url();
    let (rs, stderr, code) = generate(&openai_args(&url, &["--max-retries", "3"]), &input);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot reach the server at {url}/chat/completions"
        )),
        "{stderr}"
    );
    assert_eq!(rs.len(), 4);
    assert!(rs.iter().all(|r| r.generation.attempts == 1));
}

#[test]
fn retryable_failures_are_retried_then_recorded_and_exit_3() {
    let input = jsonl(&numbered(6, |k| format!("write test {k}")));
    for status in [500, 429] {
        let server = FakeChat::always(move || ChatReply::error(status));
        let url = server.url();
        let (rs, stderr, code) = generate(&openai_args(&url, &["--max-retries", "1"]), &input);
        assert_eq!(code, 3, "{stderr}");
        assert_eq!(
            rs.len(),
            6,
            "never an early stop: the next request may succeed"
        );
        for r in &rs {
            let e = r.error.as_deref().unwrap();
            assert!(
                e.contains(&format!("HTTP {status} after 2 attempt(s)")),
                "{e}"
            );
            assert_eq!(r.generation.attempts, 2);
        }
        assert_eq!(server.requests(), 12);
        assert!(
            stderr.contains("6 response(s) hold an error instead of an answer"),
            "{stderr}"
        );
    }
}

#[test]
fn resume_asks_again_for_responses_that_ended_in_an_error() {
    let broken = Arc::new(AtomicBool::new(true));
    let b = Arc::clone(&broken);
    let server = FakeChat::start(move |request| {
        let prompt = request.message(0);
        if b.load(Ordering::SeqCst) && prompt.contains("flaky") {
            ChatReply::error(500)
        } else {
            ChatReply::content(&format!("answer to {prompt}"))
        }
    });
    let url = server.url();
    let instances = numbered(6, |k| {
        if k % 2 == 1 {
            format!("flaky {k}")
        } else {
            format!("steady {k}")
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("instances.jsonl");
    std::fs::write(&input, jsonl(&instances)).unwrap();
    let out = dir.path().join("responses.jsonl");
    let (input_s, out_s) = (input.to_str().unwrap(), out.to_str().unwrap());
    let run = |extra: &[&str]| {
        let mut args = openai_args(&url, &["--max-retries", "0", "-o", out_s, input_s]);
        args.extend_from_slice(extra);
        generate(&args, "")
    };

    let (_, stderr, code) = run(&[]);
    assert_eq!(code, 3, "{stderr}");
    let first = std::fs::read(&out).unwrap();
    let errors = read_responses(&first)
        .iter()
        .filter(|r| r.error.is_some())
        .count();
    assert_eq!(errors, 3);

    // Kept as they are: nothing asked, and the file still holds errors, so still exit 3.
    let (_, stderr, code) = run(&["--resume", "--no-retry-errors"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("6 already done"), "{stderr}");
    assert_eq!(std::fs::read(&out).unwrap(), first);
    assert_eq!(server.requests(), 6);

    broken.store(false, Ordering::SeqCst);
    let (_, stderr, code) = run(&["--resume"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("3 response(s) that ended in an error will be asked again"),
        "{stderr}"
    );
    assert_eq!(
        server.requests(),
        9,
        "only the three errors are asked again"
    );
    let all = read_responses(&std::fs::read(&out).unwrap());
    let mut ids: Vec<&str> = all.iter().map(|r| r.instance_id.as_str()).collect();
    let want: Vec<String> = [0, 2, 4, 1, 3, 5]
        .iter()
        .map(|k| format!("r/t.py::test_{k}"))
        .collect();
    assert_eq!(
        ids, want,
        "the good lines stay in their order, the retried ones follow"
    );
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6, "each id once");
    assert!(all.iter().all(|r| r.error.is_none()));
    assert_eq!(all[3].text, "answer to flaky 1");
    assert!(!dir.path().join("responses.jsonl.partial").exists());
}

#[test]
fn resume_refuses_a_file_written_with_other_settings() {
    let server = FakeChat::always(|| ChatReply::content("ok"));
    let other = FakeChat::always(|| ChatReply::content("ok"));
    let (url, other_url) = (server.url(), other.url());
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("instances.jsonl");
    std::fs::write(&input, jsonl(&numbered(3, |k| format!("p{k}")))).unwrap();
    let out = dir.path().join("responses.jsonl");
    let (input_s, out_s) = (input.to_str().unwrap(), out.to_str().unwrap());
    let run = |url: &str, extra: &[&str]| {
        let mut args = vec![
            "--model",
            "openai",
            "--base-url",
            url,
            "--backoff-ms",
            "1",
            "-o",
            out_s,
            "--resume",
            input_s,
        ];
        args.extend_from_slice(extra);
        generate(&args, "")
    };
    let same = ["--label", "coder", "--model-name", "org/a"];
    let (_, stderr, code) = run(&url, &same);
    assert_eq!(code, 0, "{stderr}");
    let written = std::fs::read(&out).unwrap();

    for (server_url, extra, want) in [
        (
            url.as_str(),
            &["--label", "coder", "--model-name", "org/b"][..],
            "was written with model_name `org/a` and this run has `org/b`".to_string(),
        ),
        (
            url.as_str(),
            &[
                "--label",
                "coder",
                "--model-name",
                "org/a",
                "--temperature",
                "0.7",
            ][..],
            "was written with temperature `0.2` and this run has `0.7`".to_string(),
        ),
        (
            url.as_str(),
            &["--label", "coder", "--model-name", "org/a", "--seed", "3"][..],
            "was written with seed none and this run has `3`".to_string(),
        ),
        (
            url.as_str(),
            &[
                "--label",
                "coder",
                "--model-name",
                "org/a",
                "--frequency-penalty",
                "0.5",
            ][..],
            "was written with frequency_penalty none and this run has `0.5`".to_string(),
        ),
        (
            url.as_str(),
            &["--label", "coder", "--model-name", "org/a", "--stop", "END"][..],
            "was written with stop none and this run has [\"END\"]".to_string(),
        ),
        (
            url.as_str(),
            &[
                "--label",
                "coder",
                "--model-name",
                "org/a",
                "--max-context",
                "100000",
            ][..],
            "was written with max_context none and this run has `100000`".to_string(),
        ),
        (
            url.as_str(),
            &["--model-name", "org/a"][..],
            "was written with model `coder` and this run has `org/a`".to_string(),
        ),
        (
            other_url.as_str(),
            &same[..],
            format!("was written with base_url `{url}` and this run has `{other_url}`"),
        ),
    ] {
        let (_, stderr, code) = run(server_url, extra);
        assert_eq!(code, 2, "{extra:?}: {stderr}");
        assert!(
            stderr.contains(&want)
                && stderr.contains("responses.jsonl:1 (id r/t.py::test_0@coder)"),
            "{extra:?}: {stderr}"
        );
        assert_eq!(
            std::fs::read(&out).unwrap(),
            written,
            "the file is left alone"
        );
    }
    let (_, stderr, code) = run(&url, &same);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("3 already done"), "{stderr}");

    // Responses that ended in an error are asked again, so they need not match: a run
    // against a wrong URL is repaired by resuming with the right one.
    std::fs::remove_file(&out).unwrap();
    let (_, stderr, code) = run(&refused_url(), &same);
    assert_eq!(code, 3, "{stderr}");
    let (_, stderr, code) = run(&url, &same);
    assert_eq!(code, 0, "{stderr}");
    let all = read_responses(&std::fs::read(&out).unwrap());
    assert_eq!(all.len(), 3);
    assert!(all.iter().all(|r| r.text == "ok"));
}

/// The request bodies a fake server received, by the instance id each prompt names.
fn recorded_bodies(
    chat_reply: &'static str,
) -> (FakeChat, Arc<Mutex<HashMap<String, serde_json::Value>>>) {
    let bodies = Arc::new(Mutex::new(HashMap::new()));
    let b = Arc::clone(&bodies);
    let chat = FakeChat::start(move |request| {
        b.lock()
            .unwrap()
            .insert(request.message(0).to_string(), request.body.clone());
        ChatReply::content(chat_reply)
    });
    (chat, bodies)
}

fn one_per_task() -> Vec<Instance> {
    [
        Task::AssertionCloze,
        Task::TargetedTest,
        Task::CoverageTest,
        Task::CppUnitTest,
    ]
    .into_iter()
    .map(|task| {
        let name = serde_json::to_value(task).unwrap();
        let name = name.as_str().unwrap();
        instance(name, task, name, "ref")
    })
    .collect()
}

/// Each task's requests carry its own sampling: C++ as CPP-UT-Bench samples (temperature 0.1,
/// top-p 0.7, 4,096 tokens, frequency penalty 0.3), the Python tasks as clover's defaults;
/// the optional fields are in the body only when set, and each response records them.
#[test]
fn sampling_is_per_task_and_optional_fields_are_sent_when_set() {
    let (server, bodies) = recorded_bodies("ok");
    let url = server.url();
    let input = jsonl(&one_per_task());
    let (rs, stderr, code) = generate(&openai_args(&url, &[]), &input);
    assert_eq!(code, 0, "{stderr}");
    let sent = |task: &str, field: &str| bodies.lock().unwrap()[task].get(field).cloned();
    use serde_json::json;
    let want = [
        ("assertion_cloze", 0.2, 1.0, 200),
        ("targeted_test", 0.2, 1.0, 4000),
        ("coverage_test", 0.2, 1.0, 4000),
        ("cpp_unit_test", 0.1, 0.7, 4096),
    ];
    for (task, t, p, max) in want {
        assert_eq!(sent(task, "temperature"), Some(json!(t)), "{task}");
        assert_eq!(sent(task, "top_p"), Some(json!(p)), "{task}");
        assert_eq!(sent(task, "max_tokens"), Some(json!(max)), "{task}");
        for absent in ["presence_penalty", "stop", "seed"] {
            assert_eq!(sent(task, absent), None, "{task} {absent}");
        }
    }
    assert_eq!(sent("cpp_unit_test", "frequency_penalty"), Some(json!(0.3)));
    assert_eq!(sent("targeted_test", "frequency_penalty"), None);
    let cpp = &rs[3].generation;
    assert_eq!(
        (
            cpp.temperature,
            cpp.top_p,
            cpp.max_tokens,
            cpp.frequency_penalty
        ),
        (Some(0.1), Some(0.7), Some(4096), Some(0.3))
    );
    assert_eq!(
        (rs[0].generation.frequency_penalty, &rs[0].generation.stop),
        (None, &None)
    );

    // Flags: for every task, or for one task, the later flag winning.
    bodies.lock().unwrap().clear();
    let flags = [
        "--temperature",
        "0.5",
        "--temperature",
        "cpp_unit_test=0.05",
        "--top-p",
        "coverage_test=0.9",
        "--frequency-penalty",
        "targeted_test=0.4",
        "--presence-penalty",
        "0.1",
        "--stop",
        "```",
        "--stop",
        "END",
        "--seed",
        "3",
    ];
    let (rs, stderr, code) = generate(&openai_args(&url, &flags), &input);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(sent("assertion_cloze", "temperature"), Some(json!(0.5)));
    assert_eq!(sent("cpp_unit_test", "temperature"), Some(json!(0.05)));
    assert_eq!(sent("coverage_test", "top_p"), Some(json!(0.9)));
    assert_eq!(sent("cpp_unit_test", "top_p"), Some(json!(0.7)));
    assert_eq!(sent("targeted_test", "frequency_penalty"), Some(json!(0.4)));
    assert_eq!(sent("cpp_unit_test", "frequency_penalty"), Some(json!(0.3)));
    assert_eq!(sent("assertion_cloze", "frequency_penalty"), None);
    for task in ["assertion_cloze", "cpp_unit_test"] {
        assert_eq!(sent(task, "presence_penalty"), Some(json!(0.1)), "{task}");
        assert_eq!(sent(task, "stop"), Some(json!(["```", "END"])), "{task}");
        assert_eq!(sent(task, "seed"), Some(json!(3)), "{task}");
    }
    let g = &rs[1].generation;
    assert_eq!(
        (g.frequency_penalty, g.presence_penalty, g.seed),
        (Some(0.4), Some(0.1), Some(3))
    );
    assert_eq!(g.stop, Some(vec!["```".to_string(), "END".to_string()]));

    for (bad, want) in [
        (&["--temperature", "nosuch=1"][..], "unknown task `nosuch`"),
        (&["--top-p", "1.5"][..], "`1.5` is not a number from 0 to 1"),
        (&["--frequency-penalty", "x"][..], "--frequency-penalty `x`"),
        (&["--stop", ""][..], "--stop needs a non-empty sequence"),
    ] {
        // No input: a usage error exits before reading it.
        let (_, stderr, code) = generate(&openai_args(&url, bad), "");
        assert_eq!(code, 2, "{bad:?}: {stderr}");
        assert!(stderr.contains(want), "{bad:?}: {stderr}");
    }
}

/// An instance whose prompt and its task's answer reserve (max tokens) exceed --max-context
/// is not sent: its response is empty, holds no error, and says why; the others are asked.
#[test]
fn instances_over_the_max_context_are_not_sent() {
    let (server, bodies) = recorded_bodies("ok");
    let url = server.url();
    let mut fits = instance("fits", Task::AssertionCloze, "fits", "ref");
    fits.prompt_tokens = 800; // 800 + 200 = 1000
    let mut over = instance("over", Task::AssertionCloze, "over", "ref");
    over.prompt_tokens = 801;
    let mut cpp = instance("cpp", Task::CppUnitTest, "cpp", "ref");
    cpp.prompt_tokens = 1; // 1 + 4096 > 1000
    let input = jsonl(&[fits, over, cpp]);
    let (rs, stderr, code) = generate(&openai_args(&url, &["--max-context", "1000"]), &input);
    assert_eq!(code, 0, "a model not asked is no failure: {stderr}");
    assert!(stderr.contains("2 instance(s) not sent"), "{stderr}");
    assert_eq!(server.requests(), 1);
    assert!(bodies.lock().unwrap().contains_key("fits"));
    assert_eq!(
        (rs[0].text.as_str(), rs[0].generation.skipped.as_deref()),
        ("ok", None)
    );
    for r in &rs[1..] {
        assert_eq!(r.text, "", "{}", r.id);
        assert_eq!(r.error, None, "{}", r.id);
        assert_eq!(r.generation.skipped.as_deref(), Some("over_max_context"));
        assert_eq!(r.generation.attempts, 0);
    }
    assert!(rs.iter().all(|r| r.generation.max_context == Some(1000)));

    // The oracle obeys the window too (its reserve is the default plan's), so a pipeline can
    // be checked end to end without a server.
    let (rs, _, code) = generate(&["--model", "oracle", "--max-context", "1000"], &input);
    assert_eq!(code, 0);
    let skipped: Vec<bool> = rs.iter().map(|r| r.generation.skipped.is_some()).collect();
    assert_eq!(skipped, [false, true, true]);
    assert_eq!(rs[0].text, "ref");
}

/// A closed stderr (its reader gone) is no reason to stop: the responses on stdout and the
/// exit code (3, for the bad input line) are those of a run whose stderr is read.
/// `eprintln!` panicked there, exit 101.
#[test]
fn a_closed_stderr_changes_neither_the_responses_nor_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let instances: Vec<Instance> = (0..3)
        .map(|k| {
            instance(
                &format!("pyfix/t.py::test_{k}#targeted_test#full@po"),
                Task::TargetedTest,
                "p",
                &format!("def test_{k}():\n    assert {k} == {k}\n"),
            )
        })
        .collect();
    let input = dir.path().join("instances.jsonl");
    std::fs::write(&input, jsonl(&instances) + "{not json\n").unwrap();
    let args = ["--model", "oracle", input.to_str().unwrap()];
    let read = Command::new(env!("CARGO_BIN_EXE_clover-generate"))
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&read.stderr);
    assert_eq!(read.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("malformed JSON"), "{stderr}");
    let closed = Command::new(env!("CARGO_BIN_EXE_clover-generate"))
        .args(args)
        .stderr(clover_testkit::closed_pipe())
        .output()
        .unwrap();
    assert_eq!(closed.status.code(), Some(3));
    assert_eq!(closed.stdout, read.stdout);
    assert_eq!(read_responses(&closed.stdout).len(), 3);
}
