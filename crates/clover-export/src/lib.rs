//! export: clover's records as a Hugging Face dataset folder.
//!
//! `clover export FILE… --out DIR` reads JSON Lines records of one kind (problems, calibrated
//! problems, instances, responses, run results, score rows or fine-tuning examples) and writes
//! a folder that `datasets.load_dataset(DIR)` and the Hub read without guessing:
//!
//! - one JSON Lines file per config and split, `DIR/<config>/<split>.jsonl`; a config is a
//!   task (`assertion_cloze`, …, `cpp_unit_test`) for records that have one, a language
//!   (`python`, `cpp`) for problems; the split is the fine-tuning example's own
//!   (`train`/`eval`/`test`) or `--split` (default `test`: a benchmark is evaluation data);
//! - `DIR/README.md`, the dataset card: a YAML header whose `configs` name the files and whose
//!   `dataset_info` declares every column's type ([`Feature`]), learned from all the records
//!   of the config, so no loader infers a type from a first block; then the sources, each
//!   repository with its license and where it came from ([`provenance::read`], from the
//!   repository's own files through `--manifest`/`--repo`), and how absent values read.
//!
//! Records are read through their wire types and written again, so an older record comes out
//! in the current schema. Files are JSON Lines rather than Parquet: a Parquet writer would
//! bring Arrow into the build, and with the types declared `datasets` reads JSON Lines into
//! the same table (`Dataset.to_parquet` converts).
//!
//! It deliberately runs nothing, reads no repository file but the few that say its license and
//! origin, and never writes into an existing non-empty folder.

mod card;
pub mod cli;
mod features;
pub mod provenance;

use std::collections::BTreeMap;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

use clover_manifest::RepoConfig;
use clover_protocol::{
    CalibratedProblem, Instance, Problem, RecordKind, Response, RunResult, ScoreRow, SftExample,
    SCHEMA_VERSION,
};
use serde_json::Value;

pub use card::write_card;
pub use features::{yaml_features, Conflict, Feature};
pub use provenance::Provenance;

/// The name diagnostics start with.
pub const TOOL: &str = "clover-export";

/// What to export and where.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub inputs: Vec<PathBuf>,
    pub out: PathBuf,
    /// The dataset's name in the card.
    pub name: String,
    /// The split of records that carry none (all but fine-tuning examples).
    pub split: String,
    /// The repositories the records name, for their license and origin; a repository not
    /// here is listed with both unknown.
    pub repos: BTreeMap<String, RepoConfig>,
}

/// Why an export failed. Every record error names the file, the line and, when it was read,
/// the id.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Record {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error(
        "{}:{line}: record `{id}` is a `{found}`, but the export holds `{expected}` records; \
         export each kind to its own folder",
        path.display()
    )]
    MixedKinds {
        path: PathBuf,
        line: u64,
        id: String,
        found: String,
        expected: RecordKind,
    },
    #[error("{}:{line}: record `{id}`: {source}", path.display())]
    Conflict {
        path: PathBuf,
        line: u64,
        id: String,
        source: Conflict,
    },
    #[error(
        "{} exists and is not empty; give a new folder to --out (an export never mixes with \
         older files)",
        .0.display()
    )]
    OutNotEmpty(PathBuf),
    #[error("no records in the input; give the JSON Lines files of one stage")]
    Empty,
    #[error(
        "records of kind `{0}` are not exported; export problems, calibrated problems, \
         instances, responses, run results, score rows or fine-tuning examples"
    )]
    Unsupported(String),
}

/// One config: its files by split and the type of its records.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub name: String,
    /// Records per split.
    pub splits: BTreeMap<String, u64>,
    /// The record's columns.
    pub features: Vec<(String, Feature)>,
}

impl Config {
    /// The path of a split's file, relative to the folder.
    pub fn file(&self, split: &str) -> String {
        format!("{}/{split}.jsonl", self.name)
    }
}

/// A source repository as the card lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub repo: String,
    pub records: u64,
    /// `None` when no `--manifest`/`--repo` named the repository.
    pub provenance: Option<Provenance>,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    pub kind: RecordKind,
    pub configs: Vec<Config>,
    pub sources: Vec<Source>,
}

impl Export {
    pub fn records(&self) -> u64 {
        self.configs.iter().flat_map(|c| c.splits.values()).sum()
    }
}

/// A record read and written again in the current schema, with what the export sorts it by.
struct Row {
    kind: RecordKind,
    id: String,
    repo: String,
    config: String,
    split: Option<String>,
    value: Value,
}

fn name_of<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => "unknown".into(),
    }
}

/// Why one line could not be taken.
enum RowError {
    Invalid(String),
    Unsupported(String),
}

/// Reads one line's record through its wire type.
fn row(line: &str) -> Result<Row, RowError> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| RowError::Invalid(format!("malformed JSON: {e}")))?;
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| RowError::Invalid("no `kind` field: not a clover record".into()))?
        .to_string();
    fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(
        value: Value,
    ) -> Result<(T, Value), RowError> {
        let record: T =
            serde_json::from_value(value).map_err(|e| RowError::Invalid(e.to_string()))?;
        let mut again = serde_json::to_value(&record).expect("a record serializes");
        // Written through the current wire types, an older record is now a current one (a
        // calibrated problem holds its problem, which says its version too).
        again["schema_version"] = SCHEMA_VERSION.into();
        if let Some(problem) = again.get_mut("problem").filter(|p| p.is_object()) {
            problem["schema_version"] = SCHEMA_VERSION.into();
        }
        Ok((record, again))
    }
    let (kind, id, repo, config, split, value) = match kind.as_str() {
        "problem" => {
            let (r, v): (Problem, _) = typed(value)?;
            (r.kind, r.id, r.repo, name_of(&r.language), None, v)
        }
        "calibrated_problem" => {
            let (r, v): (CalibratedProblem, _) = typed(value)?;
            let language = name_of(&r.problem.language);
            (r.kind, r.id, r.repo, language, None, v)
        }
        "instance" => {
            let (r, v): (Instance, _) = typed(value)?;
            (r.kind, r.id, r.repo, name_of(&r.task), None, v)
        }
        "response" => {
            let (r, v): (Response, _) = typed(value)?;
            (r.kind, r.id, r.repo, name_of(&r.task), None, v)
        }
        "run_result" => {
            let (r, v): (RunResult, _) = typed(value)?;
            let task = r.task.as_ref().map_or("unknown".into(), name_of);
            (r.kind, r.id, r.repo, task, None, v)
        }
        "score_row" => {
            let (r, v): (ScoreRow, _) = typed(value)?;
            (r.kind, r.id, r.repo, name_of(&r.task), None, v)
        }
        "sft_example" => {
            let (r, v): (SftExample, _) = typed(value)?;
            (r.kind, r.id, r.repo, name_of(&r.task), Some(r.split), v)
        }
        other => return Err(RowError::Unsupported(other.to_string())),
    };
    Ok(Row {
        kind,
        id,
        repo,
        config,
        split,
        value,
    })
}

/// Writes the dataset folder. Returns what was written; the card is written last, so a folder
/// with a card is whole.
pub fn export(opts: &ExportOptions) -> Result<Export, ExportError> {
    if let Ok(mut entries) = std::fs::read_dir(&opts.out) {
        if entries.next().is_some() {
            return Err(ExportError::OutNotEmpty(opts.out.clone()));
        }
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExportError::Io { path, source }
    };
    std::fs::create_dir_all(&opts.out).map_err(io(&opts.out))?;

    let mut kind: Option<RecordKind> = None;
    let mut types: BTreeMap<String, Feature> = BTreeMap::new();
    let mut splits: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut writers: BTreeMap<(String, String), (PathBuf, BufWriter<std::fs::File>)> =
        BTreeMap::new();
    let mut per_repo: BTreeMap<String, u64> = BTreeMap::new();

    for path in &opts.inputs {
        let file = std::fs::File::open(path).map_err(io(path))?;
        for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line_no = i as u64 + 1;
            let line = line.map_err(io(path))?;
            if line.trim().is_empty() {
                continue;
            }
            let row = row(&line).map_err(|e| match e {
                RowError::Unsupported(kind) => ExportError::Unsupported(kind),
                RowError::Invalid(message) => ExportError::Record {
                    path: path.clone(),
                    line: line_no,
                    message,
                },
            })?;
            match kind {
                None => kind = Some(row.kind),
                Some(k) if k != row.kind => {
                    return Err(ExportError::MixedKinds {
                        path: path.clone(),
                        line: line_no,
                        id: row.id,
                        found: row.kind.to_string(),
                        expected: k,
                    })
                }
                Some(_) => {}
            }
            let slot = types.entry(row.config.clone()).or_insert(Feature::Unknown);
            let taken = std::mem::replace(slot, Feature::Unknown);
            *slot = Feature::of(&row.value)
                .and_then(|f| taken.merge(f, ""))
                .map_err(|source| ExportError::Conflict {
                    path: path.clone(),
                    line: line_no,
                    id: row.id.clone(),
                    source,
                })?;
            let split = row.split.unwrap_or_else(|| opts.split.clone());
            *splits
                .entry(row.config.clone())
                .or_default()
                .entry(split.clone())
                .or_default() += 1;
            *per_repo.entry(row.repo).or_default() += 1;
            let key = (row.config, split);
            if !writers.contains_key(&key) {
                let dir = opts.out.join(&key.0);
                std::fs::create_dir_all(&dir).map_err(io(&dir))?;
                let file = dir.join(format!("{}.jsonl", key.1));
                let f = std::fs::File::create(&file).map_err(io(&file))?;
                writers.insert(key.clone(), (file, BufWriter::new(f)));
            }
            let (file, w) = writers.get_mut(&key).expect("inserted above");
            let text = serde_json::to_string(&row.value).expect("a value serializes");
            writeln!(w, "{text}").map_err(io(file))?;
        }
    }
    for (file, mut w) in writers.into_values() {
        w.flush().map_err(io(&file))?;
    }
    let Some(kind) = kind else {
        return Err(ExportError::Empty);
    };
    let configs = types
        .into_iter()
        .map(|(name, feature)| Config {
            splits: splits.remove(&name).unwrap_or_default(),
            features: match feature {
                Feature::Struct(fields) => fields,
                _ => Vec::new(),
            },
            name,
        })
        .collect();
    let sources = per_repo
        .into_iter()
        .map(|(repo, records)| Source {
            provenance: opts.repos.get(&repo).map(|r| provenance::read(&r.root)),
            repo,
            records,
        })
        .collect();
    let export = Export {
        kind,
        configs,
        sources,
    };
    let card = opts.out.join("README.md");
    std::fs::write(&card, write_card(&opts.name, &export)).map_err(io(&card))?;
    Ok(export)
}
