//! Runs one command in the sandbox, with limits, the way a project that embeds the sandbox
//! would, and prints what happened as one JSON-like line per fact.
//!
//! ```text
//! run_command [--wall SECS] [--memory MIB] [--collect FILE]... REPO -- COMMAND [ARG]...
//! ```
//!
//! REPO is seen read-only at its own path (a run's writes go to a throwaway layer), COMMAND
//! runs there as an unprivileged user with no network. Needs root on the host. Exits 0 when
//! the run was carried out, whatever the command did; 2 on bad arguments; 1 when the sandbox
//! could not run it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clover_sandbox::{Collected, Limits, RunSpec, Sandbox};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut limits = Limits::default();
    let mut collect = Vec::new();
    let mut repo = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--wall" | "--memory" | "--collect" => {
                let Some(v) = args.next() else {
                    return usage(&format!("{a} needs a value"));
                };
                match (a.as_str(), v.parse::<u64>()) {
                    ("--wall", Ok(s)) => limits.wall = Duration::from_secs(s),
                    ("--memory", Ok(m)) => limits.memory_bytes = m << 20,
                    ("--collect", _) => collect.push(PathBuf::from(v)),
                    _ => return usage(&format!("{a} takes a whole number, not {v:?}")),
                }
            }
            "--" => break,
            _ if repo.is_none() => repo = Some(PathBuf::from(a)),
            _ => return usage(&format!("unexpected argument {a:?} before --")),
        }
    }
    let command: Vec<String> = args.collect();
    let (Some(repo), false) = (repo, command.is_empty()) else {
        return usage("give a repository and, after --, a command");
    };
    // A relative path means what it means in the shell that started us.
    let repo = std::path::absolute(&repo).unwrap_or(repo);
    let mut spec = RunSpec::new(repo, command);
    spec.limits = limits;
    spec.collect = collect;
    let out = match Sandbox::new().and_then(|sb| sb.run(&spec)) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("run_command: {e}");
            return ExitCode::from(1);
        }
    };
    println!("exit: {:?}", out.exit);
    println!("limit_hit: {:?}", out.limit_hit);
    println!("duration_ms: {}", out.duration.as_millis());
    println!("cpu_ms: {}", out.cpu_time.as_millis());
    println!("stdout: {:?}", out.stdout.text());
    println!("stderr: {:?}", out.stderr.text());
    for f in &out.files {
        let what = match &f.content {
            Collected::Read { bytes, .. } => format!("{:?}", String::from_utf8_lossy(bytes)),
            Collected::Missing => "missing".into(),
            Collected::Refused(why) => format!("refused ({why})"),
        };
        println!("file {}: {what}", f.path.display());
    }
    ExitCode::SUCCESS
}

fn usage(why: &str) -> ExitCode {
    eprintln!(
        "run_command: {why}\nusage: run_command [--wall SECS] [--memory MIB] [--collect FILE]... \
         REPO -- COMMAND [ARG]..."
    );
    ExitCode::from(2)
}
