//! The allowlist: legitimate uses of screened constructs, each in one exact shape, each with
//! its reason.

use crate::{Finding, Rule};

/// One legitimate use of a screened construct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allow {
    pub rule: Rule,
    /// The construct, exactly as [`Finding::construct`] names it.
    pub construct: &'static str,
    /// The shape it is allowed in: the finding's snippet must equal this text exactly
    /// (`None`: any shape).
    pub snippet: Option<&'static str>,
    /// Why this use cannot touch a verdict.
    pub reason: &'static str,
}

impl Allow {
    /// Whether this entry lets `finding` pass.
    pub fn matches(&self, finding: &Finding) -> bool {
        self.rule == finding.rule
            && self.construct == finding.construct
            && self.snippet.is_none_or(|s| s == finding.snippet)
    }
}

/// The legitimate uses found in the ground truths of the corpus (`cargo xtask screen-corpus`
/// lists every hit without it).
pub const ALLOWLIST: &[Allow] = &[];
