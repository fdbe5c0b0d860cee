//! `--resume` for responses: the output file is checked against this run's settings and its
//! errored responses are taken out, so they are asked again.
//!
//! Outputs are append-only JSON Lines, and the shared resume machinery
//! ([`clover_protocol::RecordWriter::create`]) keeps every whole line of `FILE.partial` (or
//! `FILE`) and skips its ids. So before it opens the file, the responses that ended in an error
//! are dropped from it: the kept lines are rewritten, whole and in their order, into
//! `FILE.partial` (through a rename, so an interruption leaves the old file or the new one,
//! never half of each), and the retried ids are appended after them. Each id is in the
//! finished file once.

use std::path::Path;

use clover_protocol::{partial_path, write_whole, Generation, Response};

use crate::model::Model;
use crate::run::{settings, MaxContext};

/// A response of the output file that another model or other settings wrote.
#[derive(Debug, thiserror::Error)]
#[error(
    "{file}:{line} (id {id}) was written with {field} {was} and this run has {now}; \
     --resume only adds to a file of the same settings: write to another file, or run with the settings it has"
)]
pub struct SettingsMismatch {
    pub file: String,
    pub line: u64,
    pub id: String,
    pub field: &'static str,
    pub was: String,
    pub now: String,
}

/// What resuming found in the output file.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ResumeFound {
    /// Responses kept as done.
    pub kept: u64,
    /// Of those, the ones that hold an error (`--no-retry-errors`).
    pub kept_errors: u64,
    /// Responses that ended in an error and were taken out to be asked again.
    pub retried: u64,
}

/// Checks the responses already in `output` (its partial file when there is one) against this
/// run — model `name` answered by `model` — and, with `retry_errors`, takes the ones that ended
/// in an error out. Call it before the output is opened for resuming. A missing output is an
/// empty one.
pub fn prepare_resume(
    output: &Path,
    model: &Model,
    name: &str,
    max_context: Option<&MaxContext>,
    retry_errors: bool,
) -> anyhow::Result<ResumeFound> {
    let partial = partial_path(output);
    let source = if partial.exists() {
        partial.clone()
    } else if output.is_file() {
        output.to_path_buf()
    } else {
        return Ok(ResumeFound::default());
    };
    let content = std::fs::read(&source)?;
    let mut found = ResumeFound::default();
    let mut keep = Vec::with_capacity(content.len());
    let mut rest = &content[..];
    let mut line_no = 0u64;
    while !rest.is_empty() {
        line_no += 1;
        // A half-written last line, or a line that is no response, stays as it is: the
        // shared resume repair reports and drops it.
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            keep.extend_from_slice(rest);
            break;
        };
        let line = &rest[..=end];
        rest = &rest[end + 1..];
        let Ok(response) = serde_json::from_slice::<Response>(line) else {
            keep.extend_from_slice(line);
            continue;
        };
        let retry = retry_errors && response.error.is_some();
        // A response about to be asked again need not match: fixing a wrong URL or model
        // name and resuming is how a failed run is repaired.
        if !retry {
            check_settings(&response, model, name, max_context).map_err(|(field, was, now)| {
                SettingsMismatch {
                    file: source.display().to_string(),
                    line: line_no,
                    id: response.id.clone(),
                    field,
                    was,
                    now,
                }
            })?;
        }
        if retry {
            found.retried += 1;
        } else {
            found.kept += 1;
            found.kept_errors += u64::from(response.error.is_some());
            keep.extend_from_slice(line);
        }
    }
    if found.retried > 0 {
        write_whole(&partial, &keep)?;
    }
    Ok(found)
}

/// The first setting in which `response` differs from what this run would write: the field's
/// name, its value there and its value now.
fn check_settings(
    response: &Response,
    model: &Model,
    name: &str,
    max_context: Option<&MaxContext>,
) -> Result<(), (&'static str, String, String)> {
    if response.model != name {
        return Err(("model", quote(&response.model), quote(name)));
    }
    let was = &response.generation;
    let now = settings(model, max_context, response.task);
    if was.adapter.is_empty() {
        return Err((
            "no record of its settings (an older clover)",
            String::new(),
            describe(&now),
        ));
    }
    let differ = |field, a: String, b: String| if a == b { Ok(()) } else { Err((field, a, b)) };
    differ("adapter", quote(&was.adapter), quote(&now.adapter))?;
    differ("model_name", opt(&was.model_name), opt(&now.model_name))?;
    differ("base_url", opt(&was.base_url), opt(&now.base_url))?;
    differ("temperature", opt(&was.temperature), opt(&now.temperature))?;
    differ("top_p", opt(&was.top_p), opt(&now.top_p))?;
    differ("max_tokens", opt(&was.max_tokens), opt(&now.max_tokens))?;
    differ("seed", opt(&was.seed), opt(&now.seed))?;
    differ(
        "frequency_penalty",
        opt(&was.frequency_penalty),
        opt(&now.frequency_penalty),
    )?;
    differ(
        "presence_penalty",
        opt(&was.presence_penalty),
        opt(&now.presence_penalty),
    )?;
    differ("stop", stops(&was.stop), stops(&now.stop))?;
    differ("max_context", opt(&was.max_context), opt(&now.max_context))
}

fn stops(v: &Option<Vec<String>>) -> String {
    match v {
        Some(v) => format!("{v:?}"),
        None => "none".into(),
    }
}

fn quote(s: &str) -> String {
    format!("`{s}`")
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    match v {
        Some(v) => format!("`{v}`"),
        None => "none".into(),
    }
}

/// This run's settings in a few words, for a file that does not say what made it.
fn describe(g: &Generation) -> String {
    match &g.model_name {
        Some(m) => format!("{} `{m}`", g.adapter),
        None => g.adapter.clone(),
    }
}
