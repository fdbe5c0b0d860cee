//! The stage loop: instances in, responses out, in input order, with bounded concurrency.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::{mpsc, Arc, Mutex};

use clover_protocol::{Instance, RecordKind, Response, StageIo, SCHEMA_VERSION};

use crate::model::Model;

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub written: u64,
    pub errors: u64,
    /// Instances whose response an earlier run (`--resume`) already wrote.
    pub skipped: u64,
}

/// The response id of `instance` answered by `model`: `<instance id>@<model>`.
pub fn response_id(instance_id: &str, model: &str) -> String {
    format!("{instance_id}@{model}")
}

/// Asks `model` and wraps the answer, or the reason there is none, in a [`Response`].
pub fn respond(model: &Model, name: &str, instance: &Instance) -> Response {
    let (text, error) = match model.answer(instance) {
        Ok(text) => (text, None),
        Err(e) => (String::new(), Some(e.to_string())),
    };
    Response {
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
        generation: Default::default(),
        exec: instance.exec.clone(),
        scoring: instance.scoring.clone(),
    }
}

/// Answers every instance of `io`'s input with `concurrency` workers and writes the responses
/// in input order. At most `4 × concurrency` instances are in flight or waiting to be written,
/// so memory stays bounded however long one request takes.
pub fn generate(
    io: &mut StageIo,
    model: &Model,
    name: &str,
    concurrency: usize,
) -> anyhow::Result<Summary> {
    let concurrency = concurrency.max(1);
    let window = (concurrency * 4) as u64;
    let progress = std::io::stderr().is_terminal();
    let mut summary = Summary::default();
    std::thread::scope(|scope| {
        let (job_tx, job_rx) = mpsc::sync_channel::<(u64, Instance)>(window as usize);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (done_tx, done_rx) = mpsc::channel::<(u64, Response)>();
        for _ in 0..concurrency {
            let job_rx = Arc::clone(&job_rx);
            let done_tx = done_tx.clone();
            scope.spawn(move || loop {
                let job = job_rx.lock().expect("no worker panics").recv();
                let Ok((seq, instance)) = job else { break };
                if done_tx
                    .send((seq, respond(model, name, &instance)))
                    .is_err()
                {
                    break;
                }
            });
        }
        drop(done_tx);
        let mut job_tx = Some(job_tx);
        let (mut sent, mut written) = (0u64, 0u64);
        let mut pending: BTreeMap<u64, Response> = BTreeMap::new();
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
            while let Some(response) = pending.remove(&written) {
                if response.error.is_some() {
                    summary.errors += 1;
                }
                io.writer.write(&response)?;
                written += 1;
                summary.written += 1;
                if progress {
                    eprint!(
                        "\rclover-generate: {} responses ({} errors)",
                        summary.written, summary.errors
                    );
                }
            }
        }
        if progress {
            eprintln!();
        }
        anyhow::Ok(())
    })?;
    Ok(summary)
}
