//! `--shard K/N` for K in 0..3: each record lands in exactly one shard, and the shards joined
//! and sorted by id are the single run's output.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

const N: u32 = 3;

/// Runs `make(shard)` for every shard (it writes `-o` the path given) and checks the join.
fn assert_shards(dir: &Path, whole: &Path, make: &dyn Fn(&str, &Path) -> Command) {
    let shards: Vec<PathBuf> = (0..N)
        .map(|k| {
            let out = dir.join(format!("shard-{k}.jsonl"));
            run_ok(&mut make(&format!("{k}/{N}"), &out), 0);
            out
        })
        .collect();
    assert_shards_join(&shards, whole);
}

/// A manifest naming both fixtures.
pub fn fixtures_manifest(dir: &Path) -> PathBuf {
    let path = dir.join("fixtures.toml");
    let mut text = String::new();
    for (name, lang) in [("python", "python"), ("cpp", "cpp")] {
        let repo = clover_testkit::fixture(name);
        let own = std::fs::read_to_string(repo.join("clover.toml")).unwrap();
        // The fixture's own entry, with its path made absolute.
        text.push_str(&own.replace("path = \".\"", &format!("path = \"{}\"", repo.display())));
        text.push('\n');
        assert!(own.contains(&format!("language = \"{lang}\"")));
    }
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn extract_shards_join_to_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = fixtures_manifest(dir.path());
    let whole = dir.path().join("whole.jsonl");
    run_ok(
        tool("extract")
            .arg("--manifest")
            .arg(&manifest)
            .arg("-o")
            .arg(&whole),
        0,
    );
    assert_shards(dir.path(), &whole, &|shard, out| {
        let mut cmd = tool("extract");
        cmd.arg("--manifest")
            .arg(&manifest)
            .args(["--shard", shard])
            .arg("-o")
            .arg(out);
        cmd
    });
}

#[test]
fn calibrate_shards_join_to_the_whole() {
    let Some(python) = sandbox_python() else {
        return;
    };
    let whole = python_calibrated(&python);
    let dir = tempfile::tempdir().unwrap();
    assert_shards(dir.path(), whole, &|shard, out| {
        let mut cmd = tool("calibrate");
        calibrate_args(&mut cmd, &python);
        cmd.args(["--shard", shard])
            .arg(python_problems())
            .arg("-o")
            .arg(out);
        cmd
    });
    // calibrate shards by test file, so that peers are calibrated together.
    for k in 0..N {
        let files: std::collections::BTreeSet<String> =
            records(&dir.path().join(format!("shard-{k}.jsonl")))
                .iter()
                .map(|r| id_of(r).split("::").next().unwrap().to_string())
                .collect();
        for other in (0..N).filter(|&o| o != k) {
            let theirs = records(&dir.path().join(format!("shard-{other}.jsonl")));
            assert!(
                theirs
                    .iter()
                    .all(|r| !files.contains(id_of(r).split("::").next().unwrap())),
                "a test file is split between shards {k} and {other}"
            );
        }
    }
}

#[test]
fn pack_context_shards_join_to_the_whole() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let calibrated = python_calibrated(&python);
    let dir = tempfile::tempdir().unwrap();
    let make = |shard: Option<&str>, out: &Path| {
        let mut cmd = tool("pack-context");
        cmd.arg("--repo")
            .arg(clover_testkit::fixture("python"))
            .arg("--tokenizer")
            .arg(&tokenizer)
            .args(["--settings", "po,4k"])
            .arg(calibrated)
            .arg("-o")
            .arg(out);
        if let Some(s) = shard {
            cmd.args(["--shard", s]);
        }
        cmd
    };
    let whole = dir.path().join("whole.jsonl");
    run_ok(&mut make(None, &whole), 0);
    assert_shards(dir.path(), &whole, &|shard, out| make(Some(shard), out));
}

#[test]
fn generate_shards_join_to_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("instances.jsonl");
    std::fs::write(&input, instances_jsonl(30)).unwrap();
    let make = |shard: Option<&str>, out: &Path| {
        let mut cmd = tool("generate");
        cmd.args(["--model", "oracle"])
            .arg(&input)
            .arg("-o")
            .arg(out);
        if let Some(s) = shard {
            cmd.args(["--shard", s]);
        }
        cmd
    };
    let whole = dir.path().join("whole.jsonl");
    run_ok(&mut make(None, &whole), 0);
    assert_shards(dir.path(), &whole, &|shard, out| make(Some(shard), out));
}

#[test]
fn sandbox_run_shards_join_to_the_whole() {
    let (Some(python), Some(tokenizer)) = (sandbox_python(), clover_testkit::tokenizer_model())
    else {
        return;
    };
    let responses = python_oracle_responses(&python, &tokenizer);
    let whole = python_oracle_results(&python, &tokenizer);
    let dir = tempfile::tempdir().unwrap();
    assert_shards(dir.path(), whole, &|shard, out| {
        let mut cmd = sandbox_run(&python, responses, out);
        cmd.args(["--shard", shard]);
        cmd
    });
}
