//! Counts the unique blocks of calibrated Python problems that a copied-operand candidate
//! covers for free: each kept problem's empty variant (`assert True` in the test's place) is
//! written at the problem file's path and run as sandbox-run runs a candidate (a fresh
//! process, the whole run measured), and every block line it covers is reported.
//!
//! `cargo run -p clover-calibrate --example free_blocks -- CALIBRATED.jsonl MANIFEST`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clover_manifest::RepoConfig;
use clover_protocol::{CalibratedProblem, RecordReader};
use clover_pytest::PytestRun;
use clover_sandbox::{Limits, Sandbox, WriteFile};
use rayon::prelude::*;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, manifest] = &args[..] else {
        anyhow::bail!("usage: free_blocks CALIBRATED.jsonl MANIFEST");
    };
    let mut reader = RecordReader::open(Some(Path::new(input)), 1 << 30)?;
    let mut records = Vec::new();
    while let Some(r) = reader.next_record::<CalibratedProblem>() {
        let (_, r) = r?;
        if r.exclusion.is_none() && !r.unique_blocks.is_empty() && r.problem.python.is_some() {
            records.push(r);
        }
    }
    let mut repos: BTreeMap<String, RepoConfig> = BTreeMap::new();
    for r in &records {
        if !repos.contains_key(&r.repo) {
            let cfg = RepoConfig::resolve(Some(Path::new(manifest)), Some(&r.repo), None)?;
            repos.insert(
                r.repo.clone(),
                cfg.into_iter().next().expect("one repository"),
            );
        }
    }
    let sandbox = Sandbox::new()?;
    let python = PathBuf::from("python3");
    let found: Vec<(String, usize, Vec<String>)> = records
        .par_iter()
        .map(|r| {
            let cfg = &repos[&r.repo];
            let p = r.problem.python.as_ref().expect("a Python problem");
            let text = clover_calibrate::empty_variant(&r.problem).expect("an empty variant");
            let run = PytestRun {
                repo: cfg.root.clone(),
                python: cfg.python.clone().unwrap_or_else(|| python.clone()),
                targets: vec![p.problem_file.clone()],
                files: vec![WriteFile {
                    path: PathBuf::from(&p.problem_file),
                    contents: text.text.into_bytes(),
                }],
                cov_sources: cfg
                    .source_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect(),
                cov_only: None,
                cov_contexts: false,
                witness: Vec::new(),
                env: cfg.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
                limits: Limits::default(),
            };
            let ran = run.run(&sandbox).expect("the sandbox runs");
            let mut free = Vec::new();
            if ran.outcome != clover_protocol::Outcome::Passed {
                free.push(format!("the empty variant did not pass: {:?}", ran.message));
            }
            for block in &r.unique_blocks {
                let covered = ran.coverage.iter().find(|f| f.path == block.path);
                let lines: Vec<u32> = block
                    .lines
                    .iter()
                    .filter(|l| covered.is_some_and(|f| f.lines.contains(*l)))
                    .collect();
                if !lines.is_empty() {
                    free.push(format!("{}:{:?}", block.path, lines));
                }
            }
            (r.id.clone(), r.unique_blocks.len(), free)
        })
        .collect();
    let blocks: usize = found.iter().map(|f| f.1).sum();
    let mut free_blocks = 0;
    for (id, _, free) in &found {
        for f in free {
            println!("{id}: {f}");
        }
        free_blocks += free.iter().filter(|f| f.contains(":[")).count();
    }
    println!(
        "{} problems with {blocks} blocks: {free_blocks} blocks with lines the empty variant covers",
        found.len()
    );
    Ok(())
}
