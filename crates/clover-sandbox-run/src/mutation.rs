//! The mutation pass (`--mutation SIDECAR`): calibrate's sidecar of kept mutants
//! (`OUTPUT.mutants.jsonl`, one [`ProblemMutants`] per problem), and which of a problem's
//! mutants an instance's candidate answers for.
//!
//! Calibrate draws one sample per problem from every target's body and the unique blocks
//! together (`clover_mutate::problem_focus`); an instance asks about one part of it, so only
//! the mutants inside its own focus count: Task II its target's body (the target's lines
//! without its `import_lines`), Task III its blocks. Task I asks for one operand and is scored
//! on its verdict, so it has no pass.
//!
//! A C++ problem's mutants are all of its focal source, and a C++ instance answers for the
//! whole source: the chunks of a long source are joined into one test file before they run
//! (`ResponseRunner::run_file`), and that file's tests are the answer for every chunk. A lone
//! chunk's response run by itself ([`crate::ResponseRunner::run`]) has no pass: its span is
//! in lines of the comment-stripped code, not of the file the mutants are placed in. A
//! passing C++ candidate runs against each mutant through
//! `clover_gtest::MutantHarness` ([`run_cpp`]), built from the test object the
//! candidate's own run compiled (so its test file is compiled once); per mutant only the
//! focal source is compiled again (a header: with the test file and the library sources that
//! include it) and linked, and the binary stops at its first failing test, or when it has
//! spent three times the CPU time of the candidate's own binary and 0.25 s more
//! (`clover_gtest::mutant_cpu_secs`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use clover_gtest::{mutant_limits, GtestRun, LibraryCache, MutantHarness, Replacement};
use clover_protocol::{
    KeptMutant, Language, LineRanges, Mutation, OperatorKills, Outcome, ProblemMutants,
    RecordError, RecordReader, Response, Task,
};
use clover_sandbox::{Sandbox, WriteFile};
use serde::Deserialize;

use crate::ResponseError;

/// Why the sidecar cannot be read: the stage does not start.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    #[error("cannot open the mutants sidecar {path}: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error("the mutants sidecar {path}: {source}")]
    Record { path: String, source: RecordError },
}

/// Calibrate's kept mutants, by problem id.
#[derive(Debug, Default)]
pub struct Sidecar {
    problems: HashMap<String, ProblemMutants>,
}

impl Sidecar {
    /// Reads every record of `path`: a bad record stops the stage (a mutant left out would
    /// change every score of its problem without a word).
    pub fn read(path: &Path) -> Result<Sidecar, SidecarError> {
        let name = path.display().to_string();
        let mut reader =
            RecordReader::open(Some(path), usize::MAX).map_err(|source| SidecarError::Open {
                path: name.clone(),
                source,
            })?;
        let mut problems = HashMap::new();
        while let Some(record) = reader.next_record::<ProblemMutants>() {
            let (_, p) = record.map_err(|source| SidecarError::Record {
                path: name.clone(),
                source,
            })?;
            problems.insert(p.id.clone(), p);
        }
        Ok(Sidecar { problems })
    }

    /// The sidecar of `records`, for tests and callers that hold them already.
    pub fn from_records(records: impl IntoIterator<Item = ProblemMutants>) -> Sidecar {
        Sidecar {
            problems: records.into_iter().map(|p| (p.id.clone(), p)).collect(),
        }
    }

    /// The problem an instance id belongs to: instance ids are `<problem id>#<task>#…`, and a
    /// problem id may itself hold `#` (a pytest parameter), so each prefix before a `#` is
    /// tried, shortest first.
    fn problem_of(&self, instance_id: &str) -> Option<&ProblemMutants> {
        instance_id
            .match_indices('#')
            .find_map(|(at, _)| self.problems.get(&instance_id[..at]))
    }

    /// The kept mutants `response`'s candidate answers for, in the sidecar's order; `None`
    /// when no pass applies (no record for the problem, Task I, a lone C++ chunk, a focus the
    /// instance does not state).
    pub fn for_response(&self, response: &Response, language: Language) -> Option<Vec<KeptMutant>> {
        let problem = self.problem_of(&response.instance_id)?;
        let focus = match language {
            Language::Python => Focus::of(response.task, &response.scoring)?,
            Language::Cpp if response.chunk().is_none() => Focus::Whole,
            Language::Cpp => return None,
        };
        Some(
            problem
                .kept
                .iter()
                .filter(|m| focus.holds(&m.path, m.line))
                .cloned()
                .collect(),
        )
    }
}

/// An instance's focus as its `scoring` states it (pack-context writes `target` for Task II
/// and `blocks` for Task III), or a C++ instance's whole focal source.
enum Focus {
    Lines(Vec<(String, LineRanges)>),
    Whole,
}

#[derive(Deserialize)]
struct Region {
    path: String,
    start_line: u32,
    end_line: u32,
    #[serde(default)]
    import_lines: LineRanges,
}

impl Focus {
    fn of(task: Task, scoring: &BTreeMap<String, serde_json::Value>) -> Option<Focus> {
        let regions: Vec<Region> = match task {
            Task::TargetedTest => {
                vec![serde_json::from_value(scoring.get("target")?.clone()).ok()?]
            }
            Task::CoverageTest => serde_json::from_value(scoring.get("blocks")?.clone()).ok()?,
            Task::AssertionCloze | Task::CppUnitTest => return None,
        };
        Some(Focus::Lines(
            regions
                .into_iter()
                .map(|r| {
                    let span = LineRanges::from_lines(r.start_line..=r.end_line);
                    (r.path, span.difference(&r.import_lines))
                })
                .collect(),
        ))
    }

    /// The files of the focus, each once (none for a C++ instance's whole focal source).
    fn files(self) -> Vec<String> {
        let mut files: Vec<String> = match self {
            Focus::Lines(regions) => regions.into_iter().map(|(p, _)| p).collect(),
            Focus::Whole => Vec::new(),
        };
        files.sort();
        files.dedup();
        files
    }

    fn holds(&self, path: &str, line: u32) -> bool {
        match self {
            Focus::Lines(regions) => regions
                .iter()
                .any(|(p, lines)| p == path && lines.contains(line)),
            // Calibrate mutates the focal source only.
            Focus::Whole => true,
        }
    }
}

/// The files whose lines the scoring of a Python instance reads: its target's (Task II), its
/// blocks' (Task III); `None` when its facts do not name them, or for Task I, which is scored
/// on its verdict.
pub(crate) fn scored_files(
    task: Task,
    scoring: &BTreeMap<String, serde_json::Value>,
) -> Option<Vec<String>> {
    Focus::of(task, scoring).map(Focus::files)
}

/// The equivalent mutant of a Python instance's focus (`clover_mutate::equivalent_python`,
/// in the first of its regions that has a place for it), run among its kept mutants: a
/// candidate that kills it fingerprints the code or tells a mutant's run from the plain
/// one. `None` when the instance states no focus or its focus has no such place.
pub(crate) fn equivalent(
    root: &Path,
    task: Task,
    scoring: &BTreeMap<String, serde_json::Value>,
) -> Option<KeptMutant> {
    let Some(Focus::Lines(regions)) = Focus::of(task, scoring) else {
        return None;
    };
    regions.iter().find_map(|(path, lines)| {
        let text = std::fs::read_to_string(root.join(path)).ok()?;
        clover_mutate::equivalent_python(path, &text, |l| lines.contains(l))
    })
}

/// The text of `m`'s file with the mutant in it: the file as the repository at `root` holds
/// it, which must be the one calibrate mutated.
pub(crate) fn mutated_text(root: &Path, m: &KeptMutant) -> Result<String, ResponseError> {
    let source = std::fs::read_to_string(root.join(&m.path)).map_err(|source| {
        ResponseError::MutantSource {
            id: m.id.clone(),
            path: m.path.clone(),
            source,
        }
    })?;
    Ok(clover_mutate::apply(m, &source)?)
}

/// Each of `mutants`' file with the mutant in it ([`mutated_text`]), to write over its
/// original.
pub(crate) fn mutated_files(
    root: &Path,
    mutants: &[KeptMutant],
) -> Result<Vec<WriteFile>, ResponseError> {
    mutants
        .iter()
        .map(|m| {
            Ok(WriteFile {
                path: m.path.clone().into(),
                contents: mutated_text(root, m)?.into_bytes(),
            })
        })
        .collect()
}

/// Runs a C++ candidate that passed (`candidate`, as it ran) against each of `mutants`, whose
/// sources are read from `root`: through `kept`, the harness of the test object its own run
/// compiled (`GtestRun::run_keeping_object`), or one compiled now when the run kept none; each
/// mutant recompiles its source alone and relinks, in a fresh view, the binary stopping at
/// its first failing test, within the `mutant_limits` of the candidate's own run (`plain`, its
/// seconds). The candidate kills a mutant it does not pass on; one that does not compile
/// (calibrate kept only mutants that did) counts as not run.
pub(crate) fn run_cpp(
    sandbox: &Sandbox,
    cache: &LibraryCache,
    candidate: &GtestRun<'_>,
    kept: Option<MutantHarness>,
    plain: Duration,
    root: &Path,
    mutants: &[KeptMutant],
) -> Result<Mutation, ResponseError> {
    let started = Instant::now();
    let limits = mutant_limits(&candidate.limits, plain);
    let harness = match kept {
        Some(h) => h,
        // The run's object was too large to read back: compile the test file again.
        None => match candidate.mutant_harness(sandbox, cache)? {
            Ok(h) => h,
            // It compiled for its own run a moment ago: whatever failed now ran none of them.
            Err(_) => return Ok(unrun(mutants)),
        },
    };
    let verdicts = each_at_once(mutants, CPP_MUTANTS_AT_ONCE, |m| {
        let mutated = mutated_text(root, m)?;
        let replaced = Replacement {
            source: Path::new(&m.path),
            text: mutated.as_bytes(),
        };
        let r = harness.run(sandbox, Some(replaced), &limits)?;
        Ok::<_, ResponseError>(match r.outcome {
            Outcome::CompileError => None,
            // A mutant's run whose report is forged kills nothing.
            Outcome::Forged => Some(false),
            outcome => Some(outcome != Outcome::Passed),
        })
    });
    let verdicts = mutants
        .iter()
        .zip(verdicts)
        .map(|(m, v)| Ok((m, v?)))
        .collect::<Result<Vec<_>, ResponseError>>()?;
    Ok(tally(verdicts, 0, started.elapsed().as_secs_f64()))
}

/// How many of a C++ candidate's mutant runs go at once. Each compiles a translation unit
/// and links, on one core, and a candidate has up to `--mutants` of them: the last candidates
/// of a stage would otherwise run them one by one while the other cores idle. Two at most, so
/// that a stage whose every job is in a mutation pass asks for twice its cores, not more. A
/// mutant's limits are CPU time (its binary) and a wall clock of three times its candidate's
/// whole run and 5 s more, which sharing a core does not reach.
const CPP_MUTANTS_AT_ONCE: usize = 2;

/// `f` of each of `items`, in their order, on up to `threads` threads at once.
fn each_at_once<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads.min(items.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                done.lock().unwrap_or_else(|e| e.into_inner()).push((i, r));
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The pass of a candidate that ran none of `mutants` (it did not pass on the original code,
/// or nothing ran): every mutant counts as kept and none as killed.
pub fn unrun(mutants: &[KeptMutant]) -> Mutation {
    tally(mutants.iter().map(|m| (m, None)), 0, 0.0)
}

/// The pass from each mutant's verdict (`Some(killed)`; `None`: not run).
pub fn tally<'a>(
    verdicts: impl IntoIterator<Item = (&'a KeptMutant, Option<bool>)>,
    cold: u32,
    duration_secs: f64,
) -> Mutation {
    let mut m = Mutation {
        kept: Some(0),
        cold,
        duration_secs,
        ..Mutation::default()
    };
    let mut operators: BTreeMap<&str, OperatorKills> = BTreeMap::new();
    for (mutant, verdict) in verdicts {
        let op = operators
            .entry(&mutant.operator)
            .or_insert_with(|| OperatorKills {
                operator: mutant.operator.clone(),
                kept: 0,
                killed: 0,
            });
        op.kept += 1;
        *m.kept.as_mut().expect("set above") += 1;
        match verdict {
            Some(true) => {
                m.run += 1;
                m.killed += 1;
                op.killed += 1;
            }
            Some(false) => {
                m.run += 1;
                m.survived.push(mutant.id.clone());
            }
            None => {}
        }
    }
    m.operators = operators.into_values().collect();
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use clover_protocol::{RecordKind, SCHEMA_VERSION};
    use serde_json::json;

    fn kept(path: &str, line: u32, operator: &str) -> KeptMutant {
        KeptMutant {
            id: format!("{path}:{line}:1:{operator}:0"),
            path: path.into(),
            operator: operator.into(),
            line,
            start_byte: 0,
            end_byte: 1,
            original: "<".into(),
            replacement: "<=".into(),
            file_hash: String::new(),
            killed_by: vec![],
        }
    }

    fn sidecar() -> Sidecar {
        Sidecar::from_records([ProblemMutants {
            kind: RecordKind::ProblemMutants,
            schema_version: SCHEMA_VERSION,
            id: "r/tests/test_a.py::test_a[x#1]".into(),
            seed: 0,
            max_mutants: 20,
            candidates: 9,
            kept: vec![
                kept("a.py", 3, "boundary"),
                kept("a.py", 5, "arithmetic"),
                kept("a.py", 9, "constant"),
                kept("b.py", 5, "arithmetic"),
            ],
            survived: vec![],
            invalid: vec![],
        }])
    }

    fn response(task: Task, scoring: serde_json::Value) -> Response {
        serde_json::from_value(json!({
            "kind": "response", "schema_version": SCHEMA_VERSION,
            "id": "x@m", "instance_id": format!("r/tests/test_a.py::test_a[x#1]#{task:?}#po"),
            "model": "m", "task": task, "setting": "po", "repo": "r", "text": "",
            "exec": {"repo": "r", "candidate_path": "t.py", "prefix": "", "suffix": "",
                     "selectors": []},
            "scoring": scoring.to_string(),
        }))
        .unwrap()
    }

    fn ids(m: Option<Vec<KeptMutant>>) -> Option<Vec<String>> {
        m.map(|m| m.into_iter().map(|k| k.id).collect())
    }

    #[test]
    fn only_the_mutants_inside_the_instance_focus_count() {
        let s = sidecar();
        // Task II: the target's body, without the line importing runs (3, its `def`).
        let t2 = response(
            Task::TargetedTest,
            json!({"target": {"name": "f", "kind": "function", "path": "a.py",
                              "start_line": 3, "end_line": 6, "import_lines": [[3, 3]]}}),
        );
        assert_eq!(
            ids(s.for_response(&t2, Language::Python)),
            Some(vec!["a.py:5:1:arithmetic:0".into()])
        );
        // Task III: every block, in any file.
        let t3 = response(
            Task::CoverageTest,
            json!({"blocks": [{"path": "a.py", "start_line": 8, "end_line": 9},
                              {"path": "b.py", "start_line": 1, "end_line": 5}]}),
        );
        assert_eq!(
            ids(s.for_response(&t3, Language::Python)),
            Some(vec![
                "a.py:9:1:constant:0".into(),
                "b.py:5:1:arithmetic:0".into()
            ])
        );
        // C++: the whole focal source (every kept mutant), unless a lone chunk asks.
        assert_eq!(
            ids(s.for_response(&t3, Language::Cpp)).map(|m| m.len()),
            Some(4)
        );
        let mut chunk = t3.clone();
        chunk
            .scoring
            .insert("chunk_index".into(), serde_json::json!(1));
        chunk
            .scoring
            .insert("chunk_count".into(), serde_json::json!(2));
        chunk
            .scoring
            .insert("join".into(), serde_json::json!("append"));
        assert_eq!(ids(s.for_response(&chunk, Language::Cpp)), None);
        let t1 = response(Task::AssertionCloze, json!({}));
        assert_eq!(ids(s.for_response(&t1, Language::Python)), None);
        let mut other = t3.clone();
        other.instance_id = "r/tests/test_b.py::test_b#CoverageTest#po".into();
        assert_eq!(ids(s.for_response(&other, Language::Python)), None);
    }

    #[test]
    fn each_at_once_runs_every_item_once_in_order_and_no_more_at_once_than_asked() {
        let running = std::sync::atomic::AtomicUsize::new(0);
        let most = std::sync::atomic::AtomicUsize::new(0);
        let items: Vec<u32> = (0..25).collect();
        let out = each_at_once(&items, 2, |i| {
            let now = running.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(u64::from(25 - i) % 3));
            running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            i * 10
        });
        assert_eq!(out, items.iter().map(|i| i * 10).collect::<Vec<_>>());
        assert!((1..=2).contains(&most.load(std::sync::atomic::Ordering::SeqCst)));
        assert!(each_at_once(&[] as &[u32], 2, |i| *i).is_empty());
    }

    #[test]
    fn a_pass_counts_by_operator_and_names_the_survivors() {
        let k = [
            kept("a.py", 3, "boundary"),
            kept("a.py", 5, "arithmetic"),
            kept("a.py", 6, "arithmetic"),
        ];
        let m = tally(
            [
                (&k[0], Some(false)),
                (&k[1], Some(true)),
                (&k[2], Some(true)),
            ],
            1,
            0.5,
        );
        assert_eq!((m.kept, m.run, m.killed, m.cold), (Some(3), 3, 2, 1));
        assert_eq!(m.survived, ["a.py:3:1:boundary:0"]);
        let ops: Vec<(&str, u32, u32)> = m
            .operators
            .iter()
            .map(|o| (o.operator.as_str(), o.kept, o.killed))
            .collect();
        assert_eq!(ops, [("arithmetic", 2, 2), ("boundary", 1, 0)]);
        let none = unrun(&k);
        assert_eq!((none.kept, none.run, none.killed), (Some(3), 0, 0));
        assert!(none.survived.is_empty());
    }
}
