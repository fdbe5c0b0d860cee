//! A chat-completions server on 127.0.0.1 for tests of the OpenAI-compatible clients (generate's
//! adapter, score's judge): it reads each request and answers what the test's handler says.
//! Loopback only; it stops when dropped, or after 60 s at the latest.
//!
//! Faults a real server shows are one call away: [`ChatReply::error`] answers an HTTP error
//! status with an OpenAI-style error body (400 wrong model, 401 bad key, 404 wrong path, 429
//! rate limit, 500 crash), [`ChatReply::slow`] answers late, and [`refused_url`] is an API root
//! where nothing listens, so connections are refused.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// One request as the server read it.
#[derive(Debug)]
pub struct ChatRequest {
    /// The JSON body (`model`, `messages`, sampling).
    pub body: serde_json::Value,
    /// The key of an `Authorization: Bearer KEY` header.
    pub api_key: Option<String>,
}

impl ChatRequest {
    /// The text of message `i`.
    pub fn message(&self, i: usize) -> &str {
        self.body["messages"][i]["content"].as_str().unwrap_or("")
    }
}

/// What the server answers.
#[derive(Debug)]
pub struct ChatReply {
    pub status: u16,
    pub body: String,
    /// Extra header lines, each ending in `\r\n`.
    pub headers: String,
}

impl ChatReply {
    /// A 200 whose one choice says `content`.
    pub fn content(content: &str) -> ChatReply {
        let body = serde_json::json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]
        });
        ChatReply {
            status: 200,
            body: body.to_string(),
            headers: String::new(),
        }
    }

    /// A 200 whose one choice says `content`, with the `finish_reason` and `usage` a real
    /// server sends.
    pub fn finished(
        content: &str,
        finish_reason: &str,
        prompt_tokens: u64,
        completion_tokens: u64,
    ) -> ChatReply {
        let body = serde_json::json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}
        });
        ChatReply {
            status: 200,
            body: body.to_string(),
            headers: String::new(),
        }
    }

    /// Status `status` with `body` as it is.
    pub fn raw(status: u16, body: &str) -> ChatReply {
        ChatReply {
            status,
            body: body.to_string(),
            headers: String::new(),
        }
    }

    /// An HTTP error as OpenAI-compatible servers word it: 400 (a model the server does not
    /// serve), 401 (a missing or wrong key), 404 (a wrong path), 429 (rate limited, with
    /// `Retry-After: 0`), 500 and others (a crash).
    pub fn error(status: u16) -> ChatReply {
        let (kind, message) = match status {
            400 => ("invalid_request_error", "The model `x` does not exist"),
            401 => ("authentication_error", "Incorrect API key provided"),
            404 => ("not_found_error", "Not Found"),
            429 => ("rate_limit_error", "Rate limit reached"),
            _ => ("server_error", "Internal server error"),
        };
        let body = serde_json::json!({"error": {"message": message, "type": kind, "code": status}});
        ChatReply {
            headers: if status == 429 {
                "Retry-After: 0\r\n".into()
            } else {
                String::new()
            },
            ..ChatReply::raw(status, &body.to_string())
        }
    }

    /// `reply`, after `delay` (a slow model: the client's timeout may end the attempt first).
    pub fn slow(delay: Duration, reply: ChatReply) -> ChatReply {
        thread::sleep(delay);
        reply
    }
}

/// An API root on 127.0.0.1 where nothing listens: every connection is refused. (The port was
/// bound and closed again, so no other server of this machine holds it.)
pub fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

/// The running server. Each connection is served on a thread of its own, so a handler may
/// sleep (a slow model) without holding the others up.
#[derive(Debug)]
pub struct FakeChat {
    port: u16,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicUsize>,
}

impl FakeChat {
    pub fn start(handler: impl Fn(&ChatRequest) -> ChatReply + Send + Sync + 'static) -> FakeChat {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let port = listener.local_addr().expect("its address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&requests);
        let handler = Arc::new(move |request: &ChatRequest| {
            counter.fetch_add(1, Ordering::SeqCst);
            handler(request)
        });
        thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !s.load(Ordering::Relaxed) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let handler = Arc::clone(&handler);
                        thread::spawn(move || serve(stream, &*handler));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeChat {
            port,
            stop,
            requests,
        }
    }

    /// A server that answers every request with `reply()`.
    pub fn always(reply: impl Fn() -> ChatReply + Send + Sync + 'static) -> FakeChat {
        FakeChat::start(move |_| reply())
    }

    /// The API root to give a client: `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Requests read so far, whatever they were answered.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for FakeChat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(stream: TcpStream, handler: &dyn Fn(&ChatRequest) -> ChatReply) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let (mut length, mut api_key) = (0usize, None);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().expect("a Content-Length number");
        }
        if lower.starts_with("authorization:") {
            api_key = line.trim().rsplit(' ').next().map(str::to_string);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request = ChatRequest {
        body: serde_json::from_slice(&body).expect("a JSON request body"),
        api_key,
    };
    let reply = handler(&request);
    let reason = if reply.status == 200 { "OK" } else { "Error" };
    let response = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}\
         Connection: close\r\n\r\n{}",
        reply.status,
        reply.body.len(),
        reply.headers,
        reply.body
    );
    let mut stream = stream;
    let _ = stream.write_all(response.as_bytes());
}
