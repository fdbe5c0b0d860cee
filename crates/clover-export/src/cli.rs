//! The command line of `clover-export`, here rather than in `main.rs` so the `clover` front
//! command can build its completions and man pages from it; `main.rs` parses it and does the
//! export.

use std::path::PathBuf;

use clap::Parser;
use clover_manifest::RepoArgs;

/// Writes JSON Lines records of one stage as a Hugging Face dataset folder: a file per config
/// (task or language) and split, and a README.md card declaring every column's type, the
/// configs, and each source repository's license and origin.
#[derive(Debug, Parser)]
#[command(name = "clover-export", version)]
pub struct Cli {
    /// JSON Lines files of one record kind (problems, calibrated problems, instances,
    /// responses, run results, score rows or pack-context's --format sft examples)
    #[arg(required = true, value_name = "FILE", value_parser = clover_protocol::resolved_path)]
    pub inputs: Vec<PathBuf>,
    /// The dataset folder to write; it must not exist or be empty
    #[arg(long, short = 'o', value_name = "DIR", value_parser = clover_protocol::resolved_path)]
    pub out: PathBuf,
    /// The dataset's name in the card (default: the folder's name)
    #[arg(long)]
    pub name: Option<String>,
    /// The split of records that carry none (fine-tuning examples carry their own)
    #[arg(long, default_value = "test")]
    pub split: String,
    /// The repositories, for their license and origin in the card (else listed as unknown)
    #[command(flatten)]
    pub repos: RepoArgs,
}
