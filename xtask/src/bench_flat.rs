//! Peak memory of sandbox-run and score on 1× and 10× the records (copies with new ids): it
//! must stay flat.

use std::io::{BufRead, BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bench_measure::{count_lines, measure, Measured};
use crate::bench_scores::MODELS;
use crate::step;

/// Records given to sandbox-run for the memory comparison (1×), and the copies (10×).
pub(crate) const FLAT_RECORDS: usize = 24;
pub(crate) const FLAT_COPIES: usize = 10;
/// Peak memory at 10× may be at most this many times the peak at 1×.
pub(crate) const FLAT_TARGET: f64 = 1.2;
/// Peak memory of one stage at 1× and at 10× the records.
pub(crate) struct Flat {
    pub(crate) stage: &'static str,
    pub(crate) what: String,
    pub(crate) records: usize,
    pub(crate) one: Measured,
    pub(crate) ten: Measured,
}

impl Flat {
    pub(crate) fn ratio(&self) -> f64 {
        self.ten.own_kib as f64 / self.one.own_kib.max(1) as f64
    }
}

pub(crate) fn flat_memory(
    bin: &Path,
    manifest: &str,
    work: &Path,
    results: &[String],
) -> Result<Vec<Flat>> {
    let mut out = Vec::new();
    // sandbox-run: the first Task I responses of the oracle, each a real pytest run.
    let responses = work.join(format!("responses-{}.jsonl", MODELS[0]));
    let mut picked = Vec::new();
    for line in BufReader::new(std::fs::File::open(&responses)?).lines() {
        let line = line?;
        if line.contains("\"task\":\"assertion_cloze\"") {
            picked.push(line);
            if picked.len() == FLAT_RECORDS {
                break;
            }
        }
    }
    let records = picked.len();
    let picked_file = work.join("flat-responses.jsonl");
    std::fs::write(&picked_file, picked.join("\n") + "\n")?;
    drop(picked);
    let mut runs = Vec::new();
    for copies in [1, FLAT_COPIES] {
        let input = work.join(format!("flat-responses-{copies}x.jsonl"));
        write_copies(std::slice::from_ref(&picked_file), copies, &input)?;
        let o = input.with_extension("results.jsonl");
        let (i, o_s) = (input.display().to_string(), o.display().to_string());
        step(&format!("clover-sandbox-run {i} ({copies}×)"));
        #[rustfmt::skip]
        runs.push(measure(&bin.join("clover-sandbox-run"), &[&i, "--manifest", manifest, "-o", &o_s])?);
        let (got, want) = (count_lines(&o)?, count_lines(&input)?);
        anyhow::ensure!(got == want, "{o_s} holds {got} results, not {want}");
    }
    out.push(Flat {
        stage: "sandbox-run",
        what: "oracle responses of Task I".into(),
        records,
        one: runs[0],
        ten: runs[1],
    });

    // score: every result of the run.
    let inputs: Vec<PathBuf> = results.iter().map(PathBuf::from).collect();
    let mut records = 0;
    for r in &inputs {
        records += count_lines(r)?;
    }
    let mut runs = Vec::new();
    for copies in [1, FLAT_COPIES] {
        let input = work.join(format!("flat-results-{copies}x.jsonl"));
        write_copies(&inputs, copies, &input)?;
        let o = input.with_extension("score.json").display().to_string();
        let i = input.display().to_string();
        step(&format!("clover-score {i} ({copies}×)"));
        #[rustfmt::skip]
        runs.push(measure(&bin.join("clover-score"), &[&i, "--by-repo", "--format", "json", "-o", &o])?);
    }
    out.push(Flat {
        stage: "score",
        what: "run results of both models".into(),
        records,
        one: runs[0],
        ten: runs[1],
    });
    Ok(out)
}

/// Writes `copies` copies of the record lines of `inputs`, streaming; copy `c > 0` gets `~c`
/// after its `id` and `instance_id`, so every record is new to the stage and the bytes are
/// otherwise the same.
pub(crate) fn write_copies(inputs: &[PathBuf], copies: usize, to: &Path) -> Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(to)?);
    for c in 0..copies {
        for input in inputs {
            for line in BufReader::new(std::fs::File::open(input)?).lines() {
                let mut line = line?;
                if c > 0 {
                    let v: serde_json::Value = serde_json::from_str(&line)?;
                    for key in ["id", "instance_id"] {
                        let Some(old) = v[key].as_str() else { continue };
                        let from = format!("\"{key}\":{}", serde_json::to_string(old)?);
                        let to = format!(
                            "\"{key}\":{}",
                            serde_json::to_string(&format!("{old}~{c}"))?
                        );
                        line = line.replacen(&from, &to, 1);
                    }
                }
                writeln!(out, "{line}")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_get_new_ids_and_keep_every_other_byte() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("in.jsonl");
        let lines = [
            r#"{"kind":"response","id":"x#1@m","instance_id":"x#1","text":"id x#1"}"#,
            r#"{"kind":"response","id":"x#2@m","instance_id":"x#2","text":""}"#,
        ];
        std::fs::write(&from, lines.join("\n") + "\n").unwrap();
        let to = dir.path().join("out.jsonl");
        write_copies(&[from], 3, &to).unwrap();
        let out = std::fs::read_to_string(&to).unwrap();
        let out: Vec<&str> = out.lines().collect();
        assert_eq!(out.len(), 6);
        assert_eq!(out[..2], lines[..]);
        assert_eq!(
            out[4],
            r#"{"kind":"response","id":"x#1@m~2","instance_id":"x#1~2","text":"id x#1"}"#
        );
        let ids: std::collections::BTreeSet<&str> =
            out.iter().map(|l| l.split('"').nth(7).unwrap()).collect();
        assert_eq!(ids.len(), 6, "{ids:?}");
    }
}
