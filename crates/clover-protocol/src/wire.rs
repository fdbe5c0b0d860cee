//! How a field that may be absent or empty is written: never as JSON `null`, never as a list
//! that can be empty in a whole file.
//!
//! A reader that learns column types from the data — Hugging Face `datasets` and the Arrow JSON
//! reader under it take them from the first 10 MiB of the first file — types a column that is
//! `null` there as `null`, and a list that is empty there as a list of `null`, and then refuses
//! the same column holding a string, or a list of anything, in the next file (`Couldn't cast
//! array of type string to null`): an `error` that is never set in one model's responses and
//! set in another's, a `signal` set only far into a joined results file, the `stop` one model
//! was run with and another was not, a C++ problem's absent Python part next to a Python
//! problem's. So each absent value is written as a value of its own type that the field never
//! otherwise holds, and read back as absent:
//!
//! - text and names (`error`, `message`, `limit_hit`, `language`, …): `""` ([`empty`]);
//! - counts, codes and settings that are never negative (`exit_code`, `signal`,
//!   `http_status`, `max_tokens`, `seed`): `-1` ([`minus_one`]); temperature and top_p:
//!   `-1.0` ([`minus_one_f64`]), a float, as a column of integers refuses `0.2`;
//! - the frequency and presence penalties, whose range (-2 to 2) holds -1: `-9`
//!   ([`PENALTY_UNSET`]);
//! - a record part with fixed fields (an exclusion, token usage): the part with its fields so
//!   written.
//!
//! And a value whose type JSON cannot always say is written as its JSON text, a string
//! whatever it holds ([`json_text`], [`json_text_or_empty`], [`empty_list`]): every list that
//! can be empty in every record of a file (a result's `tests` and `coverage`, an instance's
//! `context_files` and `selectors`, `stop`, a calibrated problem's coverage lists, a mutation's
//! `survived`…), a problem's language part (`python`, `cpp`: absent is `""`), and `scoring`,
//! whose keys and value types differ by task (as an object, `datasets` can only give it its
//! opaque `Json` extension type, and two tasks' keys make two struct types that do not cast
//! into each other). `jq` reads such a field with `fromjson`. Lists that are never empty
//! (`messages`) stay lists.
//!
//! Readers also take `null`, lists and objects, as schema versions 1 and 2 wrote them.

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

/// `Option<Vec<T>>` as the JSON text of the list: absent is `""`, and an empty list reads as
/// absent (so does `[]` and `null`, as versions 1 and 2 wrote them).
pub mod empty_list {
    use super::*;

    pub fn serialize<T: Serialize, S: Serializer>(
        v: &Option<Vec<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        json_text_or_empty::serialize(&v.as_ref().filter(|v| !v.is_empty()), s)
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<T>>, D::Error> {
        Ok(json_text_or_empty::deserialize::<Vec<T>, D>(d)?.filter(|v| !v.is_empty()))
    }
}

/// Reads a value written as its JSON text, or, as versions 1 and 2 wrote it, the value itself.
/// `what` begins the message of a text that does not parse.
fn from_text_or_value<T: DeserializeOwned, E: serde::de::Error>(
    v: serde_json::Value,
    what: &str,
) -> Result<T, E> {
    match v {
        serde_json::Value::String(text) => {
            serde_json::from_str(&text).map_err(|e| E::custom(format!("{what}: {e}")))
        }
        other => serde_json::from_value(other).map_err(E::custom),
    }
}

/// A value written as its JSON text (a list as `"[...]"`): one string column whatever the
/// value holds.
pub mod json_text {
    use super::*;

    pub fn serialize<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        let text = serde_json::to_string(v).map_err(serde::ser::Error::custom)?;
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<T, D::Error> {
        // Buffered as a value: the reader never sees `untagged` on a wire type, and the forms
        // are told apart by their JSON type alone.
        from_text_or_value(
            serde_json::Value::deserialize(d)?,
            "not the JSON text of a value",
        )
    }
}

/// `Option<T>` as the JSON text of the value: absent is `""` (or, as versions 1 and 2 wrote
/// it, `null`).
pub mod json_text_or_empty {
    use super::*;

    pub fn serialize<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => json_text::serialize(v, s),
            None => s.serialize_str(""),
        }
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Null => Ok(None),
            serde_json::Value::String(s) if s.is_empty() => Ok(None),
            v => from_text_or_value(v, "not the JSON text of a value").map(Some),
        }
    }
}

/// A `scoring` map, written as the JSON text of its object (keys sorted); read from that text
/// or, as version 1 wrote it, from the object itself.
pub mod scoring {
    use super::*;

    type Scoring = BTreeMap<String, serde_json::Value>;

    pub fn serialize<S: Serializer>(v: &Scoring, s: S) -> Result<S::Ok, S::Error> {
        json_text::serialize(v, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Scoring, D::Error> {
        match serde_json::Value::deserialize(d)? {
            v @ (serde_json::Value::String(_) | serde_json::Value::Object(_)) => {
                from_text_or_value(v, "`scoring` is not the text of an object")
            }
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
        let tests: Value = serde_json::from_str(v["tests"].as_str().unwrap()).unwrap();
        assert_eq!(tests[0]["message"], "");
        assert_eq!(v["coverage"], "[]");
        assert_eq!(v["scoring"], r#"{"mask":"<MASK>"}"#);
        assert_eq!(v["mutation"]["kept"], -1);
        assert_eq!(v["mutation"]["operators"], "[]");
        assert_eq!(v["mutation"]["survived"], "[]");
        assert_eq!(serde_json::from_value::<RunResult>(v).unwrap(), r);

        let g = response();
        let v = no_nulls(&g);
        let gen = &v["generation"];
        assert_eq!(gen["temperature"], -1.0);
        assert!(gen["temperature"].is_f64(), "{gen}");
        assert_eq!(gen["frequency_penalty"], PENALTY_UNSET_JSON);
        assert_eq!(gen["seed"], -1);
        assert_eq!(gen["stop"], "");
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
        v["tests"] = json!([{"name": "t", "classname": "c", "outcome": "passed",
                             "message": null, "duration_secs": 0.0}]);
        v["coverage"] = json!([]);
        v["scoring"] = json!({"mask": "<MASK>"});
        v["schema_version"] = json!(1);
        v.as_object_mut().unwrap().remove("answer");
        v.as_object_mut().unwrap().remove("mutation");
        let read: RunResult = serde_json::from_value(v).unwrap();
        assert_eq!(read.scoring, run_result().scoring);
        assert_eq!(read.exit_code, None);
        assert_eq!(read.mutation, Mutation::default());
        assert_eq!(read.tests, run_result().tests);

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

    fn problem(language: Language) -> Problem {
        Problem {
            kind: RecordKind::Problem,
            schema_version: SCHEMA_VERSION,
            id: "p".into(),
            repo: "r".into(),
            language,
            python: None,
            cpp: Some(CppProblem {
                file_name: "a.cc".into(),
                file_path: "src/a.cc".into(),
                test_path: "tests/a_test.cc".into(),
                header_path: None,
                code: "int f();\n".into(),
                unit_test: "TEST(A, F) {}\n".into(),
                tests: vec![],
                chunks: vec![],
                pairing: Default::default(),
            }),
        }
    }

    /// Every column a file's records could leave empty throughout is one string column, so
    /// files whose records leave it empty load together with files that fill it: a Python
    /// problem's C++ part, a C++ instance's selectors, a Task I result's coverage.
    #[test]
    fn parts_and_lists_that_can_be_empty_in_a_whole_file_are_written_as_text() {
        let p = problem(Language::Cpp);
        let v = no_nulls(&p);
        assert_eq!(v["python"], "");
        let cpp: Value = serde_json::from_str(v["cpp"].as_str().unwrap()).unwrap();
        assert_eq!(cpp["file_path"], "src/a.cc");
        assert_eq!(serde_json::from_value::<Problem>(v).unwrap(), p);

        let c = CalibratedProblem {
            kind: RecordKind::CalibratedProblem,
            schema_version: SCHEMA_VERSION,
            id: "p".into(),
            repo: "r".into(),
            problem: p,
            exclusion: None,
            base: vec![],
            empty: vec![],
            tiers: vec![],
            unique_blocks: vec![],
            targets: vec![],
            runs: vec![Outcome::Passed],
        };
        let v = no_nulls(&c);
        for k in ["base", "empty", "tiers", "unique_blocks", "targets"] {
            assert_eq!(v[k], "[]", "{k}");
        }
        assert_eq!(v["runs"], r#"["passed"]"#);
        assert_eq!(v["problem"]["python"], "");
        assert_eq!(serde_json::from_value::<CalibratedProblem>(v).unwrap(), c);

        let g = response();
        let v = no_nulls(&g);
        assert_eq!(v["exec"]["selectors"], "[]");
        let m = ProblemMutants {
            kind: RecordKind::ProblemMutants,
            schema_version: SCHEMA_VERSION,
            id: "p".into(),
            seed: 1,
            max_mutants: 20,
            candidates: 0,
            kept: vec![],
            survived: vec![],
            invalid: vec!["a".into()],
        };
        let v = no_nulls(&m);
        assert_eq!(
            (&v["kept"], &v["invalid"]),
            (&json!("[]"), &json!(r#"["a"]"#))
        );
        assert_eq!(serde_json::from_value::<ProblemMutants>(v).unwrap(), m);
    }

    #[test]
    fn version_2_records_with_lists_and_parts_as_json_values_still_read() {
        let p = problem(Language::Cpp);
        let mut v = serde_json::to_value(&p).unwrap();
        v["cpp"] = serde_json::from_str(v["cpp"].as_str().unwrap()).unwrap();
        v["python"] = Value::Null;
        v["schema_version"] = json!(2);
        assert_eq!(serde_json::from_value::<Problem>(v).unwrap().cpp, p.cpp);

        let mut g = response();
        g.generation.stop = Some(vec!["\n".into()]);
        g.exec.selectors = vec!["t.py::a".into()];
        let mut v = serde_json::to_value(&g).unwrap();
        v["generation"]["stop"] = json!(["\n"]);
        v["exec"]["selectors"] = json!(["t.py::a"]);
        assert_eq!(serde_json::from_value::<Response>(v.clone()).unwrap(), g);
        v["generation"]["stop"] = json!([]);
        assert_eq!(
            serde_json::from_value::<Response>(v)
                .unwrap()
                .generation
                .stop,
            None
        );
    }

    #[test]
    fn a_list_whose_text_does_not_parse_is_an_error_saying_so() {
        let mut v = serde_json::to_value(run_result()).unwrap();
        v["coverage"] = json!("[{");
        let e = serde_json::from_value::<RunResult>(v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not the JSON text of a value"), "{e}");
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
