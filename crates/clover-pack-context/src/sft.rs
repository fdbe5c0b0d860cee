//! Supervised fine-tuning export: an instance's chat messages with the ground truth as the
//! assistant turn, and a split chosen by repository, weighted by examples ([`assign_splits`]).
//! A C++ source's reference goes with its first chunk only.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clover_protocol::{
    fnv1a64, Instance, Message, RecordKind, SftExample, JOIN_APPEND, SCHEMA_VERSION,
};

use crate::prompt::code_block;

/// Train, eval and test shares; they sum to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitRatios {
    pub train: f64,
    pub eval: f64,
    pub test: f64,
}

impl Default for SplitRatios {
    fn default() -> Self {
        SplitRatios {
            train: 0.8,
            eval: 0.1,
            test: 0.1,
        }
    }
}

impl std::str::FromStr for SplitRatios {
    type Err = String;

    /// `TRAIN,EVAL,TEST`, e.g. `0.8,0.1,0.1` or `8,1,1` (normalized to sum to 1).
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<f64> = s
            .split(',')
            .map(|p| p.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("invalid split `{s}`: give TRAIN,EVAL,TEST like 0.8,0.1,0.1"))?;
        let sum: f64 = parts.iter().sum();
        if parts.len() != 3 || parts.iter().any(|p| !p.is_finite() || *p < 0.0) || sum <= 0.0 {
            return Err(format!(
                "invalid split `{s}`: give three non-negative shares like 0.8,0.1,0.1"
            ));
        }
        Ok(SplitRatios {
            train: parts[0] / sum,
            eval: parts[1] / sum,
            test: parts[2] / sum,
        })
    }
}

/// The splits, in the order shares are given and files are listed.
pub const SPLITS: [&str; 3] = ["train", "eval", "test"];

impl SplitRatios {
    fn share(&self, split: usize) -> f64 {
        [self.train, self.eval, self.test][split]
    }
}

/// Where a repository's examples stand in the tie order: a point from a hash of its name, so
/// repositories of equal size are taken in an order no input order changes.
fn tie_key(repo: &str) -> u64 {
    fnv1a64(format!("clover-sft-split/{repo}").as_bytes())
}

/// The split of each repository, weighted by examples: whole repositories, largest first
/// (equal ones in hash order), each to the split furthest below its share of all the
/// examples (`share × total − taken`; the earlier split on a tie). A split whose share is 0
/// gets none. Every example of a repository stays in one split, so no repository's code is
/// both trained and evaluated on.
///
/// Weighting by examples is what makes the shares mean anything: splitting repositories by
/// count gave 668 eval, 4 train and 0 test examples when one repository held nearly all of
/// them. The price is that a repository's split depends on the others in the run.
pub fn assign_splits(
    counts: &BTreeMap<String, u64>,
    ratios: SplitRatios,
) -> BTreeMap<String, &'static str> {
    let total: u64 = counts.values().sum();
    let mut order: Vec<(&String, u64)> = counts.iter().map(|(r, n)| (r, *n)).collect();
    order.sort_by_key(|(repo, n)| (std::cmp::Reverse(*n), tie_key(repo)));
    let mut taken = [0u64; 3];
    let mut out = BTreeMap::new();
    for (repo, n) in order {
        let deficit = |s: usize| ratios.share(s) * total as f64 - taken[s] as f64;
        let best = (0..3)
            .filter(|&s| ratios.share(s) > 0.0)
            .fold(None, |best: Option<usize>, s| match best {
                Some(b) if deficit(b) >= deficit(s) => Some(b),
                _ => Some(s),
            })
            .expect("the shares sum to 1");
        taken[best] += n;
        out.insert(repo.clone(), SPLITS[best]);
    }
    out
}

/// How the examples fell into the splits, and what is wrong with that.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitReport {
    /// Per split, in [`SPLITS`] order: examples and repositories.
    pub sizes: [(u64, u64); 3],
    pub ratios: SplitRatios,
}

impl SplitReport {
    pub fn new(
        counts: &BTreeMap<String, u64>,
        assigned: &BTreeMap<String, &'static str>,
        ratios: SplitRatios,
    ) -> Self {
        let mut sizes = [(0, 0); 3];
        for (repo, n) in counts {
            let s = SPLITS
                .iter()
                .position(|s| Some(s) == assigned.get(repo))
                .expect("every repository is assigned");
            sizes[s].0 += n;
            sizes[s].1 += 1;
        }
        SplitReport { sizes, ratios }
    }

    fn total(&self) -> u64 {
        self.sizes.iter().map(|s| s.0).sum()
    }

    /// `train 537 (79.9%, 3 repositories), eval 68 (10.1%, 1 repository), test 67 (…)`.
    pub fn summary(&self) -> String {
        let total = self.total().max(1) as f64;
        SPLITS
            .iter()
            .zip(self.sizes)
            .map(|(name, (n, repos))| {
                format!(
                    "{name} {n} ({:.1}%, {repos} repositor{})",
                    100.0 * n as f64 / total,
                    if repos == 1 { "y" } else { "ies" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A warning per degenerate split: one with a share that got no example, or whose part
    /// of the examples is off its share by more than half the share (10% asked, under 5% or
    /// over 15% given) — what whole repositories of very unequal size do.
    pub fn warnings(&self) -> Vec<String> {
        let total = self.total();
        if total == 0 {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (i, name) in SPLITS.iter().enumerate() {
            let share = self.ratios.share(i);
            let (n, _) = self.sizes[i];
            let got = n as f64 / total as f64;
            if share > 0.0 && n == 0 {
                out.push(format!(
                    "split `{name}` is empty (its share is {:.0}%): the {} repositor{} cannot \
                     fill every split; add repositories or change --split",
                    100.0 * share,
                    self.sizes.iter().map(|s| s.1).sum::<u64>(),
                    if self.sizes.iter().map(|s| s.1).sum::<u64>() == 1 {
                        "y"
                    } else {
                        "ies"
                    },
                ));
            } else if (got - share).abs() > share / 2.0 {
                out.push(format!(
                    "split `{name}` holds {:.1}% of the examples, far from its share of {:.0}%: \
                     repositories are kept whole and their sizes differ too much; add \
                     repositories or change --split",
                    100.0 * got,
                    100.0 * share
                ));
            }
        }
        out
    }
}

/// Fine-tuning examples held back until every repository's count is known, in a spool file
/// (examples carry whole prompts: memory stays flat), then written with their splits.
#[derive(Debug)]
pub struct SftSplitter {
    ratios: SplitRatios,
    spool_path: PathBuf,
    spool: BufWriter<File>,
    counts: BTreeMap<String, u64>,
}

impl SftSplitter {
    /// A splitter whose spool is a new file at `spool_path`, removed when it is dropped.
    pub fn new(ratios: SplitRatios, spool_path: PathBuf) -> io::Result<Self> {
        let spool = BufWriter::new(File::create(&spool_path)?);
        Ok(SftSplitter {
            ratios,
            spool_path,
            spool,
            counts: BTreeMap::new(),
        })
    }

    pub fn push(&mut self, example: &SftExample) -> io::Result<()> {
        serde_json::to_writer(&mut self.spool, example)?;
        self.spool.write_all(b"\n")?;
        *self.counts.entry(example.repo.clone()).or_default() += 1;
        Ok(())
    }

    /// Assigns the splits, hands every example with its split to `write` in the order it was
    /// pushed, and, with `split_files`, writes each split's examples to its own file too
    /// (`sft.jsonl` gives `sft.train.jsonl`, `sft.eval.jsonl`, `sft.test.jsonl`; a split with
    /// no example gets an empty file, so a pipeline that reads all three does not fail).
    pub fn finish(
        mut self,
        mut write: impl FnMut(&SftExample) -> anyhow::Result<()>,
        split_files: Option<&Path>,
    ) -> anyhow::Result<SplitReport> {
        self.spool.flush()?;
        let assigned = assign_splits(&self.counts, self.ratios);
        let mut files = match split_files {
            None => Vec::new(),
            Some(path) => SPLITS
                .iter()
                .map(|s| {
                    let p = split_file(path, s);
                    File::create(&p)
                        .map(BufWriter::new)
                        .with_context(|| format!("cannot write {}", p.display()))
                })
                .collect::<anyhow::Result<Vec<_>>>()?,
        };
        let spool = BufReader::new(File::open(&self.spool_path)?);
        for line in spool.lines() {
            let mut example: SftExample = serde_json::from_str(&line?)?;
            let split = assigned[&example.repo];
            example.split = split.to_string();
            write(&example)?;
            if let Some(f) = files.get_mut(SPLITS.iter().position(|s| *s == split).unwrap()) {
                serde_json::to_writer(&mut *f, &example)?;
                f.write_all(b"\n")?;
            }
        }
        for f in &mut files {
            f.flush()?;
        }
        Ok(SplitReport::new(&self.counts, &assigned, self.ratios))
    }
}

impl Drop for SftSplitter {
    /// The spool goes whether the run finished or stopped.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.spool_path);
    }
}

/// `dir/sft.jsonl` and `train` give `dir/sft.train.jsonl`.
pub fn split_file(output: &Path, split: &str) -> PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    output.with_file_name(format!("{stem}.{split}.jsonl"))
}

/// The fine-tuning example for an instance: its messages and the ground truth as the answer,
/// in the code block the instruction asks for.
///
/// The chunks of one C++ source share the whole test file as their reference, and their
/// answers are appended into one file; were every chunk's assistant turn that file, the
/// appended answers a model learns to give would repeat every TEST once per chunk. So each
/// chunk gets its share of the reference the way the oracle answers: the first chunk the
/// whole file, the others nothing — they yield no example (`None`), since an empty answer is
/// nothing to learn. (Sharing the TESTs out by the chunk they exercise would need per-TEST
/// coverage, which calibrate does not record.)
///
/// Its `split` is empty: [`SftSplitter`] sets it once every example is counted.
pub fn sft_example(instance: &Instance) -> Option<SftExample> {
    if instance
        .chunk()
        .is_some_and(|c| c.join == JOIN_APPEND && c.index > 0)
    {
        return None;
    }
    let language = instance
        .exec
        .language
        .unwrap_or(clover_protocol::Language::Python);
    let mut messages = instance.messages.clone();
    messages.push(Message {
        role: "assistant".into(),
        content: code_block(language, &instance.reference),
    });
    Some(SftExample {
        kind: RecordKind::SftExample,
        schema_version: SCHEMA_VERSION,
        id: instance.id.clone(),
        repo: instance.repo.clone(),
        split: String::new(),
        task: instance.task,
        setting: instance.setting.clone(),
        messages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(r, n)| (r.to_string(), *n)).collect()
    }

    /// The case: one repository of 668 examples and one of 4. By repository count
    /// the big one fell in eval; by examples it is train, and the warning says test is empty.
    #[test]
    fn one_dominant_repository_goes_to_train_and_the_empty_split_is_warned_about() {
        let c = counts(&[("big", 668), ("small", 4)]);
        let r = SplitRatios::default();
        let a = assign_splits(&c, r);
        assert_eq!(a["big"], "train");
        assert_eq!(a["small"], "eval");
        let report = SplitReport::new(&c, &a, r);
        assert_eq!(report.sizes, [(668, 1), (4, 1), (0, 0)]);
        assert_eq!(
            report.summary(),
            "train 668 (99.4%, 1 repository), eval 4 (0.6%, 1 repository), \
             test 0 (0.0%, 0 repositories)"
        );
        let w = report.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with("split `eval` holds 0.6% of the examples, far from its share of 10%"),
            "{w:?}"
        );
        assert!(
            w[1].starts_with("split `test` is empty (its share is 10%)"),
            "{w:?}"
        );
    }

    #[test]
    fn many_repositories_of_unequal_size_meet_the_shares_by_examples() {
        // 40 repositories of 1 to 40 examples: 820 in all.
        let c: BTreeMap<String, u64> = (1..=40).map(|i| (format!("repo{i}"), i)).collect();
        let r = SplitRatios::default();
        let report = SplitReport::new(&c, &assign_splits(&c, r), r);
        let total = 820.0;
        for (i, share) in [0.8, 0.1, 0.1].iter().enumerate() {
            let got = report.sizes[i].0 as f64 / total;
            assert!((got - share).abs() < 0.01, "{report:?}");
        }
        assert!(report.warnings().is_empty(), "{:?}", report.warnings());
    }

    #[test]
    fn a_split_without_share_gets_nothing_and_is_no_warning() {
        let c = counts(&[("a", 5), ("b", 5), ("c", 1)]);
        let r: SplitRatios = "0,1,0".parse().unwrap();
        let a = assign_splits(&c, r);
        assert!(a.values().all(|s| *s == "eval"), "{a:?}");
        assert!(SplitReport::new(&c, &a, r).warnings().is_empty());
        assert!("1,2".parse::<SplitRatios>().is_err());
    }

    #[test]
    fn split_files_sit_beside_the_output() {
        assert_eq!(
            split_file(Path::new("out/sft.jsonl"), "train"),
            Path::new("out/sft.train.jsonl")
        );
        assert_eq!(
            split_file(Path::new("sft"), "eval"),
            Path::new("sft.eval.jsonl")
        );
    }
}
