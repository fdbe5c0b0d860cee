//! The whole command line of the suite as one `clap::Command` tree, `clover <stage> …`, for
//! shell completions and man pages.
//!
//! Each stage's command line lives in its library (`clover_<stage>::cli::Cli`), where its
//! binary parses it, so the tree here is the stages' own, flag for flag. The front command
//! does not parse with it: `clover NAME` still hands everything to `clover-NAME` untouched.

use std::io::{self, Write};
use std::path::Path;

use clap::{value_parser, Arg, ArgAction, Command, CommandFactory};
use clap_complete::Shell;

/// The stages, in pipeline order, under the names `clover NAME` runs them by.
pub fn stages() -> Vec<Command> {
    vec![
        // Before the pipeline: a repository's test environment.
        stage::<clover_env::cli::Cli>("env"),
        stage::<clover_extract::cli::Cli>("extract"),
        stage::<clover_calibrate::cli::Cli>("calibrate"),
        stage::<clover_pack_context::cli::Cli>("pack-context"),
        stage::<clover_generate::cli::Cli>("generate"),
        stage::<clover_sandbox_run::cli::Cli>("sandbox-run"),
        stage::<clover_score::cli::Cli>("score"),
        // Not a stage of the pipeline: it writes any stage's records as a dataset.
        stage::<clover_export::cli::Cli>("export"),
        // Not a stage either: it checks the machine a run will use.
        stage::<clover_doctor::cli::Cli>("doctor"),
    ]
}

fn stage<C: CommandFactory>(name: &'static str) -> Command {
    C::command().name(name)
}

/// `clover` with every stage and the front command's own words as subcommands.
pub fn tree() -> Command {
    Command::new("clover")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Unit-test-generation benchmarks from real repositories")
        .long_about(
            "Unit-test-generation benchmarks from real repositories. `clover NAME ARGS...` \
             runs the tool clover-NAME, looked up beside clover and then on PATH; the \
             pipeline is extract | calibrate | pack-context | generate | sandbox-run | score.",
        )
        .subcommand_required(true)
        .arg(
            Arg::new("list")
                .long("list")
                .action(ArgAction::SetTrue)
                .help("List the installed tools with the first line of their help"),
        )
        .subcommands(stages())
        .subcommand(
            Command::new("completions")
                .about("Print the shell completions of clover and its stages")
                .arg(
                    Arg::new("shell")
                        .value_name("SHELL")
                        .required(true)
                        .value_parser(value_parser!(Shell)),
                ),
        )
        .subcommand(
            Command::new("man")
                .about(
                    "Write the man pages (clover.1 and clover-NAME.1) into DIR, or clover.1 \
                     to stdout",
                )
                .arg(
                    Arg::new("dir")
                        .value_name("DIR")
                        .value_parser(value_parser!(std::path::PathBuf))
                        .value_hint(clap::ValueHint::DirPath),
                ),
        )
}

/// The completions of `clover` for `shell`.
pub fn completions(shell: Shell, out: &mut dyn Write) {
    clap_complete::generate(shell, &mut tree(), "clover", out);
}

/// `clover.1` and one page per subcommand (`clover-extract.1`, …) into `dir`.
pub fn man_pages(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    clap_mangen::generate_to(tree(), dir)
}

/// `clover.1` alone, as [`man_pages`] writes it (no page, so no entry, for clap's `help`).
pub fn man_page(out: &mut dyn Write) -> io::Result<()> {
    clap_mangen::Man::new(tree().disable_help_subcommand(true)).render(out)
}
