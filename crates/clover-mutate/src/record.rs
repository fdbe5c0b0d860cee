//! The sidecar record of a problem's judged mutants, and applying a recorded mutant again.

use clover_protocol::{fnv1a64, KeptMutant, ProblemMutants, RecordKind, SCHEMA_VERSION};

use crate::{
    keep_killed, mutants, problem_seed, Calibration, Mutant, Mutants, MutateError, Sampling,
    SourceFile, Verdict,
};

/// The hash a [`KeptMutant`] records of its original file: FNV-1a, 16 hex digits.
pub fn file_hash(text: &str) -> String {
    format!("{:016x}", fnv1a64(text.as_bytes()))
}

/// The `problem_mutants` record of one problem: the sample drawn from `files` with `sampling`
/// (`mutants`) as the ground truth judged it (`calibration`).
pub fn problem_mutants(
    problem_id: &str,
    sampling: &Sampling,
    files: &[SourceFile<'_>],
    mutants: &Mutants,
    calibration: Calibration,
) -> ProblemMutants {
    let hash_of = |path: &str| {
        files
            .iter()
            .find(|f| f.path == path)
            .map(|f| file_hash(f.text))
            .unwrap_or_default()
    };
    let kept = calibration
        .kept
        .into_iter()
        .map(|(m, killed_by)| KeptMutant {
            file_hash: hash_of(&m.path),
            id: m.id,
            path: m.path,
            operator: m.operator.as_str().to_string(),
            line: m.line,
            start_byte: m.start_byte as u32,
            end_byte: m.end_byte as u32,
            original: m.original,
            replacement: m.replacement,
            killed_by,
        })
        .collect();
    ProblemMutants {
        kind: RecordKind::ProblemMutants,
        schema_version: SCHEMA_VERSION,
        id: problem_id.to_string(),
        seed: sampling.seed,
        max_mutants: u32::try_from(sampling.max_mutants).unwrap_or(u32::MAX),
        candidates: u32::try_from(mutants.candidates).unwrap_or(u32::MAX),
        kept,
        survived: calibration.survived,
        invalid: calibration.invalid.into_iter().map(|(id, _)| id).collect(),
    }
}

/// Calibrate's whole mutation step for one problem: the sample of at most `max_mutants` mutants
/// of `files` drawn with the problem's seed (`run_seed` mixed with `problem_id`), each judged by
/// the ground truth through `run`, as the problem's record. One call, so the seed and K the
/// record states are the ones the sample was drawn with.
pub fn judge_problem<E: From<MutateError>>(
    problem_id: &str,
    files: &[SourceFile<'_>],
    max_mutants: usize,
    run_seed: u64,
    run: impl FnMut(&Mutant) -> Result<Verdict, E>,
) -> Result<ProblemMutants, E> {
    let sampling = Sampling {
        max_mutants,
        seed: problem_seed(run_seed, problem_id),
    };
    let sample = mutants(files, &sampling)?;
    let calibration = keep_killed(sample.mutants.clone(), run)?;
    Ok(problem_mutants(
        problem_id,
        &sampling,
        files,
        &sample,
        calibration,
    ))
}

/// The mutated text of `mutant`'s file, given the file's text as it is now. A file that is not
/// the one the mutant was made from is an error: the span would replace something else.
pub fn apply(mutant: &KeptMutant, text: &str) -> Result<String, MutateError> {
    let found = file_hash(text);
    let (start, end) = (mutant.start_byte as usize, mutant.end_byte as usize);
    if found != mutant.file_hash || text.get(start..end) != Some(mutant.original.as_str()) {
        return Err(MutateError::Stale {
            id: mutant.id.clone(),
            path: mutant.path.clone(),
            recorded: mutant.file_hash.clone(),
            found,
        });
    }
    Ok(format!(
        "{}{}{}",
        &text[..start],
        mutant.replacement,
        &text[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Focus, Operator};
    use clover_protocol::Language;

    #[derive(Debug, PartialEq)]
    enum RunError {
        Mutate,
    }

    impl From<MutateError> for RunError {
        fn from(_: MutateError) -> RunError {
            RunError::Mutate
        }
    }

    #[test]
    fn judge_problem_records_the_sample_it_drew_as_the_ground_truth_judged_it() {
        let text = "def f(x):\n    if x < 0:\n        return -x\n    return x * 2\n";
        let files = [SourceFile {
            path: "pkg/f.py",
            language: Language::Python,
            text,
            focus: Focus::Lines(vec![[2, 4]]),
        }];
        let mut runs = 0;
        let record = judge_problem("repo/tests/test_f.py::test_f", &files, 4, 9, |m| {
            runs += 1;
            Ok::<_, RunError>(if m.operator == Operator::Boundary {
                Verdict::Survived
            } else {
                Verdict::Killed {
                    tests: vec!["t".into()],
                }
            })
        })
        .unwrap();
        assert_eq!(runs, 4);
        assert_eq!(record.id, "repo/tests/test_f.py::test_f");
        assert_eq!(record.seed, problem_seed(9, "repo/tests/test_f.py::test_f"));
        assert_eq!(record.max_mutants, 4);
        assert!(record.candidates > 4);
        // Round-robin over the families draws the one boundary site among the first four.
        assert_eq!(record.survived, ["pkg/f.py:2:10:boundary:0"]);
        assert_eq!(record.kept.len(), 3);
        for kept in &record.kept {
            assert_eq!(kept.file_hash, file_hash(text));
            assert_eq!(kept.killed_by, ["t"]);
            assert!(apply(kept, text).unwrap().contains(&kept.replacement));
        }
        let bad = [SourceFile {
            focus: Focus::Lines(vec![[3, 9]]),
            ..files[0].clone()
        }];
        assert_eq!(
            judge_problem("p", &bad, 4, 9, |_| Ok(Verdict::Survived)),
            Err(RunError::Mutate)
        );
    }
}
