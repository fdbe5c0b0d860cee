//! Judge-only instances: C++ pairs calibrate could not run, kept for the LLM judge alone.
//!
//! CPP-UT-Bench evaluates its sampled pairs with no execution filter; clover's execution
//! metrics need a ground truth that compiles, passes and is measured, so calibrate excludes
//! the pairs whose ground truth does not. `pack-context --judge-only-excluded` still builds
//! instances for those pairs, each marked with `scoring.judge_only`: the exclusion reason
//! calibrate gave (`compile_error`, `failed`, …). The mark travels with the instance's
//! `scoring` into its responses and run results, so no record gains a field: generate asks
//! the model as usual, sandbox-run runs nothing and gives outcome `judge_only` (the answer's
//! code still taken out, for the judge), and score counts such results in no execution
//! metric but puts them to the judge.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::records::{ExclusionReason, Instance, Response, RunResult};

/// The `scoring` key that marks a judge-only instance; its value is the exclusion reason.
pub const JUDGE_ONLY: &str = "judge_only";

/// Why an instance is judge-only (calibrate's exclusion reason, as the wire writes it), read
/// from its `scoring`; `None` for an instance that runs.
pub fn judge_only(scoring: &BTreeMap<String, Value>) -> Option<&str> {
    scoring.get(JUDGE_ONLY)?.as_str().filter(|s| !s.is_empty())
}

/// The value pack-context writes under [`JUDGE_ONLY`] for a pair calibrate excluded.
pub fn judge_only_mark(reason: ExclusionReason) -> Value {
    serde_json::to_value(reason).expect("an exclusion reason serializes")
}

impl Instance {
    /// Why this instance is judge-only ([`judge_only`]), if it is.
    pub fn judge_only(&self) -> Option<&str> {
        judge_only(&self.scoring)
    }
}

impl Response {
    /// Why the instance this response answers is judge-only, if it is.
    pub fn judge_only(&self) -> Option<&str> {
        judge_only(&self.scoring)
    }
}

impl RunResult {
    /// Why this result's instance is judge-only, if it is.
    pub fn judge_only(&self) -> Option<&str> {
        judge_only(&self.scoring)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_mark_is_the_reason_and_an_empty_or_absent_one_is_none() {
        let mark = judge_only_mark(ExclusionReason::CompileError);
        assert_eq!(mark, json!("compile_error"));
        let scoring: BTreeMap<String, Value> = [(JUDGE_ONLY.to_string(), mark)].into();
        assert_eq!(judge_only(&scoring), Some("compile_error"));
        for other in [json!(""), json!(true), json!(null)] {
            let scoring: BTreeMap<String, Value> = [(JUDGE_ONLY.to_string(), other)].into();
            assert_eq!(judge_only(&scoring), None);
        }
        assert_eq!(judge_only(&BTreeMap::new()), None);
    }
}
