//! `clover-extract`: a repository in, problem records out.

use std::collections::HashSet;
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use clover_extract::cli::{Cli, Format, Lang};
use clover_extract::{
    extract, write_problem_files, CppUtBenchRow, ExtractOptions, Extraction, FileIssue,
};
use clover_manifest::RepoConfig;
use clover_protocol::{diag, exit, finish_main, Language, OnError, RecordWriter, Stopped};

const TOOL: &str = "clover-extract";

fn main() -> ExitCode {
    finish_main(TOOL, run(Cli::parse()))
}

fn options(repo: &RepoConfig, args: &Cli) -> ExtractOptions {
    let language = match args.language {
        Some(Lang::Python) => Language::Python,
        Some(Lang::Cpp) => Language::Cpp,
        None => repo.language,
    };
    let mut opts = ExtractOptions::from_repo(repo);
    if language != repo.language {
        // The repository's globs are for its own language; another takes that one's defaults.
        let defaults = ExtractOptions::new(&repo.root, &repo.name, language);
        opts.language = language;
        opts.test_globs = defaults.test_globs;
    }
    opts.max_file_bytes = args.max_file_bytes;
    opts.chunk_lines = args.chunk_lines;
    opts.pair_by_includes &= !args.base_name_only;
    opts
}

fn run(args: Cli) -> Result<u8> {
    let repos = match RepoConfig::resolve(
        args.manifest.as_deref(),
        args.name.as_deref(),
        args.repo.as_deref(),
    ) {
        Ok(r) => r,
        Err(e) => {
            diag!("{TOOL}: error: {e}");
            return Ok(exit::USAGE);
        }
    };
    if args.resume && args.format == Format::CppUtBench {
        diag!(
            "{TOOL}: error: --resume needs clover records; CPP-UT-Bench rows are written at once"
        );
        return Ok(exit::USAGE);
    }
    let (mut writer, done) = match (&args.output, args.format) {
        (_, Format::CppUtBench) => (None, HashSet::new()),
        (Some(path), Format::Clover) => {
            let (w, done) = RecordWriter::create(path, args.resume)
                .with_context(|| format!("cannot create {}", path.display()))?;
            (Some(w), done)
        }
        (None, Format::Clover) => (Some(RecordWriter::stdout()), HashSet::new()),
    };
    let wanted = |id: &str| !done.contains(id) && args.shard.is_none_or(|s| s.contains(id));
    let mut bad_files = 0u64;
    // CPP-UT-Bench rows are not clover records; they go straight to the output file or stdout.
    let mut rows: Vec<CppUtBenchRow> = Vec::new();
    for repo in &repos {
        let opts = options(repo, &args);
        if args.format == Format::CppUtBench && opts.language != Language::Cpp {
            diag!(
                "{TOOL}: error: --format cpp-ut-bench needs a C++ repository; {} is {}",
                repo.name,
                opts.language
            );
            return Ok(exit::USAGE);
        }
        let started = Instant::now();
        let mut out = extract(&opts).with_context(|| format!("cannot extract {}", repo.name))?;
        let secs = started.elapsed().as_secs_f64();
        if let Some(n) = args.sample {
            let all = out.problems.len();
            let chosen = clover_protocol::sample::choose(
                out.problems.iter().map(|p| p.id.clone()),
                args.seed,
                n,
            );
            out.problems.retain(|p| chosen.contains(&p.id));
            if out.problems.len() < all {
                diag!(
                    "{TOOL}: {}: a sample of {} of its {all} problems (--sample {n} --seed {})",
                    repo.name,
                    out.problems.len(),
                    args.seed
                );
            }
        }
        if args.explain {
            explain(repo, &opts, &out);
        }
        // Every bad test file is reported with the id prefix its problems would have had
        // (`repo/path`) and counted. With --on-error stop nothing of this repository is
        // written, so the output holds only whole repositories before it.
        let mut errors = 0u64;
        for issue in &out.issues {
            if issue.kind.is_error() {
                errors += 1;
                diag!("{TOOL}: error: {}/{issue}", repo.name);
            } else if !args.quiet {
                diag!("{TOOL}: note: {}/{issue}", repo.name);
            }
        }
        bad_files += errors;
        if errors > 0 && args.on_error == OnError::Stop {
            // FILE.partial keeps the repositories before this one, for a later --resume.
            return Err(Stopped.into());
        }
        if args.write_problem_files {
            let n = write_problem_files(&opts.root, &out.problems)?;
            diag!(
                "{TOOL}: wrote {n} problem file(s) under {}",
                opts.root.display()
            );
        }
        match args.format {
            Format::Clover => {
                if let Some(w) = writer.as_mut() {
                    for p in out.problems.iter().filter(|p| wanted(&p.id)) {
                        w.write(p)?;
                    }
                }
            }
            Format::CppUtBench => rows.extend(
                out.problems
                    .iter()
                    .filter(|p| wanted(&p.id))
                    .filter_map(CppUtBenchRow::from_problem),
            ),
        }
        diag!(
            "{TOOL}: {}: {} in {:.3} s ({:.1} MB/s)",
            repo.name,
            out.summary,
            secs,
            out.summary.bytes as f64 / 1e6 / secs.max(1e-9)
        );
        if out.summary.problems == 0 {
            // Nothing to benchmark is rarely what was meant: say where extract looked.
            diag!(
                "{TOOL}: warning: {}: no problem extracted (test folders {}, test files {}); \
                 name them with test_dirs and test_globs in clover.toml (see --explain)",
                repo.name,
                list(&repo.test_dirs),
                repo.test_globs.join(", ")
            );
        }
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
        return Ok(exit_code(bad_files));
    }
    if let Some(w) = writer {
        w.finish()?;
    }
    Ok(exit_code(bad_files))
}

/// Says where each setting came from and which test files were read or left out, and why.
fn explain(repo: &RepoConfig, opts: &ExtractOptions, out: &Extraction) {
    let name = &repo.name;
    diag!("{TOOL}: explain: {name}: root {}", opts.root.display());
    for line in &repo.explanation {
        diag!("{TOOL}: explain: {name}: {line}");
    }
    diag!(
        "{TOOL}: explain: {name}: test files: those under test_dirs matching {} ({} found)",
        opts.test_globs.join(", "),
        out.test_files.len()
    );
    let left_out: std::collections::HashMap<&str, &FileIssue> = out
        .issues
        .iter()
        .filter(|i| !i.kind.is_error())
        .map(|i| (i.path.as_str(), i))
        .collect();
    for file in &out.test_files {
        match left_out.get(file.as_str()) {
            Some(issue) => diag!("{TOOL}: explain: {name}:   left out {issue}"),
            None => diag!("{TOOL}: explain: {name}:   test file {file}"),
        }
    }
}

/// Folders as `a, b` (`.` for the repository root).
fn list(dirs: &[std::path::PathBuf]) -> String {
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    if names.is_empty() {
        ".".into()
    } else {
        names.join(", ")
    }
}

fn exit_code(bad_files: u64) -> u8 {
    if bad_files > 0 {
        diag!("{TOOL}: {bad_files} test file(s) could not be used; see the errors above");
        exit::BAD_RECORDS
    } else {
        exit::OK
    }
}
