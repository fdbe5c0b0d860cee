//! Calibrate's half: keep the mutants the ground truth kills.

use crate::sample::Mutant;

/// What running the ground truth against one mutant showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A test failed (or errored, or the run crashed or timed out): the mutant is killed.
    /// `tests` names the failing tests, when the runner knows them.
    Killed { tests: Vec<String> },
    /// Every test passed: the mutant survives, likely equivalent to the original.
    Survived,
    /// The mutant could not be run at all (a C++ mutant that does not compile): neither killed
    /// nor survived, and never a bar for a model.
    Invalid { reason: String },
}

/// The ground truth's judgement of a problem's mutants.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Calibration {
    /// The mutants the ground truth kills, with the tests that killed each: the bar a
    /// candidate test must clear, in the sample's order.
    pub kept: Vec<(Mutant, Vec<String>)>,
    /// The ids of the mutants every ground-truth test passed on.
    pub survived: Vec<String>,
    /// The ids of the mutants that could not run, with why.
    pub invalid: Vec<(String, String)>,
}

/// Runs the ground truth against each mutant, in order, through `run`, and sorts them into
/// kept, survived and invalid. An error from `run` (the runner itself failed, not the tests)
/// stops and is returned: a partial judgement would keep too few mutants without saying so.
pub fn keep_killed<E>(
    mutants: Vec<Mutant>,
    mut run: impl FnMut(&Mutant) -> Result<Verdict, E>,
) -> Result<Calibration, E> {
    let mut calibration = Calibration::default();
    for mutant in mutants {
        match run(&mutant)? {
            Verdict::Killed { tests } => calibration.kept.push((mutant, tests)),
            Verdict::Survived => calibration.survived.push(mutant.id),
            Verdict::Invalid { reason } => calibration.invalid.push((mutant.id, reason)),
        }
    }
    Ok(calibration)
}
