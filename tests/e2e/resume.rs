//! A stage killed with SIGKILL in the middle and rerun with `--resume` ends with the output
//! an uninterrupted run writes: same ids in the same order, none twice, none lost, no torn
//! line (the test leaves half a record at the end of the partial file, as a crash mid-write
//! would).

use std::path::Path;

use crate::support::*;

/// A Python repository big enough that extracting it takes a while.
fn slow_repo(root: &Path, files: usize) {
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::create_dir_all(root.join("src/pkg")).unwrap();
    std::fs::write(root.join("src/pkg/__init__.py"), "").unwrap();
    std::fs::write(root.join("src/pkg/mod.py"), "def f(x):\n    return x\n").unwrap();
    for f in 0..files {
        let mut text = String::from("from pkg import mod\n\nHELPER = 3\n\n");
        for t in 0..40 {
            text.push_str(&format!(
                "\ndef helper_{t}(x):\n    return x + {t}\n\n\ndef test_case_{t}():\n    \
                 value = helper_{t}(HELPER)\n    assert value == {}\n    \
                 assert mod.f(value) is not None\n\n",
                t + 3
            ));
        }
        std::fs::write(root.join(format!("tests/test_file_{f:03}.py")), text).unwrap();
    }
}

#[test]
fn extract_resumes_after_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    // extract writes a repository's problems once it has read the whole repository: the
    // small one comes out at once, and the kill lands while the big one is being read.
    slow_repo(&dir.path().join("small"), 2);
    slow_repo(&dir.path().join("big"), 60);
    let manifest = dir.path().join("clover.toml");
    let mut text = String::new();
    for name in ["small", "big"] {
        text.push_str(&format!(
            "[[repo]]\nname = \"{name}\"\npath = \"{name}\"\nlanguage = \"python\"\n\
             source_dirs = [\"src/pkg\"]\ntest_dirs = [\"tests\"]\n\n"
        ));
    }
    std::fs::write(&manifest, text).unwrap();
    let make = |out: &Path, resume: bool| {
        let mut cmd = tool("extract");
        cmd.arg("--manifest").arg(&manifest).arg("-o").arg(out);
        if resume {
            cmd.arg("--resume");
        }
        cmd
    };
    let reference = dir.path().join("reference.jsonl");
    run_ok(&mut make(&reference, false), 0);
    let out = dir.path().join("problems.jsonl");
    assert_resume_after_kill(&|resume| make(&out, resume), &out, &reference);
}

#[test]
fn calibrate_resumes_after_sigkill() {
    let Some(python) = sandbox_python() else {
        return;
    };
    let reference = python_calibrated(&python);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("calibrated.jsonl");
    // One test file at a time, so records come out group by group.
    let make = |resume: bool| {
        let mut cmd = tool("calibrate");
        calibrate_args(&mut cmd, &python);
        cmd.args(["--jobs", "1"])
            .arg(python_problems())
            .arg("-o")
            .arg(&out);
        if resume {
            cmd.arg("--resume");
        }
        cmd
    };
    assert_resume_after_kill(&make, &out, reference);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("calibrated.jsonl.summary.json")).unwrap(),
    )
    .unwrap();
    let written = records(&out).len() as u64;
    assert_eq!(
        summary["pyfix"]["kept"].as_u64().unwrap_or(0)
            + summary["pyfix"]["excluded_failed"].as_u64().unwrap_or(0),
        written,
        "the summary of a resumed run counts the whole output: {summary}"
    );
}

#[test]
fn pack_context_resumes_after_sigkill() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let calibrated = python_calibrated(&python);
    let dir = tempfile::tempdir().unwrap();
    let make = |out: &Path, resume: bool| {
        let mut cmd = tool("pack-context");
        cmd.arg("--repo")
            .arg(clover_testkit::fixture("python"))
            .arg("--tokenizer")
            .arg(&tokenizer)
            .arg(calibrated)
            .arg("-o")
            .arg(out);
        if resume {
            cmd.arg("--resume");
        }
        cmd
    };
    let reference = dir.path().join("reference.jsonl");
    run_ok(&mut make(&reference, false), 0);
    let out = dir.path().join("instances.jsonl");
    assert_resume_after_kill(&|resume| make(&out, resume), &out, &reference);
}

#[test]
fn generate_resumes_after_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("instances.jsonl");
    std::fs::write(&input, instances_jsonl(12)).unwrap();
    // The same answers, slowly (killed in the middle) and at once (the reference).
    let make = |out: &Path, script: &str, resume: bool| {
        let mut cmd = tool("generate");
        cmd.args(["--model", "cmd", "--label", "echo", "--concurrency", "1"])
            .arg(&input)
            .arg("-o")
            .arg(out);
        if resume {
            cmd.arg("--resume");
        }
        cmd.args(["--", "sh", "-c", script]);
        cmd
    };
    let reference = dir.path().join("reference.jsonl");
    run_ok(&mut make(&reference, "cat", false), 0);
    let out = dir.path().join("responses.jsonl");
    assert_resume_after_kill(
        &|resume| make(&out, "sleep 0.2; cat", resume),
        &out,
        &reference,
    );
}

#[test]
fn sandbox_run_resumes_after_sigkill() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let responses = python_oracle_responses(&python, &tokenizer);
    assert!(
        records(responses).len() >= 4,
        "enough runs to kill one midway"
    );
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("reference.jsonl");
    run_ok(&mut sandbox_run(&python, responses, &reference), 0);
    let out = dir.path().join("results.jsonl");
    let make = |resume: bool| {
        let mut cmd = sandbox_run(&python, responses, &out);
        if resume {
            cmd.arg("--resume");
        }
        cmd
    };
    assert_resume_after_kill(&make, &out, &reference);
}
