//! `clover-env` (`clover env`): see the crate's documentation.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use clover_env::cli::Cli;
use clover_env::{Options, Recipe, RecipeEntry};
use clover_protocol::{diag, exit, Environment, RecordWriter, Usage};

fn main() -> ExitCode {
    clover_protocol::finish_main("clover-env", run(Cli::parse()))
}

fn run(cli: Cli) -> Result<u8> {
    let cache = cli.cache.clone().unwrap_or_else(default_cache);
    let recipe = match &cli.recipe {
        Some(path) => Some(Recipe::load(path).map_err(Usage::from_error)?),
        None => None,
    };
    let entry: Option<RecipeEntry> = match (&recipe, &cli.recipe, &cli.name) {
        (Some(r), Some(path), Some(name)) => {
            Some(r.entry(name, path).map_err(Usage::from_error)?.clone())
        }
        _ => None,
    };
    let python = cli
        .python
        .clone()
        .or_else(|| entry.as_ref().and_then(|e| e.python.clone()))
        .or_else(|| recipe.as_ref().and_then(|r| r.python.clone()))
        .unwrap_or_else(|| "python3".into());
    let uv = cli
        .uv
        .clone()
        .or_else(|| std::env::var_os("CLOVER_UV").map(PathBuf::from))
        .unwrap_or_else(|| "uv".into());
    let exclude_newer = match &cli.exclude_newer {
        Some(d) if d.len() == 10 => Some(format!("{d}T23:59:59Z")),
        Some(d) => Some(d.clone()),
        None => recipe.as_ref().and_then(Recipe::exclude_newer),
    };
    let repo = match (&cli.repo, &entry) {
        (Some(repo), _) => repo.clone(),
        (None, Some(e)) => {
            let dir = cli.src.join(&e.name);
            if !dir.is_dir() {
                let downloads = cli
                    .downloads
                    .clone()
                    .unwrap_or_else(|| cache.join("downloads"));
                if let Err(e) = fetch(e, &python, &downloads, &dir) {
                    let env = failed_fetch(&cli, &dir, &exclude_newer, &e);
                    write(&cli, &env)?;
                    return Ok(exit::FAILURE);
                }
            }
            dir
        }
        (None, None) => {
            return Err(Usage(
                "give the repository with --repo DIR, or --recipe FILE --name NAME".into(),
            )
            .into())
        }
    };
    let name = cli.name.clone().unwrap_or_else(|| {
        repo.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repo".into())
    });
    if let Some(e) = &entry {
        let missing = clover_env::missing_system_packages(e);
        if !missing.is_empty() {
            return Err(Usage(format!(
                "{name} needs Debian packages that are not installed: apt-get install {}",
                missing.join(" ")
            ))
            .into());
        }
    }
    let opts = Options {
        name,
        repo,
        python,
        cache,
        uv,
        entry: entry.clone(),
        exclude_newer,
        suite_budget: (!cli.no_suite).then(|| Duration::from_secs(cli.suite_budget)),
    };
    let env = clover_env::build(&opts).map_err(Usage::from_error)?;
    say(&env);
    write(&cli, &env)?;
    if let (Some(path), None) = (&cli.manifest_out, &env.failure) {
        clover_protocol::write_whole(
            path,
            clover_env::manifest_entry(&env, entry.as_ref()).as_bytes(),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let usable = env.failure.is_none() && env.suite.as_ref().is_none_or(|s| s.usable);
    Ok(if usable { exit::OK } else { exit::FAILURE })
}

fn fetch(e: &RecipeEntry, python: &str, downloads: &Path, dir: &Path) -> Result<()> {
    let (Some(version), Some(sha256)) = (&e.version, &e.sha256) else {
        anyhow::bail!(
            "the recipe entry {} names no version and sha256 to fetch",
            e.name
        );
    };
    let project = e.pypi.as_deref().unwrap_or(&e.name);
    let base = clover_env::find_python(python).map_err(anyhow::Error::msg)?;
    let sdist = clover_env::fetch_sdist(&base, downloads, project, version, sha256)?;
    if let Some(from) = &e.tests_from {
        anyhow::bail!(
            "its sdist lacks the tests ({}); they come from a {} source ({} {}), which \
             clover env does not fetch: only the package registries are reachable from here",
            from.why,
            from.kind,
            from.repository
                .as_deref()
                .or(from.package.as_deref())
                .unwrap_or("?"),
            from.tag.as_deref().unwrap_or("")
        );
    }
    clover_env::unpack(&sdist, dir)
}

fn failed_fetch(
    cli: &Cli,
    dir: &Path,
    exclude_newer: &Option<String>,
    e: &anyhow::Error,
) -> Environment {
    let name = cli.name.clone().unwrap_or_default();
    diag!("clover-env: {name}: fetch: {e:#}");
    clover_protocol::Environment {
        failure: Some(clover_protocol::EnvFailure {
            step: "fetch".into(),
            package: Some(name.clone()),
            message: format!("{e:#}"),
        }),
        ..clover_env::empty_environment(&name, dir, exclude_newer.clone())
    }
}

/// A line on stderr for a person watching: what was made and how the suite did.
fn say(env: &Environment) {
    if let Some(f) = &env.failure {
        diag!(
            "clover-env: {}: {} failed{}: {}",
            env.id,
            f.step,
            f.package
                .as_deref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default(),
            f.message
        );
        return;
    }
    let how = if env.cached { "already made" } else { "made" };
    let suite = env
        .suite
        .as_ref()
        .map(|s| {
            format!(
                "; suite: {} passed, {} failed, {} errors, {} skipped in {:.0} s{}{}",
                s.passed,
                s.failed,
                s.errors,
                s.skipped,
                s.seconds,
                s.stopped
                    .as_deref()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default(),
                if s.usable { "" } else { " — not usable" }
            )
        })
        .unwrap_or_default();
    diag!(
        "clover-env: {}: {how}, Python {}, {} packages, {} unresolved{suite}",
        env.id,
        env.python_version,
        env.installed.len(),
        env.unresolved.len()
    );
}

fn write(cli: &Cli, env: &Environment) -> Result<()> {
    let mut out = match &cli.output {
        Some(path) => {
            RecordWriter::create(path, false)
                .with_context(|| format!("cannot write {}", path.display()))?
                .0
        }
        None => RecordWriter::stdout(),
    };
    out.write(env)?;
    out.finish()?;
    Ok(())
}

fn default_cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("CLOVER_ENV_CACHE") {
        return dir.into();
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join("clover/envs")
}
