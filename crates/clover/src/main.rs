//! The `clover` front command, cargo-style: `clover NAME ARGS…` runs `clover-NAME ARGS…`.
//!
//! The tool is looked up beside the `clover` executable first (an installed suite stays
//! together), then on `PATH` (a user's own `clover-*` tools join the suite). The child gets
//! `CLOVER` set to this executable's path and replaces this process, so its exit code, signals
//! and terminal pass straight through. `clover --list` shows the installed tools with the first
//! line of their `--help`; `clover help NAME` shows a tool's help. `clover completions SHELL`
//! and `clover man [DIR]` print the suite's shell completions and man pages, built from the
//! stages' own command lines ([`commands`]).
//!
//! It deliberately does nothing else: no flags of its own reach the tools, and no tool's work
//! happens here.

mod commands;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clover_protocol::diag;

const USAGE: &str = "\
clover: unit-test-generation benchmarks from real repositories

usage: clover NAME [ARGS...]     run the tool clover-NAME
       clover help NAME          show a tool's help
       clover --list             list the installed tools
       clover completions SHELL  print completions (bash, zsh, fish, elvish, powershell)
       clover man [DIR]          write the man pages into DIR (clover.1 to stdout without DIR)
       clover --version

The pipeline: extract | calibrate | pack-context | generate | sandbox-run | score
A repository's test environment first: clover env --repo DIR
Any stage's records as a Hugging Face dataset: clover export FILE... -o DIR
";

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(first) = args.next() else {
        diag!("{}", USAGE.trim_end());
        return ExitCode::from(2);
    };
    let rest: Vec<OsString> = args.collect();
    match first.to_str() {
        Some("-h" | "--help") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some("-V" | "--version") => {
            println!("clover {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some("--list") => {
            list();
            ExitCode::SUCCESS
        }
        Some("help") => match rest.first() {
            None => {
                print!("{USAGE}");
                ExitCode::SUCCESS
            }
            Some(name) => run(name, &[OsString::from("--help")]),
        },
        Some("completions") => completions(&rest),
        Some("man") => man(&rest),
        Some(s) if s.starts_with('-') => {
            diag!("clover: unknown flag `{s}`; see `clover --help`");
            ExitCode::from(2)
        }
        _ => run(&first, &rest),
    }
}

/// `clover completions SHELL`: the completions on stdout.
fn completions(args: &[OsString]) -> ExitCode {
    let shell = match args {
        [one] => one
            .to_str()
            .and_then(|s| s.parse::<clap_complete::Shell>().ok()),
        _ => None,
    };
    let Some(shell) = shell else {
        diag!("clover: usage: clover completions SHELL (bash, zsh, fish, elvish or powershell)");
        return ExitCode::from(2);
    };
    let mut out = Vec::new();
    commands::completions(shell, &mut out);
    write_stdout(&out)
}

/// `clover man [DIR]`: every page into DIR, or `clover.1` on stdout.
fn man(args: &[OsString]) -> ExitCode {
    match args {
        [] => {
            let mut out = Vec::new();
            match commands::man_page(&mut out) {
                Ok(()) => write_stdout(&out),
                Err(e) => {
                    diag!("clover: error: cannot render the man page: {e}");
                    ExitCode::from(1)
                }
            }
        }
        [dir] => match commands::man_pages(Path::new(dir)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                diag!(
                    "clover: error: cannot write the man pages into {}: {e}",
                    Path::new(dir).display()
                );
                ExitCode::from(1)
            }
        },
        _ => {
            diag!("clover: usage: clover man [DIR]");
            ExitCode::from(2)
        }
    }
}

/// Writes `bytes` to stdout; a reader that went away (`| head`) is a clean end, as for every
/// stage.
fn write_stdout(bytes: &[u8]) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            diag!("clover: error: cannot write to stdout: {e}");
            ExitCode::from(1)
        }
    }
}

/// Replaces this process with `clover-NAME ARGS`.
fn run(name: &std::ffi::OsStr, args: &[OsString]) -> ExitCode {
    let name = name.to_string_lossy();
    let Some(tool) = find(&name) else {
        let installed: Vec<String> = tools().into_keys().collect();
        diag!(
            "clover: no such tool `{name}` (looked for clover-{name} beside clover and on PATH)\ninstalled: {}",
            if installed.is_empty() { "none".to_string() } else { installed.join(", ") }
        );
        return ExitCode::from(2);
    };
    let mut cmd = Command::new(&tool);
    cmd.args(args);
    if let Ok(me) = std::env::current_exe() {
        cmd.env("CLOVER", me);
    }
    let err = cmd.exec();
    diag!("clover: cannot run {}: {err}", tool.display());
    ExitCode::from(1)
}

/// The folders searched for tools, in order: beside this executable, then `PATH`.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        dirs.push(dir);
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path).filter(|p| !p.as_os_str().is_empty()));
    }
    dirs
}

fn is_executable(p: &Path) -> bool {
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn find(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    search_dirs()
        .into_iter()
        .map(|d| d.join(format!("clover-{name}")))
        .find(|p| is_executable(p))
}

/// Every installed tool by name, the first found in search order winning.
fn tools() -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    for dir in search_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let file = entry.file_name();
            let Some(name) = file.to_str().and_then(|f| f.strip_prefix("clover-")) else {
                continue;
            };
            // Cargo leaves `clover-x-<hash>` and `clover-x.d` next to built binaries.
            if name.is_empty() || name.contains('.') || is_cargo_hashed(name) {
                continue;
            }
            let path = entry.path();
            if is_executable(&path) {
                found.entry(name.to_string()).or_insert(path);
            }
        }
    }
    found
}

fn is_cargo_hashed(name: &str) -> bool {
    name.rsplit_once('-')
        .is_some_and(|(_, h)| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn list() {
    let tools = tools();
    if tools.is_empty() {
        println!("no clover tools installed (looked beside clover and on PATH)");
        return;
    }
    let width = tools.keys().map(String::len).max().unwrap_or(0);
    for (name, path) in tools {
        println!("{name:width$}  {}", summary(&path));
    }
}

/// The first non-empty line of a tool's `--help`, which clap fills with the tool's summary.
fn summary(tool: &Path) -> String {
    let output = Command::new(tool)
        .arg("--help")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("(no summary)")
            .to_string(),
        Err(_) => "(cannot run it)".to_string(),
    }
}
