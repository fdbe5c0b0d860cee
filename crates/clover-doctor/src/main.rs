//! `clover-doctor` (`clover doctor`): see the crate's documentation.

use std::process::ExitCode;

use clap::Parser;
use clover_doctor::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let opts = clover_doctor::Options {
        repo: cli.repo.clone(),
        python: cli.python.clone(),
        cxx: cli.cxx.clone(),
    };
    if cli.fetch_tokenizer {
        let python = opts
            .python
            .clone()
            .or_else(|| std::env::var_os("CLOVER_PYTHON").map(Into::into))
            .unwrap_or_else(|| "python3".into());
        let fetched = clover_doctor::default_tokenizer_dir()
            .and_then(|dir| clover_doctor::fetch_tokenizer(&python, &dir));
        match fetched {
            Ok(path) => {
                clover_protocol::diag!("tokenizer model: {} (sha256 checked)", path.display())
            }
            Err(e) => {
                clover_protocol::diag!("clover-doctor: error: {e:#}");
                return ExitCode::from(2);
            }
        }
    }
    match clover_doctor::checks(&opts) {
        Ok((checks, language)) => {
            // A closed stdout is no reason to fail: the exit status still says it.
            let _ = std::io::Write::write_all(
                &mut std::io::stdout(),
                clover_doctor::render(&checks, language).as_bytes(),
            );
            if clover_doctor::can_start(&checks, language) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            clover_protocol::diag!("clover-doctor: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
