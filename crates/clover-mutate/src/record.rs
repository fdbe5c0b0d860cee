//! The sidecar record of a problem's judged mutants, and applying a recorded mutant again.

use clover_protocol::{fnv1a64, KeptMutant, ProblemMutants, RecordKind, SCHEMA_VERSION};

use crate::{Calibration, Mutants, MutateError, Sampling, SourceFile};

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
