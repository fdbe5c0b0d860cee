//! A blocking client for OpenAI-compatible chat completions (`POST {base}/chat/completions`).
//!
//! It retries what a server means to be retried — 429 and 5xx, honouring `Retry-After` — and
//! transport failures (timeouts, a dropped connection), with exponential backoff. A 4xx other
//! than 429 and a 2xx whose body is not a chat completion are final: asking again would get
//! the same answer. So is a server that refuses the connection or whose host does not resolve
//! before this client ever reached it: that is a wrong `--base-url` or a server not started,
//! and minutes of backoff would not change it ([`ChatError::would_fail_again`]). Once the
//! server has answered, a refused connection is a restart and is retried like a timeout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clover_protocol::{Message, TokenUsage};
use serde_json::{json, Value};

/// The longest wait a `Retry-After` header can impose; a server asking for more is answered
/// with an error rather than a stalled run.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Where and how to reach a chat-completions endpoint.
#[derive(Debug, Clone)]
pub struct ChatConfig {
    /// The API root, e.g. `http://127.0.0.1:8000/v1`; `/chat/completions` is appended unless
    /// the URL already ends with it.
    pub base_url: String,
    /// The `model` field of each request.
    pub model_name: String,
    /// Sent as `Authorization: Bearer KEY` when set.
    pub api_key: Option<String>,
    /// The whole of one attempt: connect, send, wait, read.
    pub timeout: Duration,
    /// Attempts after the first.
    pub max_retries: u32,
    /// The wait before the first retry; it doubles with each further retry.
    pub backoff: Duration,
    /// The longest computed backoff (a `Retry-After` may ask for more, up to 300 s).
    pub max_backoff: Duration,
}

/// Sampling parameters of one request. The optional ones are sent only when set (`stop` when
/// not empty): a server that does not know a field may refuse the request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sampling {
    pub temperature: f64,
    pub top_p: f64,
    pub max_tokens: u32,
    /// Sent as `seed` when set (servers that honour it sample reproducibly).
    pub seed: Option<u64>,
    pub frequency_penalty: Option<f64>,
    pub presence_penalty: Option<f64>,
    pub stop: Vec<String>,
}

/// A chat completion and what the server said about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The first choice's message content.
    pub text: String,
    pub finish_reason: Option<String>,
    pub usage: Option<TokenUsage>,
    /// Requests sent, retries included.
    pub attempts: u32,
    pub http_status: u16,
}

/// Why a chat completion could not be had.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChatError {
    #[error("server answered HTTP {status} after {attempts} attempt(s): {body}")]
    Status {
        status: u16,
        attempts: u32,
        body: String,
    },
    #[error("request failed after {attempts} attempt(s): {message}")]
    Transport { attempts: u32, message: String },
    #[error("cannot reach the server at {url}: {message}")]
    Unreachable {
        url: String,
        attempts: u32,
        message: String,
    },
    #[error("malformed response from the server: {message}")]
    Malformed { message: String },
    #[error(
        "server asked to wait {secs} s before retrying (Retry-After); more than the 300 s allowed"
    )]
    RetryAfterTooLong { secs: u64 },
}

impl ChatError {
    /// Whether asking again, for this or any other prompt, would fail the same way: a 4xx
    /// other than 408 and 429 (a wrong model name, path or key, a request the server rejects)
    /// or a server never reached. A run whose first answers all fail so stops early.
    pub fn would_fail_again(&self) -> bool {
        match self {
            ChatError::Status { status, .. } => {
                (400..500).contains(status) && *status != 408 && *status != 429
            }
            ChatError::Unreachable { .. } => true,
            _ => false,
        }
    }

    /// Requests sent before giving up.
    pub fn attempts(&self) -> u32 {
        match self {
            ChatError::Status { attempts, .. }
            | ChatError::Transport { attempts, .. }
            | ChatError::Unreachable { attempts, .. } => *attempts,
            ChatError::Malformed { .. } | ChatError::RetryAfterTooLong { .. } => 1,
        }
    }

    /// The HTTP status of the last answer, when a server answered.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            ChatError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// One endpoint, shared by every worker thread (the agent pools connections).
#[derive(Debug, Clone)]
pub struct ChatClient {
    agent: ureq::Agent,
    url: String,
    config: ChatConfig,
    /// Whether any request of this client got an HTTP answer: after that, a refused
    /// connection is a restarting server and worth a retry.
    reached: Arc<AtomicBool>,
}

enum Attempt {
    Done(Completion),
    Retry {
        error: ChatError,
        after: Option<Duration>,
    },
    Fail(ChatError),
}

impl ChatClient {
    pub fn new(config: ChatConfig) -> Self {
        let base = config.base_url.trim_end_matches('/');
        let url = if base.ends_with("/chat/completions") {
            base.to_string()
        } else {
            format!("{base}/chat/completions")
        };
        let mut builder = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .user_agent(concat!("clover/", env!("CARGO_PKG_VERSION")));
        // A proxy from the environment must never see loopback traffic: a local server is
        // reached directly, as every other loopback client does.
        if is_loopback(&url) {
            builder = builder.proxy(None);
        }
        ChatClient {
            agent: builder.build().into(),
            url,
            config,
            reached: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The full endpoint URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What this client was configured with.
    pub fn config(&self) -> &ChatConfig {
        &self.config
    }

    /// The assistant's answer to `messages`, after as many retries as the config allows.
    pub fn complete(
        &self,
        messages: &[Message],
        sampling: &Sampling,
    ) -> Result<Completion, ChatError> {
        let mut body = json!({
            "model": self.config.model_name,
            "messages": messages
                .iter()
                .map(|m| json!({"role": m.role, "content": m.content}))
                .collect::<Vec<_>>(),
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        });
        if let Some(seed) = sampling.seed {
            body["seed"] = json!(seed);
        }
        if let Some(p) = sampling.frequency_penalty {
            body["frequency_penalty"] = json!(p);
        }
        if let Some(p) = sampling.presence_penalty {
            body["presence_penalty"] = json!(p);
        }
        if !sampling.stop.is_empty() {
            body["stop"] = json!(sampling.stop);
        }
        let body = body.to_string();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            match self.attempt(&body, attempt) {
                Attempt::Done(completion) => return Ok(completion),
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry { error, after } => {
                    if attempt > self.config.max_retries {
                        return Err(error);
                    }
                    let wait = match after {
                        Some(d) if d > MAX_RETRY_AFTER => {
                            return Err(ChatError::RetryAfterTooLong { secs: d.as_secs() })
                        }
                        Some(d) => d.max(self.backoff(attempt)),
                        None => self.backoff(attempt),
                    };
                    std::thread::sleep(wait);
                }
            }
        }
    }

    /// The backoff before retry number `attempt` (1-based): base · 2^(attempt−1), capped.
    fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32 << (attempt - 1).min(16);
        self.config
            .backoff
            .saturating_mul(factor)
            .min(self.config.max_backoff)
    }

    /// Whether `e` says the server cannot be reached at all (refused, no such host, a URL
    /// that is not one) while no request of this client ever reached it.
    fn never_reached(&self, e: &ureq::Error) -> bool {
        let unreachable = match e {
            ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => true,
            ureq::Error::BadUri(_) | ureq::Error::Http(_) => true,
            ureq::Error::Io(io) => matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable
            ),
            _ => false,
        };
        unreachable && !self.reached.load(Ordering::Relaxed)
    }

    fn attempt(&self, body: &str, attempts: u32) -> Attempt {
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json");
        if let Some(key) = &self.config.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let mut response = match request.send(body) {
            Ok(r) => r,
            Err(e) if self.never_reached(&e) => {
                return Attempt::Fail(ChatError::Unreachable {
                    url: self.url.clone(),
                    attempts,
                    message: e.to_string(),
                })
            }
            Err(e) => {
                return Attempt::Retry {
                    error: ChatError::Transport {
                        attempts,
                        message: e.to_string(),
                    },
                    after: None,
                }
            }
        };
        self.reached.store(true, Ordering::Relaxed);
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let text = match response.body_mut().read_to_string() {
            Ok(t) => t,
            Err(e) => {
                return Attempt::Retry {
                    error: ChatError::Transport {
                        attempts,
                        message: format!("reading the response body: {e}"),
                    },
                    after: None,
                }
            }
        };
        if (200..300).contains(&status) {
            return match parse_completion(&text) {
                Ok(parsed) => Attempt::Done(Completion {
                    text: parsed.text,
                    finish_reason: parsed.finish_reason,
                    usage: parsed.usage,
                    attempts,
                    http_status: status,
                }),
                Err(message) => Attempt::Fail(ChatError::Malformed { message }),
            };
        }
        let error = ChatError::Status {
            status,
            attempts,
            body: snippet(&text),
        };
        if status == 429 || status >= 500 {
            Attempt::Retry {
                error,
                after: retry_after,
            }
        } else {
            Attempt::Fail(error)
        }
    }
}

/// `Retry-After` in seconds (integer or decimal). An HTTP date is ignored: the computed backoff
/// applies instead.
fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e6)))
}

/// What a chat-completions body says: the first choice's message content, why it ended, and
/// the token counts.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCompletion {
    pub text: String,
    pub finish_reason: Option<String>,
    pub usage: Option<TokenUsage>,
}

/// Reads a chat-completions body; `finish_reason` and `usage` are optional, as some servers
/// leave them out.
pub fn parse_completion(body: &str) -> Result<ParsedCompletion, String> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| format!("body is not JSON ({e}): {}", snippet(body)))?;
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| format!("no `choices[0]` in the body: {}", snippet(body)))?;
    let text = match choice.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(s)) => s.clone(),
        _ => {
            return Err(format!(
                "no string `choices[0].message.content` in the body: {}",
                snippet(body)
            ))
        }
    };
    let usage = v.get("usage").and_then(|u| {
        Some(TokenUsage {
            prompt_tokens: u.get("prompt_tokens")?.as_u64()?,
            completion_tokens: u.get("completion_tokens")?.as_u64()?,
        })
    });
    Ok(ParsedCompletion {
        text,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        usage,
    })
}

/// The start of a body, for error messages.
fn snippet(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}

fn is_loopback(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_completions_and_rejects_the_rest() {
        let ok = r#"{"choices":[{"message":{"role":"assistant","content":"hi"}}]}"#;
        let parsed = parse_completion(ok).unwrap();
        assert_eq!(
            (parsed.text.as_str(), parsed.finish_reason, parsed.usage),
            ("hi", None, None)
        );
        let full = r#"{"choices":[{"message":{"content":"x"},"finish_reason":"length"}],
            "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#;
        let parsed = parse_completion(full).unwrap();
        assert_eq!(parsed.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            parsed.usage,
            Some(TokenUsage {
                prompt_tokens: 12,
                completion_tokens: 3
            })
        );
        assert!(parse_completion("{not json")
            .unwrap_err()
            .contains("not JSON"));
        assert!(parse_completion(r#"{"choices":[]}"#).is_err());
        assert!(parse_completion(r#"{"choices":[{"message":{"content":null}}]}"#).is_err());
    }

    #[test]
    fn retry_after_and_loopback() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:9/v1"));
        assert!(!is_loopback("https://api.example.com/v1"));
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let client = ChatClient::new(ChatConfig {
            base_url: "http://127.0.0.1:9/v1/".into(),
            model_name: "m".into(),
            api_key: None,
            timeout: Duration::from_secs(1),
            max_retries: 3,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
        });
        assert_eq!(client.url(), "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(client.backoff(1), Duration::from_millis(100));
        assert_eq!(client.backoff(2), Duration::from_millis(200));
        assert_eq!(client.backoff(3), Duration::from_millis(350));
    }
}
