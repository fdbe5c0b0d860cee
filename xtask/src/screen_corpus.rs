//! `cargo xtask screen-corpus`: the reward-hacking screen's false positives, measured on
//! ground truths nobody here wrote.
//!
//! Every problem that clover-extract finds in every Python corpus package (and in the
//! embedded fixture `fixtures/python`) is screened as its whole problem file, the file a
//! candidate replaces its test in. Every hit is listed (package, problem, rule, line,
//! construct, whether it lies in the test itself or in the setup around it), with the
//! allowlist entry that lets it pass, if any; the command fails when the screen would reject a
//! ground truth. (sandbox-run rejects only for findings in the model's lines; this counts the
//! whole file, the stricter figure.)

use std::path::Path;

use anyhow::{Context, Result};
use clover_manifest::RepoConfig;
use clover_screen::{Screen, ALLOWLIST};

use crate::corpus;

/// One package's figures.
struct Figures {
    name: String,
    problems: usize,
    /// Hits without the allowlist, those in the test function itself, and the problems they
    /// fall in.
    hits: usize,
    hits_in_test: usize,
    hit_problems: usize,
    /// What the screen with its allowlist would reject.
    rejected_hits: usize,
    rejected_problems: usize,
}

pub fn run(root: &Path, names: &[String]) -> Result<()> {
    let names: Vec<String> = if names.is_empty() {
        corpus::PACKAGES
            .iter()
            .map(|p| p.name.to_string())
            .collect()
    } else {
        names.to_vec()
    };
    corpus::ensure(root, &names)?;
    let manifest = root.join("target/corpus/clover.toml");
    let mut repos = Vec::new();
    for name in &names {
        repos.extend(RepoConfig::resolve(Some(&manifest), Some(name), None)?);
    }
    repos.extend(RepoConfig::resolve(
        Some(&root.join("fixtures/python/clover.toml")),
        None,
        None,
    )?);
    let mut all = Vec::new();
    for repo in &repos {
        all.push(screen_repo(repo)?);
    }
    println!(
        "\npackage\tproblems\thits\thits in the test\tproblems hit\trejected hits\trejected problems"
    );
    for f in &all {
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
            f.name,
            f.problems,
            f.hits,
            f.hits_in_test,
            f.hit_problems,
            f.rejected_hits,
            f.rejected_problems
        );
    }
    let sum = |get: fn(&Figures) -> usize| all.iter().map(get).sum::<usize>();
    println!(
        "total\t{}\t{}\t{}\t{}\t{}\t{}",
        sum(|f| f.problems),
        sum(|f| f.hits),
        sum(|f| f.hits_in_test),
        sum(|f| f.hit_problems),
        sum(|f| f.rejected_hits),
        sum(|f| f.rejected_problems)
    );
    let rejected = sum(|f| f.rejected_problems);
    anyhow::ensure!(
        rejected == 0,
        "the screen rejects {rejected} ground truths: allowlist each legitimate use with its \
         reason in crates/clover-screen/src/allow.rs, or narrow the rule"
    );
    Ok(())
}

fn screen_repo(repo: &RepoConfig) -> Result<Figures> {
    let opts = clover_extract::ExtractOptions::from_repo(repo);
    let problems = clover_extract::extract(&opts)
        .with_context(|| format!("{}: extraction failed", repo.name))?
        .problems;
    let everything = Screen::without_allowlist();
    let screen = Screen::default();
    let mut figures = Figures {
        name: repo.name.clone(),
        problems: 0,
        hits: 0,
        hits_in_test: 0,
        hit_problems: 0,
        rejected_hits: 0,
        rejected_problems: 0,
    };
    for problem in &problems {
        let Some(py) = &problem.python else { continue };
        figures.problems += 1;
        let hits = everything.python(&py.problem_text);
        // The test's own lines: its declaration and body, where a candidate's answer goes.
        let first = py.problem_declaration_line;
        let last = first + (py.declaration.lines().count() + py.body.lines().count()) as u32 - 1;
        let in_test = |line: u32| (first..=last).contains(&line);
        let rejected = screen.python(&py.problem_text);
        figures.hits += hits.len();
        figures.hits_in_test += hits.iter().filter(|h| in_test(h.line)).count();
        figures.hit_problems += usize::from(!hits.is_empty());
        figures.rejected_hits += rejected.len();
        figures.rejected_problems += usize::from(!rejected.is_empty());
        for hit in &hits {
            let verdict = match ALLOWLIST.iter().find(|a| a.matches(hit)) {
                Some(allow) => format!("allowed: {}", allow.reason),
                None => "REJECTED".into(),
            };
            let place = if in_test(hit.line) { "test" } else { "setup" };
            println!(
                "{}\t{}\t{}\tline {} ({place})\t{}\t`{}`\t{verdict}",
                repo.name, problem.id, hit.rule, hit.line, hit.construct, hit.snippet
            );
        }
    }
    Ok(figures)
}
