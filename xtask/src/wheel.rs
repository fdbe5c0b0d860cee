//! `cargo xtask wheel`: a Python wheel, `clover-bench`, that puts `clover` and every
//! `clover-*` tool on `PATH` when pip, `uv tool install` or `pipx install` installs it.
//!
//! maturin builds it, with `bin` bindings on the front command's crate (`crates/clover`), and
//! the stage binaries go in through maturin's `data` folder: `clover_bench.data/scripts/` is
//! the wheel's place for files an installer copies into the environment's `bin`. maturin packs
//! the binaries of one package only (it compiles the bin targets of its root package), and
//! each stage is its binary's own package; a packaging crate with a `[[bin]]` per stage's
//! `main.rs` would build every binary twice under the same file name, which cargo warns is a
//! collision. So the workspace builds its binaries once, as `cargo xtask install` does, and
//! maturin writes the wheel (metadata, RECORD, compression, the front command's build).
//!
//! maturin audits only what it compiled, so the platform tag is checked over every binary in
//! the wheel with auditwheel, which reads each ELF file's symbol versions and libraries: when
//! a stage needs a newer glibc than the front command, the wheel is made again under the tag
//! auditwheel names (`linux_x86_64` when no manylinux policy holds), so a `manylinux_2_N` tag
//! is always true of every tool in it. Both tools are pinned in `target/clover-wheel-venv`
//! (`setup::wheel_tools`).
//!
//! The tokenizer model is not in the wheel (half a megabyte of someone else's file, licensed
//! and pinned apart): `clover doctor --fetch-tokenizer` brings it to `<env>/share/clover`,
//! `../share/clover` beside the installed tools, which is where pack-context looks first. The
//! man pages are (`<env>/share/man/man1`, where `man` looks for a `bin` folder on `PATH`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::{setup, step};

/// The distribution's name on an index and in `pip install`.
const DISTRIBUTION: &str = "clover-bench";

/// Builds the wheel from the binaries of cargo `profile` (`release` for users, `dev` for the
/// test suite, which has those built already) into `out` (default `target/wheels`, and
/// `target/wheels/PROFILE` for another profile), and returns its path.
pub fn build(root: &Path, profile: &str, out: Option<PathBuf>) -> Result<PathBuf> {
    let tools_python = setup::wheel_tools(root)?;
    let bin = tools_python.parent().expect("a venv's bin folder");
    let workspace = Workspace::read(root)?;
    step(&format!(
        "cargo build --workspace --bins --profile {profile}"
    ));
    duct::cmd!(
        "cargo",
        "build",
        "--workspace",
        "--bins",
        "--profile",
        profile
    )
    .dir(root)
    .run()
    .context("cargo build failed")?;
    let built = workspace.target.join(match profile {
        "dev" | "test" => "debug",
        "bench" => "release",
        other => other,
    });
    let out = out.unwrap_or_else(|| match profile {
        "release" => workspace.target.join("wheels"),
        other => workspace.target.join("wheels").join(other),
    });

    step("stage the tools for the wheel");
    let stage = workspace.target.join("wheel-stage").join(profile);
    if stage.exists() {
        std::fs::remove_dir_all(&stage)
            .with_context(|| format!("cannot empty {}", stage.display()))?;
    }
    let scripts = stage.join("clover_bench.data/scripts");
    std::fs::create_dir_all(&scripts)?;
    for tool in workspace.tools.iter().filter(|t| *t != "clover") {
        let from = built.join(tool);
        anyhow::ensure!(from.is_file(), "{} was not built", from.display());
        // Stripped, as maturin strips the front command (`--strip`): the line tables the
        // release profile keeps for backtraces would make the wheel several times larger.
        // `strip` is binutils', there wherever cargo could link these binaries.
        duct::cmd!("strip", "-o", scripts.join(tool), &from)
            .run()
            .with_context(|| format!("cannot strip {}", from.display()))?;
    }
    let man1 = stage.join("clover_bench.data/data/share/man/man1");
    duct::cmd!(built.join("clover"), "man", &man1)
        .run()
        .context("clover man failed")?;
    std::fs::copy(root.join("README.md"), stage.join("README.md"))?;
    std::fs::write(
        stage.join("pyproject.toml"),
        pyproject(&root.join("crates/clover/Cargo.toml")),
    )?;

    std::fs::create_dir_all(&out)?;
    for old in wheels_in(&out)? {
        std::fs::remove_file(&old)?;
    }
    let maturin = |compatibility: Option<&str>| -> Result<PathBuf> {
        let mut args = vec!["build", "--profile", profile, "--strip", "--out"];
        let out = out
            .to_str()
            .context("the output folder's path is not UTF-8")?;
        args.push(out);
        if let Some(c) = compatibility {
            args.extend(["--compatibility", c]);
        }
        step(&format!("maturin {}", args.join(" ")));
        duct::cmd(bin.join("maturin"), &args)
            .dir(&stage)
            .run()
            .context("maturin build failed")?;
        match wheels_in(Path::new(out))?.as_slice() {
            [one] => Ok(one.clone()),
            other => bail!("maturin left {} wheels in {out}, not one", other.len()),
        }
    };
    let mut wheel = maturin(None)?;
    step("auditwheel show: the platform tag every binary in the wheel allows");
    let shown = duct::cmd!(bin.join("auditwheel"), "show", &wheel)
        .read()
        .context("auditwheel show failed")?;
    let allowed = consistent_tag(&shown)?;
    if !file_name(&wheel).ends_with(&format!("-{allowed}.whl")) {
        eprintln!(
            "the front command allows {}, the whole wheel {allowed}: made again under {allowed}",
            file_name(&wheel)
        );
        std::fs::remove_file(&wheel)?;
        let arch = format!("_{}", std::env::consts::ARCH);
        wheel = maturin(Some(allowed.strip_suffix(&arch).unwrap_or(&allowed)))?;
    }
    let size = std::fs::metadata(&wheel)?.len();
    println!("{} ({:.1} MB)", wheel.display(), size as f64 / 1e6);
    Ok(wheel)
}

/// What the wheel is made of in this workspace: where cargo builds, and the tools' names.
struct Workspace {
    target: PathBuf,
    /// `clover` and every `clover-*` bin target of the workspace's packages.
    tools: Vec<String>,
}

impl Workspace {
    /// From `cargo metadata`, so a new stage's binary, or a `CARGO_TARGET_DIR`, needs no
    /// change here.
    fn read(root: &Path) -> Result<Self> {
        let json = duct::cmd!("cargo", "metadata", "--no-deps", "--format-version", "1")
            .dir(root)
            .read()
            .context("cargo metadata failed")?;
        let metadata: serde_json::Value = serde_json::from_str(&json)?;
        let target = metadata["target_directory"]
            .as_str()
            .context("cargo metadata has no target_directory")?
            .into();
        let mut tools: Vec<String> = metadata["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|p| p["targets"].as_array().into_iter().flatten())
            .filter(|t| {
                t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == "bin"))
            })
            .filter_map(|t| t["name"].as_str())
            .filter(|name| *name == "clover" || name.starts_with("clover-"))
            .map(String::from)
            .collect();
        tools.sort();
        anyhow::ensure!(
            tools.iter().any(|t| t == "clover"),
            "cargo metadata lists no `clover` binary"
        );
        Ok(Self { target, tools })
    }
}

/// The wheel's `pyproject.toml`, written beside the staged tools because maturin reads the
/// `data` folder relative to it; the version, license and authors come from the front
/// command's Cargo.toml (`dynamic`), so they are said once.
fn pyproject(manifest: &Path) -> String {
    format!(
        r#"# Written by `cargo xtask wheel` (xtask/src/wheel.rs); not edited by hand.
[build-system]
requires = ["maturin==1.16.0"]
build-backend = "maturin"

[project]
name = "{DISTRIBUTION}"
description = "Unit-test-generation benchmarks for code LLMs from real repositories, scored by running the tests in a namespace sandbox: the clover command-line tools"
readme = "README.md"
dynamic = ["version", "license"]
classifiers = [
    "Environment :: Console",
    "Operating System :: POSIX :: Linux",
    "Programming Language :: Rust",
    "Topic :: Software Development :: Testing",
]

[tool.maturin]
manifest-path = "{}"
bindings = "bin"
data = "clover_bench.data"
"#,
        manifest.display()
    )
}

/// The tag auditwheel says the whole wheel is consistent with, from its `show` report
/// (`… is consistent with the following platform tag: "manylinux_2_34_x86_64".`, wrapped).
fn consistent_tag(shown: &str) -> Result<String> {
    let flat = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    let marker = "consistent with the following platform tag: \"";
    flat.split_once(marker)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(tag, _)| tag.to_string())
        .with_context(|| format!("auditwheel show names no platform tag:\n{shown}"))
}

fn wheels_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = file_name(p);
            name.starts_with(&format!("{}-", DISTRIBUTION.replace('-', "_")))
                && name.ends_with(".whl")
        })
        .collect();
    wheels.sort();
    Ok(wheels)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_is_read_across_auditwheels_line_breaks() {
        let shown = "\nclover_bench-0.1.0-py3-none-manylinux_2_34_x86_64.whl is consistent\n\
                     with the following platform tag: \"manylinux_2_34_x86_64\".\n\n\
                     This constrains the platform tag to \"manylinux_2_34_x86_64\".";
        assert_eq!(consistent_tag(shown).unwrap(), "manylinux_2_34_x86_64");
        assert!(consistent_tag("no such line").is_err());
    }
}
