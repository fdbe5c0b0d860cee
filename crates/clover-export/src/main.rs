//! The `clover-export` binary: records in, a Hugging Face dataset folder out.

use std::process::ExitCode;

use clap::Parser;
use clover_export::cli::Cli;
use clover_export::{export, ExportError, ExportOptions, TOOL};
use clover_protocol::{diag, exit, finish_main, Usage};

fn main() -> ExitCode {
    finish_main(TOOL, run(Cli::parse()))
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    if !cli
        .split
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        || cli.split.is_empty()
    {
        return Err(Usage(format!(
            "invalid split name `{}`: use letters, digits and `_` (train, validation, test)",
            cli.split
        ))
        .into());
    }
    let repos = if cli.repos.manifest.is_none() && cli.repos.repo.is_empty() {
        Default::default()
    } else {
        cli.repos.resolve().map_err(Usage::from_error)?
    };
    let name = cli.name.clone().unwrap_or_else(|| {
        cli.out
            .file_name()
            .map_or("clover".into(), |n| n.to_string_lossy().into_owned())
    });
    let opts = ExportOptions {
        inputs: cli.inputs,
        out: cli.out,
        name,
        split: cli.split,
        repos,
    };
    match export(&opts) {
        Ok(done) => {
            let configs: Vec<String> = done
                .configs
                .iter()
                .map(|c| {
                    let splits: Vec<String> =
                        c.splits.iter().map(|(s, n)| format!("{s} {n}")).collect();
                    format!("{} ({})", c.name, splits.join(", "))
                })
                .collect();
            diag!(
                "{TOOL}: {} {} record(s) from {} repositor{} in {}: {}",
                done.records(),
                done.kind,
                done.sources.len(),
                if done.sources.len() == 1 { "y" } else { "ies" },
                opts.out.display(),
                configs.join("; ")
            );
            Ok(exit::OK)
        }
        Err(
            e @ (ExportError::OutNotEmpty(_) | ExportError::Empty | ExportError::Unsupported(_)),
        ) => Err(Usage(e.to_string()).into()),
        // An export is whole or not at all: the first bad record ends it, and the folder has
        // no card.
        Err(
            e @ (ExportError::Record { .. }
            | ExportError::MixedKinds { .. }
            | ExportError::Conflict { .. }),
        ) => {
            diag!("{TOOL}: error: {e}");
            Ok(exit::STOPPED)
        }
        Err(e @ ExportError::Io { .. }) => Err(e.into()),
    }
}
