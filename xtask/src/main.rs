//! Project chores for clover, run as `cargo xtask <command>` (wired in `.cargo/config.toml`).
//!
//! - `setup`: installs what the tests and the demo need on a fresh Debian machine, idempotently;
//! - `test`: setup, then the whole test suite (format, lints, every crate's tests);
//! - `demo`: setup, a release build, then the pipeline on the embedded fixtures;
//! - `bench`: measurements as ratios against a baseline in the same run, into
//!   `docs/BENCHMARKS.md`; `bench --corpus`: the whole pipeline on the corpus; `bench --cpp`:
//!   only the C++ candidate section (also the end of `bench`);
//! - `install`: copies the `clover` and `clover-*` binaries into `PREFIX/bin`, the tokenizer
//!   model into `PREFIX/share/clover`, and the shell completions and man pages under
//!   `PREFIX/share`;
//! - `wheel`: the `clover-bench` Python wheel of every tool, into `target/wheels`.
//!
//! Everything that a test or the demo needs from outside the workspace is installed here and
//! nowhere else; the tools themselves never download anything.

mod bench;
mod bench_calibrate;
mod bench_corpus;
mod bench_corpus_mutation;
mod bench_corpus_report;
mod bench_cpp;
mod bench_flat;
mod bench_measure;
mod bench_scores;
mod bench_suites;
mod corpus;
mod corpus_extract;
mod corpus_extract_cpp;
mod demo;
mod docs;
mod screen_corpus;
mod setup;
mod wheel;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Project chores for clover")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install the Python environment, the C++ toolchain and the tokenizer model
    Setup,
    /// Setup, then run the whole test suite
    Test {
        /// Skip `cargo fmt --check` and clippy
        #[arg(long)]
        no_lint: bool,
        /// Extra arguments for `cargo test`
        #[arg(last = true)]
        cargo_args: Vec<String>,
    },
    /// Setup, build, and run the pipeline on the embedded fixtures
    Demo,
    /// Measure speed and overhead as ratios, and write docs/BENCHMARKS.md
    Bench {
        /// Instead: the whole pipeline on the corpus, with the oracle and a baseline
        #[arg(long)]
        corpus: bool,
        /// With --corpus: only these packages (default: all)
        #[arg(requires = "corpus")]
        names: Vec<String>,
        /// With --corpus: use the binaries in target/release as they are
        #[arg(long, requires = "corpus")]
        no_build: bool,
        /// Instead: only the C++ candidate section (fast builds against the build as it was)
        #[arg(long, conflicts_with = "corpus")]
        cpp: bool,
    },
    /// Fetch the corpus packages and C++ repositories, check their hashes, and give each
    /// Python package its environment
    Corpus {
        /// Only these packages or repositories (default: all)
        names: Vec<String>,
    },
    /// Check that extracted problem files pass on their own where the original tests pass
    CorpusExtract {
        /// Corpus packages (default: the ones the test suite uses)
        names: Vec<String>,
        /// Fail when a package's share is below this percentage
        #[arg(long, default_value_t = 97.0)]
        min_share: f64,
        /// Write the figures into docs/BENCHMARKS.md
        #[arg(long)]
        write: bool,
    },
    /// Check C++ pairing, comment stripping and chunking on real code, and run the ground truth
    CorpusExtractCpp {
        /// C++ corpus repositories (default: googletest-samples and snappy)
        names: Vec<String>,
        /// Skip building and running the ground-truth tests
        #[arg(long)]
        no_run: bool,
        /// Write the figures into docs/BENCHMARKS.md
        #[arg(long)]
        write: bool,
    },
    /// Screen the ground truth of every Python corpus problem for reward hacking; list each
    /// hit and fail when a ground truth is rejected
    ScreenCorpus {
        /// Corpus packages (default: all)
        names: Vec<String>,
    },
    /// Build the clover-bench Python wheel: every clover tool on PATH through pip, uv or pipx
    Wheel {
        /// The cargo profile whose binaries go in (the test suite uses `dev`)
        #[arg(long, default_value = "release")]
        profile: String,
        /// Write the wheel into DIR (default: target/wheels, or target/wheels/PROFILE)
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Install the clover binaries, their shell completions and man pages
    Install {
        /// Install under PREFIX (bin, share)
        #[arg(long, default_value = "~/.local")]
        prefix: String,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let root = workspace_root();
    std::env::set_current_dir(&root)?;
    match cli.command {
        Command::Setup => setup::run(&root).map(|_| ()),
        Command::Test {
            no_lint,
            cargo_args,
        } => test(&root, no_lint, &cargo_args),
        Command::Demo => demo::run(&root),
        Command::Bench {
            corpus: false,
            cpp: true,
            ..
        } => bench_cpp::run(&root),
        Command::Bench { corpus: false, .. } => {
            bench::run(&root).and_then(|()| bench_cpp::run(&root))
        }
        Command::Bench {
            corpus: true,
            names,
            no_build,
            ..
        } => bench_corpus::run(&root, &names, !no_build),
        Command::Install { prefix } => install(&root, &prefix),
        Command::Wheel { profile, out } => wheel::build(&root, &profile, out).map(|_| ()),
        Command::ScreenCorpus { names } => screen_corpus::run(&root, &names),
        Command::CorpusExtract {
            names,
            min_share,
            write,
        } => corpus_extract_check(&root, &names, min_share, write),
        Command::CorpusExtractCpp {
            names,
            no_run,
            write,
        } => corpus_extract_cpp::run(&root, &names, !no_run, write).map(|_| ()),
        Command::Corpus { names } => {
            let (cpp, python): (Vec<String>, Vec<String>) = names
                .into_iter()
                .partition(|n| corpus::CPP_REPOS.iter().any(|r| r.name == n));
            if !python.is_empty() || cpp.is_empty() {
                for r in corpus::ensure(&root, &python)? {
                    println!("{}\t{}\t{}", r.name, r.dir.display(), r.python.display());
                }
            }
            if !cpp.is_empty() || python.is_empty() {
                for r in corpus::ensure_cpp(&root, &cpp)? {
                    println!("{}\t{}\t{}", r.name, r.dir.display(), r.version);
                }
            }
            println!(
                "manifest: {}",
                root.join("target/corpus/clover.toml").display()
            );
            Ok(())
        }
    }
}

/// The workspace root: the parent of this crate's folder.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn test(root: &Path, no_lint: bool, cargo_args: &[String]) -> Result<()> {
    // A test run leaves the tree as it found it: docs are written only by an explicit command.
    let before = tree_state(root)?;
    let env = setup::run(root)?;
    let corpus: Vec<String> = corpus::FOR_TESTS.iter().map(|s| s.to_string()).collect();
    corpus::ensure(root, &corpus)?;
    step("corpus-extract: problem files pass where the original tests pass");
    corpus_extract_check(root, &corpus, 97.0, false)?;
    step("corpus-extract-cpp: C++ pairs, chunks and ground truth on googletest samples and snappy");
    corpus_extract_cpp::run(root, &[], true, false)?;
    // The wheel of this tree's dev binaries, which the test suite builds anyway; its test
    // installs it into a fresh environment and runs the pipeline from there.
    let wheel = wheel::build(root, "dev", None)?;
    if !no_lint {
        step("cargo fmt --check");
        duct::cmd!("cargo", "fmt", "--all", "--check")
            .run()
            .context("cargo fmt --check found unformatted code; run `cargo fmt`")?;
        step("cargo clippy");
        duct::cmd!(
            "cargo",
            "clippy",
            "--workspace",
            "--all-targets",
            "--quiet",
            "--",
            "-D",
            "warnings"
        )
        .run()
        .context("clippy found problems")?;
    }
    step("cargo test");
    let mut args = vec!["test".to_string(), "--workspace".to_string()];
    args.extend(cargo_args.iter().cloned());
    let mut cmd = duct::cmd("cargo", &args);
    for (k, v) in env.vars() {
        cmd = cmd.env(k, v);
    }
    cmd = cmd.env("CLOVER_CORPUS", root.join("target/corpus/clover.toml"));
    cmd = cmd.env("CLOVER_WHEEL", &wheel);
    cmd.run().context("tests failed")?;
    step("the tree is as the test run found it");
    let after = tree_state(root)?;
    anyhow::ensure!(
        after == before,
        "the test run changed the work tree (`git status` before:\n{}\nafter:\n{}): a test or \
         check wrote a tracked file or left one behind",
        before.status,
        after.status
    );
    Ok(())
}

/// What `git status` shows, and the text of every change, so that a run that rewrites a file
/// already modified before it is caught too.
#[derive(PartialEq, Eq)]
struct TreeState {
    status: String,
    diff: String,
}

fn tree_state(root: &Path) -> Result<TreeState> {
    let git = |args: &[&str]| -> Result<String> {
        duct::cmd("git", args)
            .dir(root)
            .stdout_capture()
            .read()
            .with_context(|| format!("git {}", args.join(" ")))
    };
    Ok(TreeState {
        status: git(&["status", "--porcelain=v1", "--untracked-files=all"])?,
        diff: git(&["diff", "HEAD", "--binary"])?,
    })
}

fn corpus_extract_check(root: &Path, names: &[String], min_share: f64, write: bool) -> Result<()> {
    let shares = corpus_extract::run(root, names, write)?;
    for s in &shares {
        let share = 100.0 * s.problem_pass as f64 / s.original_pass.max(1) as f64;
        anyhow::ensure!(
            share >= min_share && s.original_pass > 0,
            "{}: only {share:.1}% of the problem files pass (want {min_share}%)",
            s.name
        );
    }
    Ok(())
}

fn install(root: &Path, prefix: &str) -> Result<()> {
    let prefix = match prefix.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var("HOME").context("HOME is not set")?).join(rest),
        None => PathBuf::from(prefix),
    };
    // The same build as `cargo xtask demo` and `bench`, so one already made is reused; cargo's
    // own progress shows while it builds.
    step("cargo build --release --workspace --bins");
    duct::cmd!("cargo", "build", "--release", "--workspace", "--bins").run()?;
    let bin = prefix.join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("cannot create {}", bin.display()))?;
    for tool in release_tools(root)? {
        let to = bin.join(tool.file_name().expect("a file"));
        // Replace rather than overwrite: a running copy of the old binary keeps working.
        let tmp = to.with_extension("new");
        std::fs::copy(&tool, &tmp)?;
        std::fs::rename(&tmp, &to)?;
        println!("installed {}", to.display());
    }
    // The tokenizer model where an installed pack-context looks for it: `../share/clover`
    // beside its executable.
    let model = root.join("target/clover-data/tokenizer.model.v1");
    if model.is_file() {
        let share = prefix.join("share/clover");
        std::fs::create_dir_all(&share)
            .with_context(|| format!("cannot create {}", share.display()))?;
        let to = share.join("tokenizer.model.v1");
        std::fs::copy(&model, &to)?;
        println!("installed {}", to.display());
    } else {
        eprintln!(
            "note: no tokenizer model in target/clover-data (run `cargo xtask setup` first, then \
             install again); until then pack-context needs --tokenizer PATH, cl100k or o200k"
        );
    }
    // Completions and man pages from the installed front command, so they describe the tools
    // just installed, where bash-completion, zsh, fish and man look under a prefix.
    let clover = bin.join("clover");
    for (shell, path) in [
        ("bash", "share/bash-completion/completions/clover"),
        ("zsh", "share/zsh/site-functions/_clover"),
        ("fish", "share/fish/vendor_completions.d/clover.fish"),
    ] {
        let to = prefix.join(path);
        std::fs::create_dir_all(to.parent().expect("a folder"))?;
        let script = duct::cmd!(&clover, "completions", shell)
            .stdout_capture()
            .run()?
            .stdout;
        std::fs::write(&to, script).with_context(|| format!("cannot write {}", to.display()))?;
        println!("installed {}", to.display());
    }
    let man1 = prefix.join("share/man/man1");
    duct::cmd!(&clover, "man", &man1).run()?;
    println!("installed {}", man1.join("clover*.1").display());
    Ok(())
}

/// `clover` and every `clover-*` binary in `target/release`.
pub fn release_tools(root: &Path) -> Result<Vec<PathBuf>> {
    let dir = root.join("target/release");
    let mut tools: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            p.is_file()
                && (name == "clover" || (name.starts_with("clover-") && !name.contains('.')))
        })
        .collect();
    tools.sort();
    Ok(tools)
}

/// Announces a step on stderr.
pub fn step(what: &str) {
    eprintln!("\x1b[1m==> {what}\x1b[0m");
}
