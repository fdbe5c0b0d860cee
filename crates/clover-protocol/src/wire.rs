//! How a field that may be absent is written: never as JSON `null`.
//!
//! A reader that learns column types from the data — Hugging Face `datasets` and the Arrow JSON
//! reader under it take them from the first 10 MiB of the first file — types a column that is
//! `null` there as `null`, and then refuses the same column holding a string in the next file
//! (`Couldn't cast array of type string to null`): an `error` that is never set in one model's
//! responses and set in another's, a `signal` set only far into a joined results file. So each
//! absent value is written as a value of its own type that the field never otherwise holds, and
//! read back as absent:
//!
//! - text and names (`error`, `message`, `limit_hit`, `language`, …): `""` ([`empty`]);
//! - counts, codes and settings that are never negative (`exit_code`, `signal`,
//!   `http_status`, `max_tokens`, `seed`): `-1` ([`minus_one`]); temperature and top_p:
//!   `-1.0` ([`minus_one_f64`]), a float, as a column of integers refuses `0.2`;
//! - the frequency and presence penalties, whose range (-2 to 2) holds -1: `-9`
//!   ([`PENALTY_UNSET`]);
//! - a list (`stop`): `[]` ([`empty_list`]);
//! - a record part (an exclusion, token usage): the part with its fields so written.
//!
//! `scoring`, whose keys and value types differ by task, is written as one JSON text
//! ([`scoring`]): as an object, `datasets` can only give it its opaque `Json` extension type,
//! and two tasks' keys make two struct types that do not cast into each other.
//!
//! Readers also take `null` and a `scoring` object, as schema version 1 wrote them.

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, IntoDeserializer};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What an absent frequency or presence penalty is written as: outside the -2 to 2 that
/// OpenAI's API and vLLM accept, where -1 is a penalty one may send.
pub const PENALTY_UNSET: f64 = -9.0;

/// `Option<T>` for a `T` written as a string (text, or a unit enum): absent is `""`, and an
/// empty string reads as absent.
pub mod empty {
    use super::*;

    pub fn serialize<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => v.serialize(s),
            None => s.serialize_str(""),
        }
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(s) if s.is_empty() => Ok(None),
            Some(s) => T::deserialize(s.into_deserializer()).map(Some),
        }
    }
}

/// `Option<T>` for an integer that is never negative: absent is `-1`, and so reads.
pub mod minus_one {
    use super::*;

    pub fn serialize<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => v.serialize(s),
            None => s.serialize_i64(-1),
        }
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        match Option::<serde_json::Number>::deserialize(d)? {
            None => Ok(None),
            Some(n) if n.as_f64() == Some(-1.0) => Ok(None),
            Some(n) => serde_json::from_value(serde_json::Value::Number(n))
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// `Option<f64>` for a sampling value that is never negative (temperature, top_p): absent is
/// `-1.0`, and so reads. A float even when absent, so the column is never typed as integers.
pub mod minus_one_f64 {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(v.unwrap_or(-1.0))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.filter(|v| *v != -1.0))
    }
}

/// `Option<f64>` for a sampling penalty: absent is [`PENALTY_UNSET`], and so reads.
pub mod penalty {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(v.unwrap_or(PENALTY_UNSET))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.filter(|p| *p != PENALTY_UNSET))
    }
}

/// `Option<Vec<T>>`: absent is `[]`, and an empty list reads as absent.
pub mod empty_list {
    use super::*;

    pub fn serialize<T: Serialize, S: Serializer>(
        v: &Option<Vec<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        v.as_deref().unwrap_or(&[]).serialize(s)
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<T>>, D::Error> {
        Ok(Option::<Vec<T>>::deserialize(d)?.filter(|v| !v.is_empty()))
    }
}

/// A `scoring` map, written as the JSON text of its object (keys sorted); read from that text
/// or, as version 1 wrote it, from the object itself.
pub mod scoring {
    use super::*;

    type Scoring = BTreeMap<String, serde_json::Value>;

    pub fn serialize<S: Serializer>(v: &Scoring, s: S) -> Result<S::Ok, S::Error> {
        let text = serde_json::to_string(v).map_err(serde::ser::Error::custom)?;
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Scoring, D::Error> {
        // Buffered as a value: the reader never sees `untagged` on a wire type, and the two
        // forms are told apart by their JSON type alone.
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(text) => serde_json::from_str(&text).map_err(|e| {
                serde::de::Error::custom(format!("`scoring` is not the text of an object: {e}"))
            }),
            serde_json::Value::Object(map) => Ok(map.into_iter().collect()),
            other => Err(serde::de::Error::custom(format!(
                "`scoring` must be the text of an object, found {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::records::*;

    /// Every path in `v` that holds a JSON `null`.
    fn nulls(v: &Value, at: &str, out: &mut Vec<String>) {
        match v {
            Value::Null => out.push(at.to_string()),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| nulls(x, &format!("{at}[{i}]"), out)),
            Value::Object(o) => o
                .iter()
                .for_each(|(k, x)| nulls(x, &format!("{at}.{k}"), out)),
            _ => {}
        }
    }

    fn no_nulls<T: serde::Serialize>(record: &T) -> Value {
        let v = serde_json::to_value(record).unwrap();
        let mut found = Vec::new();
        nulls(&v, "", &mut found);
        assert!(found.is_empty(), "null at {found:?} in {v}");
        v
    }

    fn run_result() -> RunResult {
        RunResult {
            kind: RecordKind::RunResult,
            schema_version: SCHEMA_VERSION,
            id: "r@m".into(),
            instance_id: "r".into(),
            model: "m".into(),
            task: None,
            setting: "po".into(),
            repo: "pyfix".into(),
            outcome: Outcome::ApiError,
            tests: vec![TestCase {
                name: "t".into(),
                classname: "c".into(),
                outcome: TestOutcome::Passed,
                message: None,
                duration_secs: 0.0,
            }],
            coverage: vec![],
            limit_hit: None,
            exit_code: None,
            signal: None,
            candidate: None,
            answer: None,
            message: None,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            scoring: [("mask".to_string(), json!("<MASK>"))].into(),
            duration_secs: 0.0,
            mutation: Default::default(),
        }
    }

    fn response() -> Response {
        Response {
            kind: RecordKind::Response,
            schema_version: SCHEMA_VERSION,
            id: "i@m".into(),
            instance_id: "i".into(),
            model: "m".into(),
            task: Task::AssertionCloze,
            setting: "po".into(),
            repo: "pyfix".into(),
            text: String::new(),
            error: None,
            generation: Generation::default(),
            exec: ExecSpec::default(),
            scoring: Default::default(),
        }
    }

    #[test]
    fn absent_values_are_written_as_values_of_their_type_and_read_back_absent() {
        let r = run_result();
        let v = no_nulls(&r);
        assert_eq!(v["task"], "");
        assert_eq!(v["limit_hit"], "");
        assert_eq!(v["exit_code"], -1);
        assert_eq!(v["signal"], -1);
        assert_eq!(v["message"], "");
        assert_eq!(v["tests"][0]["message"], "");
        assert_eq!(v["scoring"], r#"{"mask":"<MASK>"}"#);
        assert_eq!(v["mutation"]["kept"], -1);
        assert_eq!(v["mutation"]["operators"], json!([]));
        assert_eq!(serde_json::from_value::<RunResult>(v).unwrap(), r);

        let g = response();
        let v = no_nulls(&g);
        let gen = &v["generation"];
        assert_eq!(gen["temperature"], -1.0);
        assert!(gen["temperature"].is_f64(), "{gen}");
        assert_eq!(gen["frequency_penalty"], PENALTY_UNSET_JSON);
        assert_eq!(gen["seed"], -1);
        assert_eq!(gen["stop"], json!([]));
        assert_eq!(
            gen["usage"],
            json!({"prompt_tokens": -1, "completion_tokens": -1})
        );
        assert_eq!(v["exec"]["language"], "");
        assert_eq!(v["scoring"], "{}");
        assert_eq!(serde_json::from_value::<Response>(v).unwrap(), g);
    }

    const PENALTY_UNSET_JSON: f64 = super::PENALTY_UNSET;

    #[test]
    fn set_values_round_trip_including_those_next_to_the_markers() {
        let mut r = run_result();
        r.task = Some(Task::CoverageTest);
        r.limit_hit = Some(LimitHit::WallClock);
        r.exit_code = Some(0);
        r.signal = Some(9);
        r.message = Some("boom".into());
        r.mutation = Mutation {
            kept: Some(0),
            run: 0,
            killed: 0,
            operators: vec![OperatorKills {
                operator: "boundary".into(),
                kept: 0,
                killed: 0,
            }],
            survived: vec!["a.py:1:1:boundary:0".into()],
            cold: 1,
            duration_secs: 0.5,
        };
        let v = no_nulls(&r);
        assert_eq!(v["limit_hit"], "wall_clock");
        assert_eq!(v["mutation"]["kept"], 0);
        assert_eq!(serde_json::from_value::<RunResult>(v).unwrap(), r);

        let mut g = response();
        g.error = Some("HTTP 500".into());
        g.generation = Generation {
            adapter: "openai".into(),
            model_name: Some("org/m".into()),
            temperature: Some(0.0),
            top_p: Some(1.0),
            max_tokens: Some(0),
            seed: Some(0),
            // -1 is a penalty one may send; only the marker reads as absent.
            frequency_penalty: Some(-1.0),
            presence_penalty: Some(2.0),
            stop: Some(vec!["\n".into()]),
            usage: Some(TokenUsage {
                prompt_tokens: 0,
                completion_tokens: 3,
            }),
            http_status: Some(500),
            ..Generation::default()
        };
        let v = no_nulls(&g);
        assert_eq!(serde_json::from_value::<Response>(v).unwrap(), g);
    }

    #[test]
    fn version_1_records_with_nulls_and_a_scoring_object_still_read() {
        let mut v = serde_json::to_value(run_result()).unwrap();
        for k in [
            "task",
            "limit_hit",
            "exit_code",
            "signal",
            "candidate",
            "message",
        ] {
            v[k] = Value::Null;
        }
        v["tests"][0]["message"] = Value::Null;
        v["scoring"] = json!({"mask": "<MASK>"});
        v["schema_version"] = json!(1);
        v.as_object_mut().unwrap().remove("answer");
        v.as_object_mut().unwrap().remove("mutation");
        let read: RunResult = serde_json::from_value(v).unwrap();
        assert_eq!(read.scoring, run_result().scoring);
        assert_eq!(read.exit_code, None);
        assert_eq!(read.mutation, Mutation::default());

        let calibrated = json!({
            "kind": "calibrated_problem", "schema_version": 1, "id": "p", "repo": "r",
            "problem": {"kind": "problem", "schema_version": 1, "id": "p", "repo": "r",
                        "language": "cpp", "python": null, "cpp": null},
            "exclusion": null, "base": [], "empty": [], "tiers": [], "unique_blocks": [],
            "targets": [], "runs": []
        });
        let read: CalibratedProblem = serde_json::from_value(calibrated).unwrap();
        assert_eq!(read.exclusion, None);
        let written = serde_json::to_value(&read).unwrap();
        assert_eq!(written["exclusion"], json!({"reason": "", "detail": ""}));
        assert_eq!(
            serde_json::from_value::<CalibratedProblem>(written).unwrap(),
            read
        );
    }

    #[test]
    fn scoring_that_is_not_an_object_is_an_error_saying_so() {
        let mut v = serde_json::to_value(response()).unwrap();
        v["scoring"] = json!("[1]");
        let e = serde_json::from_value::<Response>(v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`scoring` is not the text of an object"), "{e}");
    }
}
