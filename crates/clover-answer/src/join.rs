//! C++: the answers to the chunks of one source, joined into the one test file that is
//! compiled, run and scored.
//!
//! A long source is cut into chunks and each chunk is its own instance, answered on its own;
//! pack-context records how the answers make one file (`scoring.join`). The only rule is
//! `append`: each chunk's code (as [`assemble_candidate`] takes it from the answer), in chunk
//! order, one after the other, between the first chunk's `exec.prefix` and `exec.suffix`. A
//! chunk whose answer holds no code adds nothing and is named in
//! [`JoinedFile::without_code`]; when no chunk has code, the file is `no_code`. A chunk whose
//! response is missing altogether makes the file [`JoinError::Missing`]: the input does not
//! hold the whole answer, and running a part would score the model on what it never wrote.

use clover_protocol::{ChunkOf, Response, JOIN_APPEND};

use crate::extract::{assemble_candidate, Candidate, NoCode};

/// The test file built from the answers to every chunk of one source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedFile {
    /// The file, or why there is none (no chunk's answer holds code).
    pub candidate: Result<Candidate, NoCode>,
    /// Chunks whose answer added no code, by index, with the reason.
    pub without_code: Vec<(u32, NoCode)>,
}

/// Why the chunk answers of one source cannot be joined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    #[error(
        "no response for chunk(s) {} of the {count} of this source: the input must hold every \
         chunk's response (join generate's shards before sandbox-run, or shard both by file, \
         as --shard does)",
        list(missing)
    )]
    Missing { missing: Vec<u32>, count: u32 },
    #[error("unknown join rule `{0}` (this build knows `append`)")]
    UnknownRule(String),
    #[error("the chunk responses of one source disagree: {0}")]
    Inconsistent(String),
}

fn list(indices: &[u32]) -> String {
    indices
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Joins the responses to the chunks of one source (any order; see the module doc). Every
/// response must carry chunk facts ([`ChunkOf`]) with the same count and rule.
pub fn assemble_file(chunks: &[&Response]) -> Result<JoinedFile, JoinError> {
    let mut facts: Vec<(ChunkOf, &Response)> = chunks
        .iter()
        .map(|r| {
            r.chunk()
                .map(|c| (c, *r))
                .ok_or_else(|| JoinError::Inconsistent(format!("{} is not a chunk", r.id)))
        })
        .collect::<Result<_, _>>()?;
    facts.sort_by_key(|(c, _)| c.index);
    let Some((first, _)) = facts.first() else {
        return Err(JoinError::Inconsistent("no chunk at all".into()));
    };
    let (count, rule) = (first.count, first.join.clone());
    if rule != JOIN_APPEND {
        return Err(JoinError::UnknownRule(rule));
    }
    for pair in facts.windows(2) {
        if pair[0].0.index == pair[1].0.index {
            return Err(JoinError::Inconsistent(format!(
                "two responses for chunk {}",
                pair[0].0.index
            )));
        }
    }
    if let Some((c, r)) = facts
        .iter()
        .find(|(c, _)| c.count != count || c.join != rule || c.index >= count)
    {
        return Err(JoinError::Inconsistent(format!(
            "{} says chunk {} of {} joined by `{}`, another chunk {count} joined by `{rule}`",
            r.id, c.index, c.count, c.join
        )));
    }
    let missing: Vec<u32> = (0..count)
        .filter(|i| !facts.iter().any(|(c, _)| c.index == *i))
        .collect();
    if !missing.is_empty() {
        return Err(JoinError::Missing { missing, count });
    }
    let exec = &facts[0].1.exec;
    let mut answer = String::new();
    let mut without_code = Vec::new();
    for (c, r) in &facts {
        match assemble_candidate(r) {
            Ok(one) => {
                if !answer.is_empty() {
                    // A blank line between the parts, as between any two definitions.
                    answer.push('\n');
                }
                answer.push_str(&one.answer);
                if !answer.ends_with('\n') {
                    answer.push('\n');
                }
            }
            Err(why) => without_code.push((c.index, why)),
        }
    }
    if answer.is_empty() {
        let why = if count == 1 {
            without_code[0].1.clone()
        } else {
            NoCode::NoChunkCode { count }
        };
        return Ok(JoinedFile {
            candidate: Err(why),
            without_code,
        });
    }
    Ok(JoinedFile {
        candidate: Ok(Candidate::between(exec, answer)),
        without_code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clover_protocol::{ExecSpec, Language, RecordKind, Task, SCHEMA_VERSION};
    use serde_json::json;

    fn chunk(index: u32, count: u32, text: &str) -> Response {
        Response {
            kind: RecordKind::Response,
            schema_version: SCHEMA_VERSION,
            id: format!("r/src/a.cc#cpp_unit_test#po#{index}@m"),
            instance_id: format!("r/src/a.cc#cpp_unit_test#po#{index}"),
            model: "m".into(),
            task: Task::CppUnitTest,
            setting: "po".into(),
            repo: "r".into(),
            text: text.into(),
            error: None,
            generation: Default::default(),
            exec: ExecSpec {
                repo: "r".into(),
                language: Some(Language::Cpp),
                candidate_path: "tests/tmp_cand_1_test.cc".into(),
                ..ExecSpec::default()
            },
            scoring: serde_json::from_value(
                json!({"chunk_index": index, "chunk_count": count, "join": "append"}),
            )
            .unwrap(),
        }
    }

    #[test]
    fn chunks_append_in_order_and_a_chunk_without_code_adds_nothing() {
        let a = chunk(0, 3, "```cpp\n#include \"a.h\"\nTEST(A, One) {}\n```");
        let b = chunk(1, 3, "I cannot test this part.");
        let c = chunk(2, 3, "```cpp\nTEST(A, Two) {}\n```\n");
        let joined = assemble_file(&[&c, &b, &a]).unwrap();
        let candidate = joined.candidate.unwrap();
        assert_eq!(
            candidate.text,
            "#include \"a.h\"\nTEST(A, One) {}\n\nI cannot test this part.\n\nTEST(A, Two) {}\n",
            "prose without a fence is taken as code, as for any answer"
        );
        let mut b = chunk(1, 3, "");
        b.error = Some("HTTP 500".into());
        let joined = assemble_file(&[&a, &b, &c]).unwrap();
        assert_eq!(
            joined.candidate.unwrap().text,
            "#include \"a.h\"\nTEST(A, One) {}\n\nTEST(A, Two) {}\n"
        );
        assert_eq!(
            joined.without_code,
            vec![(1, NoCode::ResponseError("HTTP 500".into()))]
        );
    }

    #[test]
    fn no_code_anywhere_is_no_code_and_a_missing_chunk_is_an_error() {
        let joined = assemble_file(&[&chunk(0, 2, ""), &chunk(1, 2, "  ")]).unwrap();
        assert_eq!(joined.candidate, Err(NoCode::NoChunkCode { count: 2 }));
        assert_eq!(joined.without_code.len(), 2);
        // One chunk: the same outcome as the answer alone.
        let joined = assemble_file(&[&chunk(0, 1, "")]).unwrap();
        assert_eq!(joined.candidate, Err(NoCode::Empty));

        let e = assemble_file(&[&chunk(1, 4, "x"), &chunk(3, 4, "y")]).unwrap_err();
        assert_eq!(
            e,
            JoinError::Missing {
                missing: vec![0, 2],
                count: 4
            }
        );
        assert!(e.to_string().contains("chunk(s) 0, 2 of the 4"), "{e}");

        let e = assemble_file(&[&chunk(0, 2, "x"), &chunk(1, 3, "y")]).unwrap_err();
        assert!(matches!(e, JoinError::Inconsistent(_)), "{e}");
        let e = assemble_file(&[&chunk(0, 1, "x"), &chunk(0, 1, "y")]).unwrap_err();
        assert!(matches!(e, JoinError::Inconsistent(_)), "{e}");
        let mut odd = chunk(0, 1, "x");
        odd.scoring.insert("join".into(), json!("interleave"));
        assert_eq!(
            assemble_file(&[&odd]).unwrap_err(),
            JoinError::UnknownRule("interleave".into())
        );
    }
}
