//! The stage loop: instances in, responses out, in input order, with bounded concurrency.

use std::collections::BTreeMap;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

use clover_protocol::{
    Generation, Instance, RecordKind, Response, StageIo, Task, SCHEMA_VERSION,
    SKIPPED_OVER_MAX_CONTEXT,
};

use crate::model::{Model, SamplingPlan};

/// How many responses must fail, the first of a run and every one of them, in a way that
/// asking again would not fix ([`crate::AnswerError::would_fail_again`]) before the run
/// stops. More than one, so one prompt the server rejects (too long, say) does not end a run;
/// few, so a wrong URL, model name or key costs seconds, not a run's worth of requests.
pub const STOP_AFTER_FAILURES: u64 = 4;

/// Why a run stopped before answering its input.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error(
        "the first {count} requests all failed and any other would fail the same way, so the run stopped: {first}; \
         check --base-url, --model-name and the API key, then rerun with --resume (the errors written are retried)"
    )]
    ServerUnusable { count: u64, first: String },
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub written: u64,
    pub errors: u64,
    /// Instances whose response an earlier run (`--resume`) already wrote.
    pub skipped: u64,
    /// Responses written without asking, as their instance is over the maximum context.
    pub over_max_context: u64,
}

/// A model's maximum context (`--max-context`). CLOVER evaluates each model only up to its own
/// maximum length (r_maxLen), so an instance whose prompt and answer do not both fit is not
/// sent: its response has an empty text, no error and `generation.skipped` =
/// [`SKIPPED_OVER_MAX_CONTEXT`], and the later stages leave it out of every table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaxContext {
    pub tokens: u32,
    /// The tokens kept for the answer, per task: the plan's max new tokens, which a server
    /// counts against the window with the prompt.
    pub reserve: BTreeMap<Task, u32>,
}

impl MaxContext {
    /// A window of `tokens` with the answer reserves of `plan`.
    pub fn new(tokens: u32, plan: &SamplingPlan) -> Self {
        MaxContext {
            tokens,
            reserve: plan.tasks.iter().map(|(t, s)| (*t, s.max_tokens)).collect(),
        }
    }

    /// Whether `instance` fits. Its `prompt_tokens` are pack-context's count, with clover's
    /// tokenizer: a model whose tokenizer counts more should be given a smaller window.
    pub fn fits(&self, instance: &Instance) -> bool {
        let reserve = self.reserve.get(&instance.task).copied().unwrap_or(0);
        u64::from(instance.prompt_tokens) + u64::from(reserve) <= u64::from(self.tokens)
    }
}

/// What a response to a `task` instance records of the run's settings (the model's, and the
/// maximum context); a resumed run must have the same.
pub fn settings(model: &Model, max_context: Option<&MaxContext>, task: Task) -> Generation {
    Generation {
        max_context: max_context.map(|m| m.tokens),
        ..model.generation(task)
    }
}

/// The response id of `instance` answered by `model`: `<instance id>@<model>`.
pub fn response_id(instance_id: &str, model: &str) -> String {
    format!("{instance_id}@{model}")
}

/// Asks `model` — unless `instance` is over `max_context` — and wraps the answer, or the
/// reason there is none, in a [`Response`]; the second value says whether the failure would
/// repeat for any instance.
pub fn respond(
    model: &Model,
    name: &str,
    max_context: Option<&MaxContext>,
    instance: &Instance,
) -> (Response, bool) {
    let mut generation = settings(model, max_context, instance.task);
    let started = Instant::now();
    let answer = if max_context.is_some_and(|m| !m.fits(instance)) {
        generation.skipped = Some(SKIPPED_OVER_MAX_CONTEXT.into());
        Ok(String::new())
    } else {
        model.answer(instance, &mut generation)
    };
    // Only a call is timed: the oracle and the baselines answer at once, and their output
    // stays byte for byte the same from run to run.
    if matches!(model, Model::OpenAi { .. } | Model::Command(_)) && generation.skipped.is_none() {
        generation.duration_secs = started.elapsed().as_secs_f64();
    }
    let (text, error, fatal) = match answer {
        Ok(text) => (text, None, false),
        Err(e) => (String::new(), Some(e.to_string()), e.would_fail_again()),
    };
    let response = Response {
        kind: RecordKind::Response,
        schema_version: SCHEMA_VERSION,
        id: response_id(&instance.id, name),
        instance_id: instance.id.clone(),
        model: name.to_string(),
        task: instance.task,
        setting: instance.setting.clone(),
        repo: instance.repo.clone(),
        text,
        error,
        generation,
        exec: instance.exec.clone(),
        scoring: instance.scoring.clone(),
    };
    (response, fatal)
}

/// Answers every instance of `io`'s input with `concurrency` workers and writes the responses
/// in input order. At most `4 × concurrency` instances are in flight or waiting to be written,
/// so memory stays bounded however long one request takes.
///
/// When the first [`STOP_AFTER_FAILURES`] responses all failed in a way any request would
/// ([`crate::AnswerError::would_fail_again`]), no further instance is asked: what is written
/// stays and the run ends with [`GenerateError::ServerUnusable`].
pub fn generate(
    io: &mut StageIo,
    model: &Model,
    name: &str,
    max_context: Option<&MaxContext>,
    concurrency: usize,
) -> anyhow::Result<Summary> {
    let concurrency = concurrency.max(1);
    let window = (concurrency * 4) as u64;
    // Reads run ahead of the answers by the window: progress is the responses written.
    io.progress_on_writes();
    let mut summary = Summary::default();
    std::thread::scope(|scope| {
        let (job_tx, job_rx) = mpsc::sync_channel::<(u64, Instance)>(window as usize);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (done_tx, done_rx) = mpsc::channel::<(u64, (Response, bool))>();
        for _ in 0..concurrency {
            let job_rx = Arc::clone(&job_rx);
            let done_tx = done_tx.clone();
            scope.spawn(move || loop {
                let job = job_rx.lock().expect("no worker panics").recv();
                let Ok((seq, instance)) = job else { break };
                if done_tx
                    .send((seq, respond(model, name, max_context, &instance)))
                    .is_err()
                {
                    break;
                }
            });
        }
        drop(done_tx);
        let mut job_tx = Some(job_tx);
        let (mut sent, mut written) = (0u64, 0u64);
        let mut pending: BTreeMap<u64, (Response, bool)> = BTreeMap::new();
        let mut fatal_from_start = 0u64;
        loop {
            while job_tx.is_some() && sent - written < window {
                match io.next_record::<Instance>()? {
                    None => job_tx = None,
                    Some((_, instance)) => {
                        if io.is_done(&response_id(&instance.id, name)) {
                            summary.skipped += 1;
                            continue;
                        }
                        if let Some(tx) = &job_tx {
                            tx.send((sent, instance))?;
                        }
                        sent += 1;
                    }
                }
            }
            if job_tx.is_none() && written == sent {
                break;
            }
            let (seq, response) = done_rx.recv()?;
            pending.insert(seq, response);
            while let Some((response, fatal)) = pending.remove(&written) {
                if response.error.is_some() {
                    summary.errors += 1;
                }
                summary.over_max_context += u64::from(response.generation.skipped.is_some());
                io.write(&response)?;
                if fatal && fatal_from_start == written {
                    fatal_from_start += 1;
                    if fatal_from_start == STOP_AFTER_FAILURES {
                        return Err(GenerateError::ServerUnusable {
                            count: STOP_AFTER_FAILURES,
                            first: response.error.unwrap_or_default(),
                        }
                        .into());
                    }
                }
                written += 1;
                summary.written += 1;
            }
        }
        anyhow::Ok(())
    })?;
    Ok(summary)
}
