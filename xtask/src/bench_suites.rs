//! Each package's own whole suite, bare on the host and through the sandbox
//! (`sandbox_bench pytest`/`gtest`, interleaved): the sandbox's overhead.

use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use clover_manifest::RepoConfig;
use clover_protocol::{RecordReader, DEFAULT_MAX_LINE_BYTES};

use crate::step;

/// Interleaved bare/sandboxed runs of each Python suite.
pub(crate) const SUITE_RUNS: usize = 3;

/// One package's suite, bare and sandboxed.
pub(crate) struct Suite {
    pub(crate) name: String,
    pub(crate) target: String,
    pub(crate) bare_secs: f64,
    pub(crate) sandboxed_secs: f64,
}

impl Suite {
    /// A suite's medians as `sandbox_bench` prints them (microseconds).
    pub(crate) fn measured(name: &str, target: String, v: &serde_json::Value) -> Result<Suite> {
        Ok(Suite {
            name: name.to_string(),
            target,
            bare_secs: v["bare_us"].as_f64().context("no bare time")? / 1e6,
            sandboxed_secs: v["sandbox_us"].as_f64().context("no sandbox time")? / 1e6,
        })
    }
}

/// Each selected package's tests bare and sandboxed: a Python package's whole suite; a C++
/// package's test files that extract paired with a source (built, run and measured).
pub(crate) fn suite_overheads(
    root: &Path,
    manifest: &Path,
    work: &Path,
    selected: &[String],
) -> Result<Vec<Suite>> {
    let mut out = Vec::new();
    for cfg in RepoConfig::resolve(Some(manifest), None, None)? {
        if !selected.contains(&cfg.name) {
            continue;
        }
        if cfg.language == clover_protocol::Language::Cpp {
            let tests = cpp_test_files(&work.join(format!("{}-problems.jsonl", cfg.name)))?;
            if tests.is_empty() {
                continue;
            }
            step(&format!("{}: the test files bare and sandboxed", cfg.name));
            let mut args = vec![
                "gtest".to_string(),
                SUITE_RUNS.to_string(),
                manifest.display().to_string(),
                cfg.name.clone(),
            ];
            args.extend(tests.iter().cloned());
            let v = crate::bench::sandbox_bench(root, &args)?;
            out.push(Suite::measured(&cfg.name, tests.join(" "), &v)?);
            continue;
        }
        let python = cfg
            .python
            .clone()
            .context("the corpus names each interpreter")?;
        let target = cfg
            .test_dirs
            .first()
            .map_or(".".into(), |d| d.display().to_string());
        // coverage.py takes folders or importable names, not module files.
        let src = cfg.source_dirs.first().map_or(".".into(), |d| {
            let s = d.display().to_string();
            s.strip_suffix(".py").map_or(s.clone(), String::from)
        });
        step(&format!("{}: the suite bare and sandboxed", cfg.name));
        let v = crate::bench::sandbox_bench(
            root,
            &[
                "pytest".into(),
                SUITE_RUNS.to_string(),
                cfg.root.display().to_string(),
                python.display().to_string(),
                target.clone(),
                src,
            ],
        )?;
        out.push(Suite::measured(&cfg.name, target, &v)?);
    }
    Ok(out)
}

/// The distinct test files of a C++ package's problems, in order of first appearance.
pub(crate) fn cpp_test_files(problems: &Path) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut reader = RecordReader::new(
        BufReader::new(std::fs::File::open(problems)?),
        &problems.display().to_string(),
        DEFAULT_MAX_LINE_BYTES,
    );
    while let Some(r) = reader.next_record::<clover_protocol::Problem>() {
        let (_, p) = r?;
        if let Some(cpp) = p.cpp {
            if !out.contains(&cpp.test_path) {
                out.push(cpp.test_path);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_files_of_cpp_problems_are_listed_once_each() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/clover-pack-context/tests/data/calibrated_cpp.jsonl");
        let dir = tempfile::tempdir().unwrap();
        let problems = dir.path().join("problems.jsonl");
        let mut out = String::new();
        let mut want: Vec<String> = Vec::new();
        for line in std::fs::read_to_string(data).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let c: clover_protocol::CalibratedProblem = serde_json::from_value(v.clone()).unwrap();
            let test = c.problem.cpp.unwrap().test_path;
            if !want.contains(&test) {
                want.push(test);
            }
            // Each problem twice, the second under another id: a test file shared by
            // problems is listed once.
            let mut again = v["problem"].clone();
            again["id"] = format!("{}~2", again["id"].as_str().unwrap()).into();
            out.push_str(&format!("{}\n{again}\n", v["problem"]));
        }
        std::fs::write(&problems, out).unwrap();
        assert!(want.len() >= 3, "{want:?}");
        assert_eq!(cpp_test_files(&problems).unwrap(), want);
    }
}
