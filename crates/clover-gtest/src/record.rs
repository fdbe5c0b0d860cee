//! clover's own record of a GoogleTest run, and the check of the run's XML report against it.
//!
//! Every test binary clover links holds `clover_listener.cc`: a static object appends a
//! listener to GoogleTest before `main` runs (whoever owns `main`), and the listener writes
//! each failed test as it ends, and the counts when the program's tests are done, into the
//! run's report channel — a pipe only the host reads, written before GoogleTest writes its
//! XML. A binary that changes its report afterwards (a static destructor, an `atexit` or
//! `quick_exit` handler, a signal handler that rewrites the file and exits 0) leaves a report
//! that no longer matches the record: the run is `forged`.
//!
//! A test shares the binary's process and could write into the channel itself; it would have
//! to find the descriptor, stop the listener's own lines and forge a consistent record
//! before the report (docs/THREAT-MODEL.md).

use std::collections::BTreeSet;

use clover_protocol::{Outcome, TestCase, TestOutcome};
use clover_sandbox::{ChannelBytes, ExitStatus, RunOutput};

/// The listener's source, compiled once per compiler, flags and include folders.
pub(crate) const LISTENER_SOURCE: &str = include_str!("clover_listener.cc");

/// What the listener sent: the failed tests (suite, name) and the counts of its last
/// `clover-end` line.
#[derive(Debug, Default, PartialEq, Eq)]
struct Record {
    failed: BTreeSet<(String, String)>,
    end: Option<(u64, u64)>,
}

fn parse(channel: &ChannelBytes) -> Result<Record, String> {
    let stray =
        |why: &str| format!("the report channel holds bytes that are not clover's record ({why})");
    if channel.total != channel.bytes.len() as u64 {
        return Err(stray("more than the record can hold"));
    }
    let text = std::str::from_utf8(&channel.bytes).map_err(|_| stray("not text"))?;
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(stray("a line cut short"));
    }
    let mut record = Record::default();
    // A program that runs its tests again starts its record again: the report is the last
    // run's, so each `clover-end` closes the failures since the one before.
    let mut pending = BTreeSet::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields[..] {
            ["clover-failed", suite, name] => {
                pending.insert((suite.to_string(), name.to_string()));
            }
            ["clover-end", passed, failed] => {
                let n = |s: &str| {
                    s.parse::<u64>()
                        .map_err(|_| stray("a count that is not one"))
                };
                let (passed, failed) = (n(passed)?, n(failed)?);
                if failed != pending.len() as u64 {
                    return Err(stray("counts that disagree with its own lines"));
                }
                record = Record {
                    failed: std::mem::take(&mut pending),
                    end: Some((passed, failed)),
                };
            }
            _ => return Err(stray("a line of no known kind")),
        }
    }
    // Failures after the last end: a run of the tests that never finished.
    if !pending.is_empty() {
        record = Record {
            failed: pending,
            end: None,
        };
    }
    Ok(record)
}

/// Whether the record in `channel` vouches for the report `tests` of a run that exited with
/// `code`: the listener finished (a binary that exits before GoogleTest's end left a report
/// someone else completed), the report's failed tests are exactly the record's, and it has as
/// many passed tests as GoogleTest counted. `Err` says what disagreed.
pub(crate) fn check(
    channel: Option<&ChannelBytes>,
    code: i32,
    tests: &[TestCase],
) -> Result<(), String> {
    let Some(channel) = channel else {
        return Err("the run had no report channel".into());
    };
    let record = parse(channel)?;
    let Some((passed, _)) = record.end else {
        return Err(format!(
            "the test binary exited with {code} before GoogleTest finished its tests, yet it \
             left a report"
        ));
    };
    let reported_failed: BTreeSet<(String, String)> = tests
        .iter()
        .filter(|t| matches!(t.outcome, TestOutcome::Failed | TestOutcome::Error))
        .map(|t| (t.classname.clone(), t.name.clone()))
        .collect();
    if reported_failed != record.failed {
        let show = |s: &BTreeSet<(String, String)>| {
            let names: Vec<String> = s.iter().take(5).map(|(c, n)| format!("{c}.{n}")).collect();
            match names.is_empty() {
                true => "none".to_string(),
                false => names.join(", "),
            }
        };
        return Err(format!(
            "the report's failed tests ({}) are not those GoogleTest saw fail ({})",
            show(&reported_failed),
            show(&record.failed)
        ));
    }
    let reported_passed = tests
        .iter()
        .filter(|t| t.outcome == TestOutcome::Passed)
        .count() as u64;
    if reported_passed != passed {
        return Err(format!(
            "the report has {reported_passed} passed tests where GoogleTest counted {passed}"
        ));
    }
    Ok(())
}

/// Why the report of a run judged `outcome` is forged, when the binary holds the listener
/// (`recorded`) and the judge would credit the report (a pass or a failure of a binary that
/// exited by itself); `None` when the record vouches for it or there is nothing to check.
pub(crate) fn forged(
    recorded: bool,
    run: &RunOutput,
    outcome: Outcome,
    tests: Option<&[TestCase]>,
) -> Option<String> {
    if !recorded || !matches!(outcome, Outcome::Passed | Outcome::Failed) {
        return None;
    }
    let (ExitStatus::Code(code), Some(tests)) = (run.exit, tests) else {
        return None;
    };
    check(run.channel.as_ref(), code, tests).err()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(text: &str) -> ChannelBytes {
        ChannelBytes {
            bytes: text.as_bytes().to_vec(),
            total: text.len() as u64,
        }
    }

    fn case(classname: &str, name: &str, outcome: TestOutcome) -> TestCase {
        TestCase {
            name: name.into(),
            classname: classname.into(),
            outcome,
            message: None,
            duration_secs: 0.0,
        }
    }

    #[test]
    fn a_report_the_record_vouches_for_passes() {
        let tests = [
            case("Calc", "Adds", TestOutcome::Passed),
            case("Calc", "Subtracts", TestOutcome::Failed),
            case("Calc", "DISABLED_Later", TestOutcome::Skipped),
        ];
        let ok = channel("clover-failed\tCalc\tSubtracts\nclover-end\t1\t1\n");
        assert_eq!(check(Some(&ok), 1, &tests), Ok(()));
        // A program that runs its tests twice: the report is the last run's.
        let twice = channel(
            "clover-failed\tCalc\tAdds\nclover-end\t0\t1\nclover-failed\tCalc\tSubtracts\nclover-end\t1\t1\n",
        );
        assert_eq!(check(Some(&twice), 1, &tests), Ok(()));
        let then_clean = channel("clover-failed\tCalc\tAdds\nclover-end\t0\t1\nclover-end\t1\t0\n");
        let passing = [case("Calc", "Adds", TestOutcome::Passed)];
        assert_eq!(check(Some(&then_clean), 0, &passing), Ok(()));
    }

    #[test]
    fn a_report_that_differs_from_the_record_is_named() {
        let all_passed = [
            case("Calc", "Adds", TestOutcome::Passed),
            case("Calc", "Subtracts", TestOutcome::Passed),
        ];
        let record = channel("clover-failed\tCalc\tSubtracts\nclover-end\t1\t1\n");
        let why = check(Some(&record), 0, &all_passed).unwrap_err();
        assert!(
            why.contains("GoogleTest saw fail (Calc.Subtracts)"),
            "{why}"
        );
        // A failure removed from the report.
        let why = check(Some(&record), 0, &all_passed[..1]).unwrap_err();
        assert!(why.contains("failed tests (none)"), "{why}");
        // A passing test added to it.
        let more = [
            case("Calc", "Adds", TestOutcome::Passed),
            case("Calc", "Planted", TestOutcome::Passed),
        ];
        let why = check(Some(&channel("clover-end\t1\t0\n")), 0, &more).unwrap_err();
        assert!(
            why.contains("2 passed tests where GoogleTest counted 1"),
            "{why}"
        );
        // No end: the binary left before GoogleTest did.
        let why = check(Some(&channel("")), 0, &more).unwrap_err();
        assert!(why.contains("before GoogleTest finished"), "{why}");
        assert!(check(None, 0, &more).is_err());
    }

    #[test]
    fn bytes_that_are_not_the_record_are_not_believed() {
        let tests = [case("Calc", "Adds", TestOutcome::Passed)];
        for bad in [
            "clover-end\t1\t0",
            "clover-end\t1\t0\nhello\n",
            "clover-end\tone\t0\n",
            "clover-end\t1\t1\n",
        ] {
            let why = check(Some(&channel(bad)), 0, &tests).unwrap_err();
            assert!(why.contains("not clover's record"), "{bad:?}: {why}");
        }
        let mut cut = channel("clover-end\t1\t0\n");
        cut.total += 10;
        assert!(check(Some(&cut), 0, &tests).is_err());
    }
}
