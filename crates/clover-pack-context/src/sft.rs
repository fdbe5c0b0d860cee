//! Supervised fine-tuning export: an instance's chat messages with the ground truth as the
//! assistant turn, and a split chosen by repository. A C++ source's reference goes with its
//! first chunk only.

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

/// The split a repository belongs to: a point in [0, 1) from a hash of its name, compared
/// with the cumulative shares. A repository's split never depends on which other
/// repositories are in the run, so adding one moves no other.
pub fn split_of(repo: &str, ratios: SplitRatios) -> &'static str {
    let h = fnv1a64(format!("clover-sft-split/{repo}").as_bytes());
    let x = (h >> 11) as f64 / (1u64 << 53) as f64;
    if x < ratios.train {
        "train"
    } else if x < ratios.train + ratios.eval {
        "eval"
    } else {
        "test"
    }
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
pub fn sft_example(instance: &Instance, ratios: SplitRatios) -> Option<SftExample> {
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
        split: split_of(&instance.repo, ratios).to_string(),
        task: instance.task,
        setting: instance.setting.clone(),
        messages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_are_stable_and_follow_the_ratios() {
        let r = SplitRatios::default();
        assert_eq!(split_of("pyfix", r), split_of("pyfix", r));
        let n = 5000;
        let train = (0..n)
            .filter(|i| split_of(&format!("repo{i}"), r) == "train")
            .count();
        assert!((3800..4200).contains(&train), "{train}");
        let all_test: SplitRatios = "0,0,1".parse().unwrap();
        assert_eq!(split_of("pyfix", all_test), "test");
        assert!("1,2".parse::<SplitRatios>().is_err());
    }
}
