//! `cargo xtask demo`: the pipeline on the embedded fixtures, from a release build.
//!
//! Each stage's output lands in `target/demo/`, so the files can be read afterwards. The demo
//! runs the stages that exist in this build and says which are still to come.

use std::path::Path;

use anyhow::{Context, Result};

use crate::{setup, step};

pub fn run(root: &Path) -> Result<()> {
    let env = setup::run(root)?;
    step("cargo build --release");
    duct::cmd!("cargo", "build", "--release", "--workspace", "--bins").run()?;
    let bin = root.join("target/release");
    let out = root.join("target/demo");
    std::fs::create_dir_all(&out)?;
    let clover = bin.join("clover");
    let has = |tool: &str| bin.join(format!("clover-{tool}")).is_file();

    step("clover --list");
    duct::cmd!(&clover, "--list").run()?;

    if !has("extract") {
        eprintln!("extract is not built yet: nothing more to show");
        return Ok(());
    }
    let mut summary = Vec::new();
    for (name, dir) in [("python", "fixtures/python"), ("cpp", "fixtures/cpp")] {
        let problems = out.join(format!("problems-{name}.jsonl"));
        step(&format!("clover extract --repo {dir}"));
        duct::cmd!(
            &clover,
            "extract",
            "--repo",
            root.join(dir),
            "-o",
            &problems
        )
        .run()
        .with_context(|| format!("extract failed on {dir}"))?;
        summary.push(format!(
            "{dir}: {} problems -> {}",
            count_lines(&problems)?,
            problems.display()
        ));
    }

    if has("sandbox-run") {
        let test = "tests/test_money.py";
        step(&format!(
            "clover sandbox-run --repo fixtures/python --test-file {test}"
        ));
        let result = duct::cmd!(
            &clover,
            "sandbox-run",
            "--repo",
            root.join("fixtures/python"),
            "--test-file",
            test,
            "--python",
            &env.python
        )
        .stdout_path(out.join("sandbox-run.jsonl"))
        .unchecked()
        .run()?;
        summary.push(format!(
            "sandbox-run {test}: exit {:?} -> {}",
            result.status.code(),
            out.join("sandbox-run.jsonl").display()
        ));
    }
    for stage in ["calibrate", "pack-context", "generate", "score"] {
        if !has(stage) {
            summary.push(format!("{stage}: not built yet"));
        }
    }
    step("summary");
    for line in summary {
        println!("{line}");
    }
    Ok(())
}

fn count_lines(path: &Path) -> Result<usize> {
    Ok(std::fs::read_to_string(path)?.lines().count())
}
