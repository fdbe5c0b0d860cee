//! A chat-completions server on 127.0.0.1 for tests of the OpenAI-compatible clients (generate's
//! adapter, score's judge): it reads each request and answers what the test's handler says.
//! Loopback only; it stops when dropped, or after 60 s at the latest.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
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

    /// Status `status` with `body` as it is.
    pub fn raw(status: u16, body: &str) -> ChatReply {
        ChatReply {
            status,
            body: body.to_string(),
            headers: String::new(),
        }
    }
}

/// The running server. Each connection is served on a thread of its own, so a handler may
/// sleep (a slow model) without holding the others up.
#[derive(Debug)]
pub struct FakeChat {
    port: u16,
    stop: Arc<AtomicBool>,
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
        let handler = Arc::new(handler);
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
        FakeChat { port, stop }
    }

    /// The API root to give a client: `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
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
