//! GoogleTest verdicts. Compiling candidates with `--coverage` against a cached build of the
//! library under test is not written yet; what is here judges a run of a test binary from
//! its exit status and its `--gtest_output=xml:` report.

use clover_protocol::{LimitHit, Outcome, TestCase, TestOutcome};

use crate::spec::ExitStatus;

/// The verdict of a GoogleTest binary's run. A crash (signal, or a non-zero exit with no
/// report: `abort()` in a test writes no XML) is `killed`/`error`, never "0 tests, passed".
pub fn judge(
    exit: ExitStatus,
    limit: Option<LimitHit>,
    tests: Option<&[TestCase]>,
) -> (Outcome, Option<String>) {
    match limit {
        Some(LimitHit::WallClock) => return (Outcome::Timeout, None),
        Some(LimitHit::Memory) => return (Outcome::Oom, None),
        Some(l) => {
            return (
                Outcome::Killed,
                Some(format!("the run hit its {l:?} limit")),
            )
        }
        None => {}
    }
    let code = match exit {
        ExitStatus::Signal(s) => {
            return (
                Outcome::Killed,
                Some(format!("the test binary was killed by signal {s}")),
            )
        }
        ExitStatus::Code(c) => c,
    };
    let Some(tests) = tests else {
        return (
            Outcome::Error,
            Some(format!(
                "the test binary exited with {code} and wrote no report"
            )),
        );
    };
    let failed = tests.iter().any(|t| t.outcome == TestOutcome::Failed);
    let ran = tests.iter().any(|t| t.outcome != TestOutcome::Skipped);
    match (code, failed) {
        (0, false) if ran => (Outcome::Passed, None),
        (0, false) => (Outcome::Error, Some("no test ran".into())),
        (1, true) => (Outcome::Failed, None),
        _ => (
            Outcome::Error,
            Some(format!("exit code {code} disagrees with the report")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_without_xml_is_not_a_pass() {
        assert_eq!(judge(ExitStatus::Signal(6), None, None).0, Outcome::Killed);
        assert_eq!(judge(ExitStatus::Code(134), None, None).0, Outcome::Error);
        assert_eq!(
            judge(ExitStatus::Code(0), None, Some(&[])).0,
            Outcome::Error
        );
    }
}
