//! The chunks of a C++ source and the file they join into.
//!
//! pack-context cuts a long C++ source into chunks and makes one instance per chunk, with id
//! `<file instance id>#<chunk index>`; the `scoring` of each says where it stands
//! (`chunk_index`, `chunk_count`) and how the answers are joined (`join`, `"append"`: the
//! answers' code one after the other in chunk order, in one test file). The joined file is
//! what is compiled, run and scored, so every stage that splits or groups records must keep
//! the chunks of one source together: their instances shard by the file instance id and their
//! responses by the file response id (`<file instance id>@<model>`), the id sandbox-run gives
//! the one result of the file.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use crate::records::{Instance, Response};

/// The join rule pack-context records: chunk answers appended in chunk order.
pub const JOIN_APPEND: &str = "append";

/// Where a chunk instance stands among the chunks of its source, read from `scoring`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkOf {
    /// 0-based position among the chunks.
    pub index: u32,
    /// How many chunks the source has.
    pub count: u32,
    /// How the chunks' answers make one file (`scoring.join`), e.g. [`JOIN_APPEND`].
    pub join: String,
}

impl ChunkOf {
    /// The chunk facts of an instance's (or response's) `scoring`; `None` unless all three
    /// are there (`chunk_index` and `chunk_count` as numbers, `join` as a string).
    pub fn from_scoring(scoring: &BTreeMap<String, Value>) -> Option<ChunkOf> {
        let number = |k: &str| {
            scoring
                .get(k)
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        };
        Some(ChunkOf {
            index: number("chunk_index")?,
            count: number("chunk_count")?,
            join: scoring.get("join")?.as_str()?.to_string(),
        })
    }
}

/// The id of the file a chunk instance joins into: `instance_id` without its
/// `#<chunk index>`; any other id as it is. For a stage that has an instance's id and
/// `scoring` before the instance itself (pack-context deciding what to build).
pub fn file_instance_id<'a>(instance_id: &'a str, scoring: &BTreeMap<String, Value>) -> &'a str {
    ChunkOf::from_scoring(scoring)
        .and_then(|c| {
            instance_id
                .strip_suffix(&c.index.to_string())
                .and_then(|rest| rest.strip_suffix('#'))
        })
        .unwrap_or(instance_id)
}

impl Instance {
    /// The chunk facts of this instance, when it is one chunk of a C++ source.
    pub fn chunk(&self) -> Option<ChunkOf> {
        ChunkOf::from_scoring(&self.scoring)
    }

    /// The id of the whole file this chunk instance belongs to (its id without
    /// `#<chunk index>`); the id itself for any other instance.
    pub fn file_instance_id(&self) -> &str {
        file_instance_id(&self.id, &self.scoring)
    }
}

impl Response {
    /// The chunk facts of the instance this response answers.
    pub fn chunk(&self) -> Option<ChunkOf> {
        ChunkOf::from_scoring(&self.scoring)
    }

    /// The id of the file instance (see [`Instance::file_instance_id`]).
    pub fn file_instance_id(&self) -> &str {
        file_instance_id(&self.instance_id, &self.scoring)
    }

    /// The id of the one result of the whole file, `<file instance id>@<model>`, for a chunk
    /// response; the response id itself for any other.
    pub fn file_response_id(&self) -> Cow<'_, str> {
        if self.chunk().is_none() {
            return Cow::Borrowed(&self.id);
        }
        Cow::Owned(format!("{}@{}", self.file_instance_id(), self.model))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{ExecSpec, RecordKind, Task, SCHEMA_VERSION};
    use crate::Record;
    use serde_json::json;

    fn instance(id: &str, scoring: Value) -> Instance {
        Instance {
            kind: RecordKind::Instance,
            schema_version: SCHEMA_VERSION,
            id: id.into(),
            problem_id: "r/src/a.cc".into(),
            repo: "r".into(),
            task: Task::CppUnitTest,
            setting: "po".into(),
            answer_format: "file".into(),
            prompt: String::new(),
            messages: vec![],
            prompt_tokens: 0,
            context_files: vec![],
            reference: String::new(),
            exec: ExecSpec::default(),
            scoring: serde_json::from_value(scoring).unwrap(),
        }
    }

    fn response(i: &Instance) -> Response {
        Response {
            kind: RecordKind::Response,
            schema_version: SCHEMA_VERSION,
            id: format!("{}@m", i.id),
            instance_id: i.id.clone(),
            model: "m".into(),
            task: i.task,
            setting: i.setting.clone(),
            repo: i.repo.clone(),
            text: String::new(),
            error: None,
            generation: Default::default(),
            exec: i.exec.clone(),
            scoring: i.scoring.clone(),
        }
    }

    #[test]
    fn chunks_key_by_their_file_and_other_records_by_their_id() {
        let chunk = instance(
            "r/src/a.cc#cpp_unit_test#po#12",
            json!({"chunk_index": 12, "chunk_count": 13, "join": "append"}),
        );
        assert_eq!(
            chunk.chunk(),
            Some(ChunkOf {
                index: 12,
                count: 13,
                join: JOIN_APPEND.into()
            })
        );
        assert_eq!(chunk.file_instance_id(), "r/src/a.cc#cpp_unit_test#po");
        assert_eq!(chunk.shard_key(), "r/src/a.cc#cpp_unit_test#po");
        let r = response(&chunk);
        assert_eq!(r.file_response_id(), "r/src/a.cc#cpp_unit_test#po@m");
        assert_eq!(r.shard_key(), "r/src/a.cc#cpp_unit_test#po@m");

        // Without the chunk facts, or with an id that does not end in the chunk's index,
        // a record is its own file.
        for (id, scoring) in [
            ("r/t.py::test_a#coverage_test#po", json!({})),
            (
                "r/src/a.cc#cpp_unit_test#po#2",
                json!({"chunk_index": 2, "chunk_count": 3}),
            ),
            (
                "r/src/a.cc#cpp_unit_test#po#12",
                json!({"chunk_index": 2, "chunk_count": 13, "join": "append"}),
            ),
        ] {
            let i = instance(id, scoring);
            assert_eq!(i.file_instance_id(), id);
            assert_eq!(i.shard_key(), id);
            assert_eq!(response(&i).file_response_id(), format!("{id}@m"));
        }
    }
}
