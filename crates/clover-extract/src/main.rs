//! `clover-extract`: a repository in, problem records out.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use clover_extract::{extract, write_problem_files, CppUtBenchRow, ExtractOptions};
use clover_manifest::RepoConfig;
use clover_protocol::{exit, finish_main, Language, RecordWriter};

const TOOL: &str = "clover-extract";

/// Extract benchmark problems from a repository: one per Python test function, or one per C++
/// source paired with its GoogleTest file
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The repository folder (its clover.toml is used when it has one; otherwise the layout
    /// is detected)
    #[arg(long, value_name = "DIR", conflicts_with = "manifest")]
    repo: Option<PathBuf>,
    /// A manifest naming one or more repositories
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// The repository to take from the manifest (default: all of them), or the name to give a
    /// detected repository
    #[arg(long, value_name = "REPO")]
    name: Option<String>,
    /// Override the detected or configured language
    #[arg(long, value_enum)]
    language: Option<Lang>,
    /// Write records to FILE (through FILE.partial, renamed when done) instead of stdout
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Output format: clover problem records, or CPP-UT-Bench rows (C++ only)
    #[arg(long, value_enum, default_value_t = Format::Clover)]
    format: Format,
    /// Also write each Python problem file (tmp_test_<stem>_<n>.py) next to its original
    #[arg(long)]
    write_problem_files: bool,
    /// Skip (and report) files larger than this many bytes
    #[arg(long, value_name = "BYTES", default_value_t = clover_extract::DEFAULT_MAX_FILE_BYTES)]
    max_file_bytes: u64,
    /// Cut C++ sources longer than this many lines into chunks
    #[arg(long, value_name = "LINES", default_value_t = clover_extract::DEFAULT_CHUNK_LINES)]
    chunk_lines: u32,
    /// Do not report skipped files one by one (the summary still counts them)
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Lang {
    Python,
    Cpp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// `problem` records (clover's wire format)
    Clover,
    /// CPP-UT-Bench's columns: ID, Language, Repository Name, File Name, …
    CppUtBench,
}

fn main() -> ExitCode {
    finish_main(TOOL, run(Args::parse()))
}

fn options(repo: &RepoConfig, args: &Args) -> ExtractOptions {
    let language = match args.language {
        Some(Lang::Python) => Language::Python,
        Some(Lang::Cpp) => Language::Cpp,
        None => repo.language,
    };
    let mut opts = ExtractOptions::new(&repo.root, &repo.name, language);
    opts.test_dirs = repo.test_dirs.clone();
    opts.source_dirs = repo.source_dirs.clone();
    if !repo.test_globs.is_empty() && language == repo.language {
        opts.test_globs = repo.test_globs.clone();
    }
    opts.excludes = repo.excludes.clone();
    opts.max_file_bytes = args.max_file_bytes;
    opts.chunk_lines = args.chunk_lines;
    opts
}

fn run(args: Args) -> Result<u8> {
    let repos = match RepoConfig::resolve(
        args.manifest.as_deref(),
        args.name.as_deref(),
        args.repo.as_deref(),
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{TOOL}: error: {e}");
            return Ok(exit::USAGE);
        }
    };
    let mut writer = match (&args.output, args.format) {
        (_, Format::CppUtBench) => None,
        (Some(path), Format::Clover) => Some(
            RecordWriter::create(path, false)
                .with_context(|| format!("cannot create {}", path.display()))?
                .0,
        ),
        (None, Format::Clover) => Some(RecordWriter::stdout()),
    };
    // CPP-UT-Bench rows are not clover records; they go straight to the output file or stdout.
    let mut rows: Vec<CppUtBenchRow> = Vec::new();
    for repo in &repos {
        let opts = options(repo, &args);
        if args.format == Format::CppUtBench && opts.language != Language::Cpp {
            eprintln!(
                "{TOOL}: error: --format cpp-ut-bench needs a C++ repository; {} is {}",
                repo.name, opts.language
            );
            return Ok(exit::USAGE);
        }
        let started = Instant::now();
        let out = extract(&opts).with_context(|| format!("cannot extract {}", repo.name))?;
        let secs = started.elapsed().as_secs_f64();
        if !args.quiet {
            for issue in &out.issues {
                eprintln!("{TOOL}: skipped {}", issue);
            }
        }
        if args.write_problem_files {
            let n = write_problem_files(&opts.root, &out.problems)?;
            eprintln!(
                "{TOOL}: wrote {n} problem file(s) under {}",
                opts.root.display()
            );
        }
        match args.format {
            Format::Clover => {
                if let Some(w) = writer.as_mut() {
                    for p in &out.problems {
                        w.write(p)?;
                    }
                }
            }
            Format::CppUtBench => {
                rows.extend(out.problems.iter().filter_map(CppUtBenchRow::from_problem))
            }
        }
        eprintln!(
            "{TOOL}: {}: {} in {:.3} s ({:.1} MB/s)",
            repo.name,
            out.summary,
            secs,
            out.summary.bytes as f64 / 1e6 / secs.max(1e-9)
        );
    }
    if args.format == Format::CppUtBench {
        let mut buf = Vec::new();
        for row in &rows {
            serde_json::to_writer(&mut buf, row)?;
            buf.push(b'\n');
        }
        match &args.output {
            Some(path) => {
                std::fs::write(path, &buf)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            None => {
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(&buf)?;
                stdout.flush()?;
            }
        }
        return Ok(exit::OK);
    }
    if let Some(w) = writer {
        w.finish()?;
    }
    Ok(exit::OK)
}
