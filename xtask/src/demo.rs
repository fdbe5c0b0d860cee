//! `cargo xtask demo`: the whole pipeline on the embedded fixtures, from a release build.
//!
//! extract → calibrate → pack-context → generate (the oracle and a trivial baseline) →
//! sandbox-run → score (its own tables, then the papers') on both fixtures (`fixtures/python`, `fixtures/cpp`; their instances
//! joined before generate), each stage's output kept in `target/demo/` for reading
//! afterwards. The Python instance counts are capped so the demo ends in a few minutes on 2
//! cores. Both fixtures also go through the mutation score: calibrate keeps up to 3 mutants
//! per problem that the ground truth kills (`--mutants 3`, few, since every mutant of the
//! Python fixture's package runs cold: its conftest imports it; C++: of the focal source),
//! the two sidecars are joined, and sandbox-run runs the passing Task II, III and C++
//! candidates against them (`--mutation`).

use std::path::Path;

use anyhow::{Context, Result};

use crate::{setup, step};

pub fn run(root: &Path) -> Result<()> {
    let env = setup::run(root)?;
    step("cargo build --release");
    duct::cmd!("cargo", "build", "--release", "--workspace", "--bins").run()?;
    let clover = root.join("target/release/clover");
    let out = root.join("target/demo");
    std::fs::create_dir_all(&out)?;
    let file = |name: &str| -> String { out.join(name).display().to_string() };
    let python = env.python.display().to_string();
    let tokenizer = env.tokenizer.display().to_string();

    step("clover --list");
    duct::cmd!(&clover, "--list").run()?;

    // Each fixture through extract, calibrate and pack-context on its own: the Python tasks
    // in three settings, capped; C++ in its default setting (problem only), one instance per
    // chunk of each source. A context budget would hold nothing for C++ but the same prompt.
    // `--settings` gives every Python task the same three, so Task III runs in `po` and `8k`
    // too, which CLOVER does not build it in (its own are 64k and 128k): clover's additions,
    // kept because they cost the demo little and show the oracle against a context; the
    // paper tables mark them ‡.
    let mut instances = String::new();
    let mutants = file("mutants.jsonl");
    let mut sidecars = String::new();
    for (name, pack_flags) in [
        (
            "python",
            &[
                "--settings",
                "po,8k,64k",
                "--cloze-per-repo",
                "12",
                "--targeted-per-repo",
                "6",
                "--coverage-per-repo",
                "4",
            ][..],
        ),
        ("cpp", &[][..]),
    ] {
        let repo = root.join("fixtures").join(name).display().to_string();
        let problems = file(&format!("problems-{name}.jsonl"));
        let calibrated = file(&format!("calibrated-{name}.jsonl"));
        let packed = file(&format!("instances-{name}.jsonl"));
        stage(&clover, &["extract", "--repo", &repo, "-o", &problems])?;
        let mut args = vec![
            "calibrate",
            &problems,
            "--repo",
            &repo,
            "--python",
            &python,
            "--runs",
            "2",
            "-o",
            &calibrated,
        ];
        let sidecar = file(&format!("calibrated-{name}.jsonl.mutants.jsonl"));
        args.extend(["--mutants", "3", "--mutants-out", &sidecar]);
        stage(&clover, &args)?;
        sidecars.push_str(&std::fs::read_to_string(&sidecar)?);
        let mut args = vec![
            "pack-context",
            &calibrated,
            "--repo",
            &repo,
            "--tokenizer",
            &tokenizer,
            "--seed",
            "0",
            "-o",
            &packed,
        ];
        args.extend_from_slice(pack_flags);
        stage(&clover, &args)?;
        instances.push_str(&std::fs::read_to_string(&packed)?);
    }
    std::fs::write(out.join("instances.jsonl"), instances)?;
    std::fs::write(&mutants, sidecars)?;
    // From here on both fixtures at once.
    let repos = [
        "--repo".to_string(),
        root.join("fixtures/python").display().to_string(),
        "--repo".to_string(),
        root.join("fixtures/cpp").display().to_string(),
    ];
    let with_repos = |args: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        v.extend(repos.iter().cloned());
        v
    };
    let mut results = Vec::new();
    let mut responses_files = Vec::new();
    for model in ["oracle", "copy-operand"] {
        let responses = file(&format!("responses-{model}.jsonl"));
        let result = file(&format!("results-{model}.jsonl"));
        stage(
            &clover,
            &[
                "generate".to_string(),
                file("instances.jsonl"),
                "--model".into(),
                model.into(),
                "-o".into(),
                responses.clone(),
            ],
        )?;
        // The answers to the chunks of a C++ source are joined here into one test file,
        // compiled, run and measured once.
        stage(
            &clover,
            &with_repos(&[
                "sandbox-run",
                &responses,
                "--python",
                &python,
                "--mutation",
                &mutants,
                "-o",
                &result,
            ]),
        )?;
        results.push(result);
        responses_files.push(responses);
    }
    step("clover score");
    let mut args = vec!["score".to_string()];
    args.extend(results.iter().cloned());
    duct::cmd(&clover, &args).run().context("score failed")?;
    // The papers' tables of the same results: the statistics from the instances and the
    // problems, the models' metadata from the responses, the C++ fixture's domain from its
    // manifest.
    step("clover score --tables paper");
    let mut paper = vec![
        "score".to_string(),
        "--tables".into(),
        "paper".into(),
        "--instances".into(),
        file("instances.jsonl"),
        "--problems".into(),
        file("problems-python.jsonl"),
        "--problems".into(),
        file("problems-cpp.jsonl"),
        "--manifest".into(),
        root.join("fixtures/cpp/clover.toml").display().to_string(),
    ];
    for r in &responses_files {
        paper.extend(["--responses".to_string(), r.clone()]);
    }
    paper.extend(results.iter().cloned());
    duct::cmd(&clover, &paper)
        .run()
        .context("score --tables paper failed")?;
    let html = file("report.html");
    args.extend(["--format".into(), "html".into(), "-o".into(), html.clone()]);
    duct::cmd(&clover, &args).stdout_null().run()?;
    println!(
        "\nevery stage's output is in {}; the HTML report is {html}",
        out.display()
    );
    Ok(())
}

/// Runs `clover ARGS…`, announcing it; a bad-records exit (3) is reported but not fatal.
fn stage(clover: &Path, args: &[impl AsRef<str>]) -> Result<()> {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    step(&format!("clover {}", args.join(" ")));
    let status = duct::cmd(clover, &args).unchecked().run()?.status;
    match status.code() {
        Some(0) => Ok(()),
        Some(3) => {
            eprintln!("(some records were reported above; the others went on)");
            Ok(())
        }
        other => anyhow::bail!("clover {} failed with exit code {other:?}", args[0]),
    }
}
