//! The `clover-bench` wheel (`cargo xtask wheel`; `cargo xtask test` builds it from this
//! build's binaries and names it in `CLOVER_WHEEL`), installed with pip into a fresh virtual
//! environment and run the way a user with no checkout and no Rust toolchain runs it: from a
//! folder outside the checkout, with `PATH` the environment's `bin` and the system's folders
//! only, and nothing else in the environment. The tokenizer comes with `clover doctor
//! --fetch-tokenizer` (pip from the copy `cargo xtask setup` keeps, so the test reaches no
//! index), to where the installed pack-context finds it unasked. Then the demo's Python
//! pipeline, extract to score, must write the very records and tables this build's binaries
//! write.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::pipeline;
use crate::support::{
    assert_same_records, assert_same_results, calibrate_python, extract_python, python_calibrated,
    python_problems, run, run_ok, sandbox_python, tool,
};

/// The system's folders a user's `PATH` has besides the environment's `bin`.
const SYSTEM_PATH: &str = "/usr/bin:/bin";

#[test]
fn the_installed_wheel_runs_the_demo_pipeline_outside_the_checkout() {
    let Some(python) = sandbox_python() else {
        return;
    };
    let Some(tokenizer) = clover_testkit::tokenizer_model() else {
        return;
    };
    let Some(wheel) = clover_testkit::require(
        "the clover-bench wheel in $CLOVER_WHEEL (`cargo xtask wheel --profile dev`, which \
         `cargo xtask test` builds)",
        std::env::var_os("CLOVER_WHEEL")
            .map(PathBuf::from)
            .filter(|w| w.is_file()),
    ) else {
        return;
    };
    // Where setup's fetch left the mistral-common wheel the model came out of.
    let Some(downloads) = clover_testkit::require(
        "the mistral-common wheel beside the tokenizer model (downloads/)",
        tokenizer.parent().map(|d| d.join("downloads")).filter(|d| {
            std::fs::read_dir(d).is_ok_and(|mut e| {
                e.any(|e| {
                    e.is_ok_and(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .starts_with("mistral_common-")
                    })
                })
            })
        }),
    ) else {
        return;
    };
    let checkout = clover_testkit::workspace_root();
    let home = tempfile::tempdir().unwrap();
    assert!(
        !home.path().starts_with(&checkout),
        "the temporary folder is outside the checkout"
    );
    let venv = home.path().join("venv");
    run_ok(
        Command::new(&python)
            .args(["-m", "venv"])
            .arg(&venv)
            .stdin(Stdio::null()),
        0,
    );
    let bin = venv.join("bin");
    let path = format!("{}:{SYSTEM_PATH}", bin.display());
    for dir in std::env::split_paths(&path) {
        for rust in ["cargo", "rustc"] {
            assert!(
                !dir.join(rust).exists(),
                "{rust} is in {}: the run would not show the wheel needs no toolchain",
                dir.display()
            );
        }
    }
    // A user's shell: this PATH, a HOME, and none of the test's variables (no
    // CLOVER_TOKENIZER, no CARGO_*), from a folder outside the checkout.
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let user = |program: &Path| {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", &path)
            .env("HOME", home.path())
            .current_dir(&work)
            .stdin(Stdio::null());
        cmd
    };
    run_ok(
        user(&bin.join("python"))
            .args(["-m", "pip", "install", "-q", "--no-index"])
            .arg(&wheel),
        0,
    );

    // Every tool of this build is on PATH, and the front command finds each of them.
    let mut built: Vec<String> = std::fs::read_dir(crate::support::bin_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n == "clover" || (n.starts_with("clover-") && !n.contains('.')))
        .collect();
    built.sort();
    assert!(built.len() >= 9, "this build's tools: {built:?}");
    let listed =
        String::from_utf8(run_ok(user(Path::new("clover")).arg("--list"), 0).stdout).unwrap();
    for name in &built {
        assert!(
            bin.join(name).is_file(),
            "pip put no {name} in {}",
            bin.display()
        );
        if let Some(stage) = name.strip_prefix("clover-") {
            assert!(
                listed
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(stage)),
                "`clover --list` misses {stage}:\n{listed}"
            );
        }
    }
    let clover = |stage: &str| {
        let mut cmd = user(Path::new("clover"));
        cmd.arg(stage);
        cmd
    };

    // The tokenizer, fetched by the installed doctor, lands where pack-context looks.
    let fetched = run(clover("doctor")
        .arg("--fetch-tokenizer")
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", &downloads))
    .stderr;
    let model = venv.join("share/clover/tokenizer.model.v1");
    assert!(
        model.is_file(),
        "clover doctor --fetch-tokenizer put no model at {}:\n{}",
        model.display(),
        fetched
    );
    assert_eq!(
        std::fs::read(&model).unwrap(),
        std::fs::read(&tokenizer).unwrap(),
        "the fetched model is setup's"
    );

    // extract → calibrate, as the shared workspace run does them.
    let problems = extract_python(&clover, &work);
    assert_same_records(&problems, python_problems());
    let calibrated = work.join("calibrated.jsonl");
    calibrate_python(&clover, &problems, &python, &calibrated);
    assert_same_records(&calibrated, python_calibrated(&python));

    // pack-context with no --tokenizer, generate, sandbox-run: the same records.
    let ours = pipeline::run_after_calibrate(&clover, &calibrated, None, &python, &work);
    let reference = pipeline::workspace_outputs(&python, &tokenizer);
    assert_same_records(&ours.instances, &reference.instances);
    for (got, want) in ours.responses.iter().zip(&reference.responses) {
        assert_same_records(got, want);
    }
    for (got, want) in ours.results.iter().zip(&reference.results) {
        assert_same_results(got, want, home.path());
    }

    // And the demo's tables, its own and the papers', byte for byte.
    for tables in [&[][..], &["--tables", "paper"][..]] {
        let installed = run_ok(
            clover("score")
                .args(tables)
                .arg("--instances")
                .arg(&ours.instances)
                .args(&ours.results),
            0,
        );
        let built = run_ok(
            tool("score")
                .args(tables)
                .arg("--instances")
                .arg(&reference.instances)
                .args(&reference.results),
            0,
        );
        let text = String::from_utf8(installed.stdout).unwrap();
        assert!(
            text.contains("oracle") && text.contains("copy-operand"),
            "score {tables:?} shows both models:\n{text}"
        );
        assert_eq!(
            text,
            String::from_utf8(built.stdout).unwrap(),
            "score {tables:?} of the installed tools differs from this build's"
        );
    }
}
