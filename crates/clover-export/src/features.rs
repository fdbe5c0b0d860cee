//! The column types of an exported config, declared in its card so that no loader infers them.
//!
//! A type is learned from every record of the config, not from a first block: a value absent
//! in some records (a C++ problem's `python`) or a list empty in every record of one file
//! takes its type from the records that have it. What no record ever fills is declared
//! `string`, which its nulls and empty lists satisfy.

use std::fmt::Write as _;

use serde_json::Value;

/// A column type in the terms of Hugging Face `datasets` features.
#[derive(Debug, Clone, PartialEq)]
pub enum Feature {
    /// Seen only as `null` or inside empty lists so far.
    Unknown,
    Bool,
    Int,
    Float,
    String,
    List(Box<Feature>),
    /// Fields in the order they were first seen.
    Struct(Vec<(String, Feature)>),
}

/// Two records disagree on the type of a column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("column `{path}` holds {a} in one record and {b} in another")]
pub struct Conflict {
    pub path: String,
    pub a: &'static str,
    pub b: &'static str,
}

impl Feature {
    /// The type of one JSON value; items of a list that disagree are a conflict.
    pub fn of(value: &Value) -> Result<Feature, Conflict> {
        Feature::at(value, "")
    }

    fn at(value: &Value, path: &str) -> Result<Feature, Conflict> {
        Ok(match value {
            Value::Null => Feature::Unknown,
            Value::Bool(_) => Feature::Bool,
            Value::Number(n) if n.is_f64() => Feature::Float,
            Value::Number(_) => Feature::Int,
            Value::String(_) => Feature::String,
            Value::Array(items) => {
                let path = format!("{path}[]");
                let mut item = Feature::Unknown;
                for v in items {
                    item = item.merge(Feature::at(v, &path)?, &path)?;
                }
                Feature::List(Box::new(item))
            }
            Value::Object(fields) => Feature::Struct(
                fields
                    .iter()
                    .map(|(k, v)| {
                        let path = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        Ok((k.clone(), Feature::at(v, &path)?))
                    })
                    .collect::<Result<_, Conflict>>()?,
            ),
        })
    }

    fn name(&self) -> &'static str {
        match self {
            Feature::Unknown => "null",
            Feature::Bool => "a boolean",
            Feature::Int => "an integer",
            Feature::Float => "a float",
            Feature::String => "a string",
            Feature::List(_) => "a list",
            Feature::Struct(_) => "an object",
        }
    }

    /// The type that holds both; integers widen to floats.
    pub fn merge(self, other: Feature, path: &str) -> Result<Feature, Conflict> {
        Ok(match (self, other) {
            (Feature::Unknown, f) | (f, Feature::Unknown) => f,
            (Feature::Int, Feature::Float) | (Feature::Float, Feature::Int) => Feature::Float,
            (Feature::List(a), Feature::List(b)) => {
                Feature::List(Box::new(a.merge(*b, &format!("{path}[]"))?))
            }
            (Feature::Struct(mut a), Feature::Struct(b)) => {
                for (name, fb) in b {
                    let at = if path.is_empty() {
                        name.clone()
                    } else {
                        format!("{path}.{name}")
                    };
                    match a.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, fa)) => {
                            let taken = std::mem::replace(fa, Feature::Unknown);
                            *fa = taken.merge(fb, &at)?;
                        }
                        None => a.push((name, fb)),
                    }
                }
                Feature::Struct(a)
            }
            (a, b) if a == b => a,
            (a, b) => {
                return Err(Conflict {
                    path: path.to_string(),
                    a: a.name(),
                    b: b.name(),
                })
            }
        })
    }
}

/// The `features:` list of a config in the card's YAML, each line indented by `indent`
/// spaces. `fields` are the record's top-level columns.
pub fn yaml_features(fields: &[(String, Feature)], indent: usize) -> String {
    let mut out = String::new();
    write_fields(&mut out, fields, indent);
    out
}

fn write_fields(out: &mut String, fields: &[(String, Feature)], indent: usize) {
    let pad = " ".repeat(indent);
    for (name, f) in fields {
        let _ = writeln!(out, "{pad}- name: {}", quote(name));
        write_type(out, f, indent + 2);
    }
}

/// `datasets`' own YAML form (`Features._to_yaml_list`): `dtype: X`, `struct:` with a list of
/// named fields, `list: X` for a list of plain values, `list:` with named fields for a list of
/// objects, and `list:` holding a nested `list:` for a list of lists.
fn write_type(out: &mut String, f: &Feature, indent: usize) {
    let pad = " ".repeat(indent);
    match f {
        Feature::Struct(fields) if fields.is_empty() => {
            // An object that never held a field: nothing to declare but that it is there.
            let _ = writeln!(out, "{pad}dtype: string");
        }
        Feature::Struct(fields) => {
            let _ = writeln!(out, "{pad}struct:");
            write_fields(out, fields, indent + 2);
        }
        Feature::List(inner) => match inner.as_ref() {
            Feature::Struct(fields) if !fields.is_empty() => {
                let _ = writeln!(out, "{pad}list:");
                write_fields(out, fields, indent + 2);
            }
            Feature::List(_) => {
                let _ = writeln!(out, "{pad}list:");
                write_type(out, inner, indent + 2);
            }
            value => {
                let _ = writeln!(out, "{pad}list: {}", dtype(value));
            }
        },
        value => {
            let _ = writeln!(out, "{pad}dtype: {}", dtype(value));
        }
    }
}

fn dtype(f: &Feature) -> &'static str {
    match f {
        Feature::Bool => "bool",
        Feature::Int => "int64",
        Feature::Float => "float64",
        // Never filled by any record: its nulls and empty lists fit a string column.
        _ => "string",
    }
}

/// A YAML scalar in double quotes (JSON's escaping is YAML's).
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of_all(values: &[Value]) -> Feature {
        values.iter().fold(Feature::Unknown, |acc, v| {
            acc.merge(Feature::of(v).unwrap(), "").unwrap()
        })
    }

    #[test]
    fn a_column_takes_its_type_from_whichever_record_fills_it() {
        let f = of_all(&[
            json!({"python": {"name": "t", "assertions": []}, "cpp": null, "n": 1}),
            json!({"python": null, "cpp": {"tests": [{"suite": "S"}]}, "n": 2.5}),
        ]);
        // serde_json's objects are ordered by key, so the columns are too.
        assert_eq!(
            f,
            Feature::Struct(vec![
                (
                    "cpp".into(),
                    Feature::Struct(vec![(
                        "tests".into(),
                        Feature::List(Box::new(Feature::Struct(vec![(
                            "suite".into(),
                            Feature::String
                        )])))
                    )])
                ),
                ("n".into(), Feature::Float),
                (
                    "python".into(),
                    Feature::Struct(vec![
                        (
                            "assertions".into(),
                            Feature::List(Box::new(Feature::Unknown))
                        ),
                        ("name".into(), Feature::String),
                    ])
                ),
            ])
        );
    }

    #[test]
    fn a_conflict_names_the_column() {
        let e = Feature::of(&json!({"a": {"b": "x"}}))
            .unwrap()
            .merge(Feature::of(&json!({"a": {"b": 1}})).unwrap(), "")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "column `a.b` holds a string in one record and an integer in another"
        );
        // Within one record too: the items of a list.
        let e = Feature::of(&json!({"a": [{"b": [1, "x"]}]})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "column `a[].b[]` holds an integer in one record and a string in another"
        );
    }

    #[test]
    fn yaml_is_the_form_datasets_writes() {
        let Ok(Feature::Struct(fields)) = Feature::of(&json!({
            "id": "x", "ok": true, "lines": [[1, 2]], "tags": [],
            "tests": [{"name": "t", "secs": 0.5}], "exec": {"repo": "r"}
        })) else {
            unreachable!()
        };
        assert_eq!(
            yaml_features(&fields, 0),
            "- name: \"exec\"\n  struct:\n    - name: \"repo\"\n      dtype: string\n\
             - name: \"id\"\n  dtype: string\n\
             - name: \"lines\"\n  list:\n    list: int64\n\
             - name: \"ok\"\n  dtype: bool\n\
             - name: \"tags\"\n  list: string\n\
             - name: \"tests\"\n  list:\n    - name: \"name\"\n      dtype: string\n    \
             - name: \"secs\"\n      dtype: float64\n"
        );
    }
}
