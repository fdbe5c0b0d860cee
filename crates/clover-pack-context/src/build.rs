//! One repository at a time: the builders' drafts, packed into every setting and emitted.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use clover_manifest::RepoConfig;
use clover_protocol::{CalibratedProblem, ContextTier, Instance, Language, Task};

use crate::rng::Rng;
use crate::source::{RepoSources, SourceFile};
use crate::tasks::{self, Demo, RepoInput};
use crate::tokenizer::{Tokenizer, TokenizerError};
use crate::Options;

/// How many pairs of earlier repositories are kept as few-shot demonstrations for C++
/// repositories with fewer pairs than shots.
const DEMO_POOL: usize = 32;

/// A repository could not be packed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error(
        "repository `{repo}` (problem {id}) is not in the manifest; pass --manifest FILE or \
         --repo DIR naming it"
    )]
    UnknownRepo { repo: String, id: String },
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    #[error("{0}")]
    Emit(#[source] anyhow::Error),
}

/// What a run did, for the summary on stderr and for benchmarks.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub repos: u64,
    pub problems: u64,
    pub excluded: u64,
    /// Excluded C++ pairs built as judge-only instances (`--judge-only-excluded`).
    pub judge_only: u64,
    /// Kept problems left out by `--sample`.
    pub sampled_out: u64,
    pub instances: BTreeMap<String, u64>,
    pub prompt_tokens: u64,
    pub skipped: BTreeMap<String, u64>,
    /// Source files that could not be read, as `repo: path: why`.
    pub unusable_files: Vec<String>,
}

impl Summary {
    pub fn total_instances(&self) -> u64 {
        self.instances.values().sum()
    }
}

/// Builds instances repository by repository.
#[derive(Debug)]
pub struct Packer<'t> {
    tokenizer: &'t Tokenizer,
    options: Options,
    repos: HashMap<String, RepoConfig>,
    pool: Vec<Demo>,
    pub summary: Summary,
}

impl<'t> Packer<'t> {
    pub fn new(tokenizer: &'t Tokenizer, options: Options, repos: Vec<RepoConfig>) -> Self {
        Packer {
            tokenizer,
            options,
            repos: repos.into_iter().map(|r| (r.name.clone(), r)).collect(),
            pool: Vec::new(),
            summary: Summary::default(),
        }
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Whether the manifest names `repo`.
    pub fn knows_repo(&self, repo: &str) -> bool {
        self.repos.contains_key(repo)
    }

    /// The names of the manifest's repositories, sorted, for messages.
    pub fn repo_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.repos.keys().map(String::as_str).collect();
        names.sort();
        names
    }

    /// Packs the kept problems of one repository. `want(id, shard_key)` says whether an
    /// instance is to be built at all (resume by its id; shards by its key, which for the
    /// chunks of a C++ source is the whole file's id, so a shard holds every chunk of a file);
    /// `emit` takes each instance as soon as it is built.
    ///
    /// The problems are first sorted by id, in place: what is built depends on the set of a
    /// repository's records, not on their order, so shards of calibrate joined in any order
    /// give the same instances as one run.
    pub fn pack_repo(
        &mut self,
        repo: &str,
        problems: &mut [CalibratedProblem],
        want: &mut dyn FnMut(&str, &str) -> bool,
        emit: &mut dyn FnMut(Instance) -> anyhow::Result<()>,
    ) -> Result<(), PackError> {
        let Some(first) = problems.first() else {
            return Ok(());
        };
        let config = self.repos.get(repo).ok_or_else(|| PackError::UnknownRepo {
            repo: repo.to_string(),
            id: first.id.clone(),
        })?;
        problems.sort_by(|a, b| a.id.cmp(&b.id));
        let problems: &[CalibratedProblem] = problems;
        self.summary.repos += 1;
        self.summary.problems += problems.len() as u64;
        let mut input = RepoInput {
            repo,
            problems,
            sources: RepoSources::new(&config.root, config.language, self.tokenizer),
            tokenizer: self.tokenizer,
            options: &self.options,
            skipped: BTreeMap::new(),
        };
        let mut drafts = Vec::new();
        for &task in &self.options.tasks {
            drafts.extend(match task {
                Task::AssertionCloze => tasks::assertion_cloze(&mut input)?,
                Task::TargetedTest => tasks::targeted_test(&mut input)?,
                Task::CoverageTest => tasks::coverage_test(&mut input)?,
                Task::CppUnitTest => tasks::cpp_unit_test(&mut input, &self.pool)?,
            });
        }
        // Output follows the problems' id order; within a problem, the task order.
        drafts.sort_by_key(|(pi, _)| *pi);

        let mut ordered: Option<(usize, Vec<Arc<SourceFile>>)> = None;
        for (pi, draft) in &drafts {
            if ordered.as_ref().is_none_or(|(i, _)| i != pi) {
                let files = tier_order(&mut input, *pi)?;
                ordered = Some((*pi, files));
            }
            let files: Vec<Arc<SourceFile>> = ordered
                .as_ref()
                .expect("set above")
                .1
                .iter()
                .filter(|f| !draft.required.iter().any(|r| r.path == f.path))
                .cloned()
                .collect();
            let mut counts = None;
            for &setting in &self.options.settings_for(draft.task) {
                let id = draft.instance_id(setting);
                if !want(&id, clover_protocol::file_instance_id(&id, &draft.scoring)) {
                    continue;
                }
                let counts = match &counts {
                    Some(c) => c,
                    None => counts.insert(draft.counts(self.tokenizer)?),
                };
                match draft.realize_counted(setting, &files, self.tokenizer, counts)? {
                    Some(instance) => {
                        let task = serde_json::to_value(instance.task)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default();
                        *self.summary.instances.entry(task).or_default() += 1;
                        self.summary.prompt_tokens += u64::from(instance.prompt_tokens);
                        emit(instance).map_err(PackError::Emit)?;
                    }
                    None => {
                        *input
                            .skipped
                            .entry(format!("{:?}: does not fit {setting}", draft.task))
                            .or_default() += 1;
                    }
                }
            }
        }
        for (why, n) in std::mem::take(&mut input.skipped) {
            *self.summary.skipped.entry(why).or_default() += n;
        }
        for (path, why) in &input.sources.unusable {
            self.summary
                .unusable_files
                .push(format!("{repo}: {path}: {why}"));
        }
        if config.language == Language::Cpp && self.pool.len() < DEMO_POOL {
            for rec in problems {
                if self.pool.len() >= DEMO_POOL {
                    break;
                }
                // A judge-only pair's test does not run: no demonstration of a good test.
                if let (Some(c), None) = (&rec.problem.cpp, &rec.exclusion) {
                    self.pool.push(Demo::of(repo, &rec.id, c, self.tokenizer)?);
                }
            }
        }
        Ok(())
    }
}

/// The problem's context files in fill order: `peer`, `other`, `repo`, each tier in a seeded
/// order; never the test's own file or its problem file.
fn tier_order(input: &mut RepoInput, pi: usize) -> Result<Vec<Arc<SourceFile>>, TokenizerError> {
    let rec = &input.problems[pi];
    let own: Vec<&str> = match &rec.problem.python {
        Some(p) => vec![p.test_file.as_str(), p.problem_file.as_str()],
        None => match &rec.problem.cpp {
            Some(c) => vec![c.test_path.as_str()],
            None => Vec::new(),
        },
    };
    let mut rng = Rng::for_key(input.options.seed, &format!("context/{}", rec.id));
    let mut out = Vec::new();
    for tier in [ContextTier::Peer, ContextTier::Other, ContextTier::Repo] {
        let mut paths: Vec<&str> = rec
            .tiers
            .iter()
            .filter(|t| t.tier == tier && !own.contains(&t.path.as_str()))
            .map(|t| t.path.as_str())
            .collect();
        paths.dedup();
        rng.shuffle(&mut paths);
        for p in paths {
            if let Some(f) = input.sources.get(p)? {
                out.push(f);
            }
        }
    }
    Ok(out)
}
