//! `clover generate`: model adapters that turn task instances into responses.
//!
//! Each [`Instance`](clover_protocol::Instance) read is answered by one [`Model`] and written
//! as one [`Response`](clover_protocol::Response) with id `<instance id>@<model name>`:
//!
//! - [`Model::Oracle`] answers with the instance's `reference` (the ground truth): the
//!   benchmark's consistency check, which must score at or near 100%. The chunks of a C++
//!   source share the whole test file as their reference and their answers are appended into
//!   one file, so the oracle answers the first chunk with it and the others with nothing;
//! - [`Model::Baseline`] answers trivially ([`Baseline::CopyOperand`], [`Baseline::AssertTrue`])
//!   so a report shows that the metrics tell a real answer from a vacuous one;
//! - [`Model::OpenAi`] asks any OpenAI-compatible chat-completions server (vLLM, llama.cpp
//!   server, a hosted API) through [`ChatClient`] with per-task sampling ([`SamplingPlan`]):
//!   C++ as CPP-UT-Bench (temperature 0.1, top_p 0.7, 4,096 tokens, frequency penalty 0.3),
//!   the Python tasks temperature 0.2, top_p 1.0, 200 tokens for Task I and 4,000 otherwise,
//!   each overridable for all tasks or one; `frequency_penalty`, `presence_penalty`, `seed`
//!   and `stop` are sent only when set. Retries with exponential backoff on 429, 5xx and
//!   transport errors, honouring `Retry-After`;
//! - [`Model::Command`] pipes the plain prompt to a user's command and takes its stdout
//!   (with `CLOVER_INSTANCE_ID`, `CLOVER_TASK` and `CLOVER_SETTING` in its environment).
//!
//! A model that gives no answer still yields a response: `text` is empty and `error` says why,
//! so nothing is dropped. A failed call is the server's failure, not the model's: the binary
//! exits 3 when any response holds an error, and a run whose first [`STOP_AFTER_FAILURES`]
//! responses all failed in a way every request would (a 4xx other than 408/429, a server
//! never reached) stops there ([`GenerateError::ServerUnusable`]) instead of asking the rest.
//!
//! With a maximum context ([`MaxContext`], `--max-context`), an instance whose prompt tokens
//! plus its task's max tokens exceed it is not sent, by any model: its response has an empty
//! text, no error and `generation.skipped = "over_max_context"`; sandbox-run gives it outcome
//! `over_max_context` without running anything, and score leaves it out of every table and of
//! Δ, as CLOVER runs each model only up to its own maximum length.
//!
//! Responses come out in input order whatever the concurrency, so a run is reproducible byte
//! for byte with a deterministic model. `--resume` skips response ids already written and,
//! unless `--no-retry-errors`, first takes the responses that ended in an error out of the
//! file to ask them again ([`prepare_resume`]); it refuses a file that another model or other
//! settings wrote ([`SettingsMismatch`]). `--shard` splits by instance id (the chunks of one
//! C++ source by the id of their whole file, so they stay together).
//!
//! Each response records what produced it in `generation` ([`Model::generation`]): the
//! adapter, the model name as sent, the base URL, the sampling, seed, stop sequences and
//! maximum context, why an instance was not sent, the server's `finish_reason` and token
//! usage, the attempts, and the call's `duration_secs`. The response
//! id is `<instance id>@<model>`, where the model is `--label` or the full served name, `/`
//! and all: ids are compared whole, never split. Each response carries the instance's `exec`
//! and `scoring`, unchanged, on to the later stages.
//!
//! It deliberately does not look inside answers: extracting code and building the candidate
//! test is `clover_answer`'s job, done where the candidate is run (sandbox-run).

pub mod cli;
mod model;
mod openai;
mod resume;
mod run;

pub use model::{
    baseline_answer, oracle_answer, prompt_messages, task_name, AnswerError, Baseline,
    CommandModel, Model, SamplingPlan, TaskSampling,
};
pub use openai::{
    parse_completion, ChatClient, ChatConfig, ChatError, Completion, ParsedCompletion, Sampling,
};
pub use resume::{prepare_resume, ResumeFound, SettingsMismatch};
pub use run::{
    generate, respond, response_id, settings, GenerateError, MaxContext, Summary,
    STOP_AFTER_FAILURES,
};
