//! `clover-calibrate`: runs each problem's ground truth and annotates it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use clover_calibrate::cli::Cli;
use clover_calibrate::mutation::{self, MutantRun, MutationError, Sample};
use clover_calibrate::{
    calibrate_cpp, calibrate_group_noted, steady_text, CalibrateOptions, EmptyRuns, Note,
};
use clover_gtest::LibraryCache;
use clover_manifest::RepoConfig;
use clover_mutate::Verdict;
use clover_protocol::{
    diag, exit, finish_main, CalibratedProblem, Language, Problem, ProblemMutants, RecordReader,
    RecordWriter, Shard, StageIo, Stopped, Usage,
};
use clover_pytest::CheckedInterpreters;
use clover_sandbox::{Limits, Sandbox};
use rayon::prelude::*;

const TOOL: &str = "clover-calibrate";

fn main() -> ExitCode {
    finish_main(TOOL, run(Cli::parse()))
}

fn run(args: Cli) -> Result<u8> {
    let repos = args.repos.resolve().map_err(Usage::from_error)?;
    let sandbox = Sandbox::new().context("cannot start the sandbox")?;
    let default_python = args
        .python
        .clone()
        .or_else(|| {
            // A relative path means what it means in the shell, as a flag's does.
            let p = std::env::var("CLOVER_PYTHON").ok()?;
            Some(clover_protocol::resolved_path(&p).unwrap_or(p.into()))
        })
        .unwrap_or_else(|| PathBuf::from("/usr/bin/python3"));
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    let cache = LibraryCache::new(LibraryCache::default_dir())
        .context("cannot open the C++ library cache")?;
    let empties = EmptyRuns::default();
    let interpreters = CheckedInterpreters::default();
    let warm = (!args.cold).then(|| std::sync::Arc::new(clover_pytest::WarmPool::new()));
    let statements = std::sync::Arc::default();
    let ctx = Ctx {
        warm: &warm,
        statements: &statements,
        interpreters: &interpreters,
        sandbox: &sandbox,
        cache: &cache,
        empties: &empties,
        repos: &repos,
        args: &args,
        default_python: &default_python,
        pool: &pool,
    };

    // The shard is taken per test file, not per problem: a problem's peers must be calibrated
    // together, so every shard of a split run sees the same groups a single run sees.
    let shard = args.stage.shard;
    let mut stage_args = args.stage.clone();
    stage_args.shard = None;
    let mut sidecar = match args.mutants {
        Some(k) => Some(Sidecar::open(&args, k)?),
        None => None,
    };
    let mut io = StageIo::open(TOOL, &stage_args)?;
    if let (Some(sidecar), Some(output)) = (&mut sidecar, &args.stage.output) {
        if args.stage.resume {
            // Problems an earlier run wrote to the output but not to the sidecar (it ran
            // without --mutants, or stopped between the two) get their mutants now; their
            // groups are not calibrated again.
            backfill(&ctx, sidecar, output)?;
        }
    }
    let mut summary = Summary::new();
    let mut work = Work::new();

    let mut current: Option<Group> = None;
    // A stop (--on-error stop) ends the input there: what was read before it is still
    // calibrated and written, then the stage ends with the stop.
    let mut stopped: Option<anyhow::Error> = None;
    // Groups run on the pool as they are read, `jobs` at once: the next starts as soon as
    // one ends (a batch of `jobs` groups waited for its slowest file, leaving cores idle),
    // and the records are written in the input's order.
    let mut order = InOrder::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let ctx = &ctx;
    pool.in_place_scope(|scope| -> Result<()> {
        loop {
            let mut next = match io.next_record::<Problem>() {
                Ok(next) => next,
                Err(e) if e.is::<Stopped>() => {
                    stopped = Some(e);
                    None
                }
                Err(e) => return Err(e),
            };
            if let Some((line, problem)) = &next {
                if !repos.contains_key(&problem.repo) {
                    let why = format!(
                        "unknown repository `{}`; the manifest names {}",
                        problem.repo,
                        repos.keys().cloned().collect::<Vec<_>>().join(", ")
                    );
                    match io.reject(*line, &problem.id, &why) {
                        Ok(()) => continue,
                        Err(e) => {
                            stopped = Some(e);
                            next = None;
                        }
                    }
                }
            }
            let key = next.as_ref().map(|(_, p)| group_key(p));
            let close = match (&current, &key) {
                (Some(g), Some(k)) => &g.key != k,
                (Some(_), None) => true,
                _ => false,
            };
            if close {
                let g = current.take().expect("a current group");
                // A group an earlier run (--resume) wrote whole is not run again; one it wrote in
                // part is, and only its missing records are written.
                let all_done = g.problems.iter().all(|p| io.is_done(&p.id));
                if shard.is_none_or(|s: Shard| s.contains(&g.key)) && !all_done {
                    check_interpreters(ctx, [&g.problems[0]])?;
                    let (tx, seq) = (tx.clone(), order.launched);
                    order.launched += 1;
                    scope.spawn(move |_| {
                        let done = calibrate_one(ctx, &g);
                        // The receiver outlives the scope.
                        let _ = tx.send((seq, g, done));
                    });
                }
                while order.in_flight() >= jobs {
                    order.receive(&rx)?;
                    order.write(&mut io, ctx, &mut summary, &mut work, &mut sidecar)?;
                }
            }
            let Some((line, problem)) = next else { break };
            let g = current.get_or_insert_with(|| Group {
                key: group_key(&problem),
                lines: Vec::new(),
                problems: Vec::new(),
            });
            g.lines.push(line);
            g.problems.push(problem);
        }
        while order.in_flight() > 0 {
            order.receive(&rx)?;
            order.write(&mut io, ctx, &mut summary, &mut work, &mut sidecar)?;
        }
        Ok(())
    })?;

    if let Some(stop) = stopped {
        // FILE.partial keeps what was written, for a --resume once the input is fixed.
        return Err(stop);
    }
    let mut code = io.finish()?;
    if let Some(sidecar) = sidecar {
        if sidecar.finish()? {
            code = code.max(exit::BAD_RECORDS);
        }
    }
    // With --resume the records of the earlier run count too: the summary describes the
    // output file, so it is read back from it.
    if let (true, Some(output)) = (args.stage.resume, &args.stage.output) {
        let this_run = std::mem::replace(&mut summary, summarize_file(output)?);
        // What has no record in the file is this run's to say.
        for (repo, counts) in this_run {
            for key in [FAILED, LINES_VARY] {
                if let Some(n) = counts.get(key) {
                    summary
                        .entry(repo.clone())
                        .or_default()
                        .insert(key.into(), *n);
                }
            }
        }
    }
    // Work counts are this run's: a resumed run did not redo what it found written.
    for (repo, builds) in work {
        summary
            .entry(repo)
            .or_default()
            .insert(TEST_BUILDS.into(), builds);
    }
    for (repo, counts) in &summary {
        let parts: Vec<String> = counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
        diag!("{TOOL}: {repo}: {}", parts.join(", "));
    }
    let summary_path = args.summary.clone().or_else(|| {
        args.stage
            .output
            .as_ref()
            // Beside a file output; not beside /dev/null or a FIFO.
            .filter(|o| !clover_protocol::is_special_file(o))
            .map(|o| PathBuf::from(format!("{}.summary.json", o.display())))
    });
    if let Some(path) = summary_path {
        std::fs::write(&path, serde_json::to_string_pretty(&summary)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(code)
}

/// Per repository: `kept` and `excluded_<reason>` records of the output, problems that could
/// not be calibrated at all ([`FAILED`]), and (C++) how many times this run compiled a test
/// file ([`TEST_BUILDS`]).
type Summary = BTreeMap<String, BTreeMap<String, u64>>;
/// Per repository: test files compiled by this run.
type Work = BTreeMap<String, u64>;
/// The summary key of [`Work`]: each ground truth is compiled once (plus the empty test),
/// however many runs and TESTs it has.
const TEST_BUILDS: &str = "test_builds";
/// The summary key of problems that ended in an error of calibrate itself (the sandbox could
/// not run them; the errors file says why): they have no record, and are counted here.
const FAILED: &str = "failed";
/// The summary key of kept problems whose covered lines varied between runs in files the
/// benchmark takes nothing from (each is named on stderr); like [`TEST_BUILDS`], this run's.
const LINES_VARY: &str = "kept_lines_vary";

/// Counts one calibrated record: kept, or excluded with its reason.
fn count(summary: &mut Summary, r: &CalibratedProblem) -> Result<()> {
    let counts = summary.entry(r.repo.clone()).or_default();
    let key = match &r.exclusion {
        None => "kept".to_string(),
        Some(e) => format!(
            "excluded_{}",
            serde_json::to_value(e.reason)?.as_str().unwrap_or("?")
        ),
    };
    *counts.entry(key).or_default() += 1;
    Ok(())
}

/// The summary of a whole output file.
fn summarize_file(path: &std::path::Path) -> Result<Summary> {
    let mut summary = Summary::new();
    let mut reader = RecordReader::open(Some(path), usize::MAX)?;
    while let Some(next) = reader.next_record::<CalibratedProblem>() {
        count(&mut summary, &next?.1)?;
    }
    Ok(summary)
}

/// The problems of one original test file, with their input lines.
struct Group {
    key: String,
    lines: Vec<u64>,
    problems: Vec<Problem>,
}

fn group_key(p: &Problem) -> String {
    match (&p.python, &p.cpp) {
        (Some(py), _) => format!("{}/{}", p.repo, py.test_file),
        (None, Some(cc)) => format!("{}/{}", p.repo, cc.test_path),
        _ => p.id.clone(),
    }
}

/// What every group's calibration shares.
struct Ctx<'a> {
    sandbox: &'a Sandbox,
    /// C++ libraries under test, built once per repository and flags.
    cache: &'a LibraryCache,
    /// What a C++ file of one empty TEST covers, run once per repository.
    empties: &'a EmptyRuns,
    repos: &'a BTreeMap<String, RepoConfig>,
    args: &'a Cli,
    default_python: &'a std::path::Path,
    pool: &'a rayon::ThreadPool,
    /// Warm pytest workers for Python groups, unless `--cold`.
    warm: &'a Option<std::sync::Arc<clover_pytest::WarmPool>>,
    /// Each interpreter's check before its first run: `Err` says why it cannot serve.
    interpreters: &'a CheckedInterpreters,
    /// The executable lines of the Python files the runs reported so far.
    statements: &'a std::sync::Arc<clover_calibrate::KnownStatements>,
}

/// The interpreter a Python repository's problems run under: `--python`, the manifest's (or
/// the detected `.venv`), else the default; absolute, as the sandbox binds it.
fn python_for(args: &Cli, repo: &RepoConfig, default: &std::path::Path) -> PathBuf {
    let python = args
        .python
        .clone()
        .or_else(|| repo.python.clone())
        .unwrap_or_else(|| default.to_path_buf());
    std::path::absolute(&python).unwrap_or(python)
}

/// The limits of one run of a repository's tests.
fn limits_for(args: &Cli, repo: &RepoConfig) -> Limits {
    let mut limits = Limits::default();
    limits.wall = Duration::from_secs(args.timeout.unwrap_or(repo.timeout_secs));
    limits.cpu_secs = limits.wall.as_secs().max(1) * 2;
    limits.memory_bytes = args.memory.unwrap_or(repo.memory_mb) << 20;
    limits.pids = repo.pids;
    limits.cpus = repo.cpus;
    limits
}

/// Checks, once per interpreter and before its first run, that the Python interpreters of
/// `problems`' repositories can run pytest with coverage (see `clover_pytest::check_python`);
/// one that cannot stops the stage as bad usage, saying how to fix it.
fn check_interpreters<'p>(
    ctx: &Ctx,
    problems: impl IntoIterator<Item = &'p Problem>,
) -> Result<()> {
    for first in problems {
        let Some(repo) = ctx.repos.get(&first.repo) else {
            continue;
        };
        if first.language != Language::Python {
            continue;
        }
        let python = python_for(ctx.args, repo, ctx.default_python);
        if !python.is_file() {
            continue;
        }
        let checked = ctx
            .interpreters
            .check(ctx.sandbox, &python, &repo.root, |tools| {
                diag!("{TOOL}: {}: {tools}", python.display());
            })
            .context("checking the interpreter")?;
        if let Err(why) = checked {
            return Err(Usage(why).into());
        }
    }
    Ok(())
}

/// The groups sent to the pool, and those that ended, until their records are written in
/// the input's order.
#[derive(Default)]
struct InOrder {
    launched: usize,
    written: usize,
    ended: BTreeMap<usize, (Group, Result<GroupDone, String>)>,
}

impl InOrder {
    /// Groups sent and not yet ended.
    fn in_flight(&self) -> usize {
        self.launched - self.written - self.ended.len()
    }

    /// Waits for the next group to end.
    fn receive(
        &mut self,
        rx: &std::sync::mpsc::Receiver<(usize, Group, Result<GroupDone, String>)>,
    ) -> Result<()> {
        let (seq, g, done) = rx
            .recv()
            .context("a calibration thread ended without its group")?;
        self.ended.insert(seq, (g, done));
        Ok(())
    }

    /// Writes the records of the groups that ended with all those before them.
    fn write(
        &mut self,
        io: &mut StageIo,
        ctx: &Ctx,
        summary: &mut Summary,
        work: &mut Work,
        sidecar: &mut Option<Sidecar>,
    ) -> Result<()> {
        let mut groups = Vec::new();
        let mut results = Vec::new();
        while let Some((g, done)) = self.ended.remove(&self.written) {
            groups.push(g);
            results.push(done);
            self.written += 1;
        }
        write_groups(io, ctx, &groups, results, summary, work, sidecar)
    }
}

/// One group's records, the problems of it that failed alone (C++: by their index in the
/// group), and how many test files it compiled (C++).
fn calibrate_one(ctx: &Ctx, g: &Group) -> Result<GroupDone, String> {
    let Ctx {
        sandbox,
        cache,
        empties,
        repos,
        args,
        default_python,
        warm,
        statements,
        ..
    } = *ctx;
    let first = &g.problems[0];
    let repo = repos
        .get(&first.repo)
        .ok_or_else(|| clover_manifest::unknown_repo(&first.repo, repos))?;
    let limits = limits_for(args, repo);
    if first.language == Language::Cpp {
        // Each C++ problem is calibrated on its own: one that cannot be is
        // reported alone, and the others of its file go on.
        let mut done = GroupDone::default();
        for (i, p) in g.problems.iter().enumerate() {
            match calibrate_cpp(sandbox, cache, empties, repo, p, args.runs, &limits) {
                Ok(c) => {
                    if let Some(text) = c.note {
                        done.notes.push(Note {
                            id: p.id.clone(),
                            text,
                        });
                    }
                    done.records.push(c.record);
                    done.builds += u64::from(c.test_builds);
                }
                Err(e) => done.failed.push((i, e.to_string())),
            }
        }
        return Ok(done);
    }
    let python = python_for(args, repo, default_python);
    if !python.is_file() {
        return Err(format!(
                        "the interpreter {} of repository `{}` does not exist; name one with --python or `python` in the manifest",
                        python.display(),
                        repo.name
                    ));
    }
    let opts = CalibrateOptions {
        runs: args.runs,
        per_test: args.per_test,
        python,
        limits,
        warm: warm.clone(),
        statements: statements.clone(),
    };
    calibrate_group_noted(sandbox, repo, &g.problems, &opts)
        .map(|c| GroupDone {
            records: c.records,
            notes: c.notes,
            ..GroupDone::default()
        })
        .map_err(|e| e.to_string())
}

/// Writes the records of `groups` (their `results`, in order), with the mutants of those the
/// sidecar wants.
fn write_groups(
    io: &mut StageIo,
    ctx: &Ctx,
    groups: &[Group],
    results: Vec<Result<GroupDone, String>>,
    summary: &mut Summary,
    work: &mut Work,
    sidecar: &mut Option<Sidecar>,
) -> Result<()> {
    if groups.is_empty() {
        return Ok(());
    }
    let mut judged = match sidecar {
        Some(sidecar) => {
            let records: Vec<&CalibratedProblem> = results
                .iter()
                .flatten()
                .flat_map(|done| &done.records)
                .filter(|r| sidecar.wants(r))
                .collect();
            judge_mutants(ctx, sidecar, &records)
        }
        None => HashMap::new(),
    };
    for (g, result) in groups.iter().zip(results) {
        let failed = match result {
            Ok(done) => {
                if done.builds > 0 {
                    *work.entry(g.problems[0].repo.clone()).or_default() += done.builds;
                }
                for mut r in done.records {
                    // A failure's message may carry an address, a temporary path or a
                    // duration; the output must be the same in every run.
                    if let Some(e) = &mut r.exclusion {
                        e.detail = steady_text(&e.detail);
                    }
                    count(summary, &r)?;
                    // The sidecar record first: a run stopped between the two writes leaves
                    // the problem undone in the output, so --resume calibrates it again.
                    if let (Some(sidecar), Some(mutants)) = (sidecar.as_mut(), judged.remove(&r.id))
                    {
                        sidecar.write(&r.id, mutants)?;
                    }
                    if !io.is_done(&r.id) {
                        io.writer.write(&r)?;
                    }
                }
                for note in &done.notes {
                    diag!("{TOOL}: note: {}: {}", note.id, steady_text(&note.text));
                }
                if !done.notes.is_empty() {
                    *summary
                        .entry(g.problems[0].repo.clone())
                        .or_default()
                        .entry(LINES_VARY.into())
                        .or_default() += done.notes.len() as u64;
                }
                done.failed
            }
            Err(why) => (0..g.problems.len()).map(|i| (i, why.clone())).collect(),
        };
        for (i, why) in failed {
            let p = &g.problems[i];
            io.report_failed(g.lines[i], &p.id, &steady_text(&why));
            // Counted too: the summary accounts for every problem of the input.
            *summary
                .entry(p.repo.clone())
                .or_default()
                .entry(FAILED.into())
                .or_default() += 1;
        }
    }
    Ok(())
}

/// What calibrating one group gave.
#[derive(Debug, Default)]
struct GroupDone {
    records: Vec<CalibratedProblem>,
    /// Problems (index in the group) that could not be calibrated, and why.
    failed: Vec<(usize, String)>,
    /// Test files compiled (C++).
    builds: u64,
    /// Kept problems whose lines varied outside what the benchmark uses.
    notes: Vec<Note>,
}

/// The mutants sidecar (`--mutants`): where it goes, what an earlier run (`--resume`) wrote
/// to it, and this run's counts.
struct Sidecar {
    writer: RecordWriter,
    path: PathBuf,
    /// Problems with a record in the sidecar.
    done: HashSet<String>,
    max_mutants: usize,
    seed: u64,
    tally: Tally,
    /// Spent drawing and running mutants.
    seconds: f64,
}

/// This run's mutation pass, for the summary line.
#[derive(Debug, Default)]
struct Tally {
    problems: u64,
    sampled: u64,
    kept: u64,
    survived: u64,
    invalid: u64,
    errors: u64,
}

impl Sidecar {
    fn open(args: &Cli, max_mutants: u32) -> Result<Sidecar> {
        let beside_output = args
            .stage
            .output
            .as_ref()
            .filter(|o| !clover_protocol::is_special_file(o))
            .map(|o| PathBuf::from(format!("{}.mutants.jsonl", o.display())));
        let path = args.mutants_out.clone().or(beside_output).ok_or_else(|| {
            Usage("--mutants writes a sidecar: give -o FILE or --mutants-out FILE".into())
        })?;
        let (writer, done) = RecordWriter::create(&path, args.stage.resume)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Sidecar {
            writer,
            path,
            done,
            max_mutants: max_mutants as usize,
            seed: args.mutants_seed,
            tally: Tally::default(),
            seconds: 0.0,
        })
    }

    /// Whether `record` gets mutants from this run.
    fn wants(&self, record: &CalibratedProblem) -> bool {
        mutation::wants_mutants(record) && !self.done.contains(&record.id)
    }

    /// Writes a problem's record, once; a problem whose mutants could not be judged is
    /// reported and left without one.
    fn write(&mut self, id: &str, judged: Result<ProblemMutants, MutationError>) -> Result<()> {
        match judged {
            Ok(record) => {
                if self.done.insert(id.to_string()) {
                    let t = &mut self.tally;
                    t.problems += 1;
                    t.kept += record.kept.len() as u64;
                    t.survived += record.survived.len() as u64;
                    t.invalid += record.invalid.len() as u64;
                    t.sampled +=
                        (record.kept.len() + record.survived.len() + record.invalid.len()) as u64;
                    self.writer
                        .write(&record)
                        .with_context(|| format!("cannot write {}", self.path.display()))?;
                }
            }
            Err(e) => {
                diag!("{TOOL}: error: mutants: {e}");
                self.tally.errors += 1;
            }
        }
        Ok(())
    }

    /// Finishes the sidecar and prints this run's summary line; `true` when some problem's
    /// mutants could not be judged.
    fn finish(self) -> Result<bool> {
        self.writer
            .finish()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        let t = &self.tally;
        let errors = if t.errors > 0 {
            format!(", {} failed", t.errors)
        } else {
            String::new()
        };
        diag!(
            "{TOOL}: mutants: {} problems, {} sampled, {} kept, {} survived, {} invalid{errors}, {:.1} s",
            t.problems,
            t.sampled,
            t.kept,
            t.survived,
            t.invalid,
            self.seconds
        );
        Ok(t.errors > 0)
    }
}

/// Draws the mutants of `records` and runs each problem's ground truth against each of its
/// mutants, all the runs of all the problems spread over the pool (`--jobs`) alike; the
/// sidecar record of each problem, or why it has none, by id.
fn judge_mutants(
    ctx: &Ctx,
    sidecar: &mut Sidecar,
    records: &[&CalibratedProblem],
) -> HashMap<String, Result<ProblemMutants, MutationError>> {
    let started = Instant::now();
    let (k, seed) = (sidecar.max_mutants, sidecar.seed);
    let samples: Vec<Result<Sample, MutationError>> = ctx.pool.install(|| {
        records
            .par_iter()
            .map(|r| mutation::sample(&ctx.repos[&r.repo], r, k, seed))
            .collect()
    });
    let run_of = |record: &CalibratedProblem, limits: Limits| {
        let repo = &ctx.repos[&record.repo];
        MutantRun {
            repo,
            python: python_for(ctx.args, repo, ctx.default_python),
            limits,
            cache: ctx.cache,
            warm: ctx.warm.as_deref(),
        }
    };
    // First each problem's control run on the original code, which must pass for its mutants'
    // runs to mean anything, and whose time bounds theirs (`pytest::mutant_limits`: a mutant that
    // loops forever costs a few times the ground truth, not the repository's whole limit).
    let controls: Vec<Option<Result<Duration, MutationError>>> = ctx.pool.install(|| {
        samples
            .par_iter()
            .zip(records.par_iter())
            .map(|(s, record)| {
                let sample = s.as_ref().ok().filter(|s| !s.mutants.mutants.is_empty())?;
                let run = run_of(record, limits_for(ctx.args, &ctx.repos[&record.repo]));
                let t = Instant::now();
                Some(
                    mutation::run_ground_truth(ctx.sandbox, &run, record, sample, None)
                        .map(|_| t.elapsed()),
                )
            })
            .collect()
    });
    // The limits of a mutant's run: a few times its problem's control run.
    let mutant_run = |i: usize| {
        let record = records[i];
        let Some(Ok(control)) = &controls[i] else {
            unreachable!("mutants run only of problems whose control run passed")
        };
        let own = limits_for(ctx.args, &ctx.repos[&record.repo]);
        // (A C++ harness bounds its mutants' runs itself, with its compile's time.)
        run_of(record, clover_pytest::mutant_limits(&own, *control))
    };
    let passed = |i: usize| matches!(controls[i], Some(Ok(_)));
    // Then the mutants of the problems whose control run passed: a Python problem's first in
    // one batch of a warm worker (the problem file collected once, each mutant patched into a
    // fork of it), then each one the batch did not judge, and a C++ problem's, in a run of its
    // own; the batches, then the runs, of all the problems spread over the pool alike.
    let batched: Vec<Vec<Option<Verdict>>> = ctx.pool.install(|| {
        (0..records.len())
            .into_par_iter()
            .map(|i| match (&samples[i], ctx.warm.as_deref()) {
                (Ok(sample), Some(pool))
                    if passed(i) && records[i].problem.language == Language::Python =>
                {
                    mutation::batch_ground_truth(
                        ctx.sandbox,
                        &mutant_run(i),
                        pool,
                        records[i],
                        sample,
                    )
                }
                _ => Vec::new(),
            })
            .collect()
    });
    let runs: Vec<(usize, usize)> = samples
        .iter()
        .enumerate()
        .filter(|&(i, _)| passed(i))
        .filter_map(|(i, s)| Some((i, s.as_ref().ok()?.mutants.mutants.len())))
        .flat_map(|(i, n)| (0..n).map(move |j| (i, j)))
        .filter(|&(i, j)| batched[i].get(j).is_none_or(Option::is_none))
        .collect();
    let ran: Vec<Result<Verdict, MutationError>> = ctx.pool.install(|| {
        runs.par_iter()
            .map(|&(i, j)| {
                let sample = samples[i].as_ref().expect("runs only of drawn samples");
                let mutant = sample.mutants.mutants.get(j);
                mutation::run_ground_truth(ctx.sandbox, &mutant_run(i), records[i], sample, mutant)
            })
            .collect()
    });
    // Every mutant's verdict, in the problems' and their samples' order.
    let mut ran = runs.iter().zip(ran);
    let verdicts: Vec<Result<Verdict, MutationError>> = samples
        .iter()
        .enumerate()
        .filter(|&(i, _)| passed(i))
        .filter_map(|(i, s)| Some((i, s.as_ref().ok()?.mutants.mutants.len())))
        .flat_map(|(i, n)| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| match batched[i].get(j).cloned().flatten() {
            Some(v) => Ok(v),
            None => {
                let (at, v) = ran.next().expect("a run of every mutant the batch left");
                debug_assert_eq!(*at, (i, j));
                v
            }
        })
        .collect();
    let mut verdicts = verdicts.into_iter();
    let mut judged = HashMap::new();
    for ((record, sample), control) in records.iter().zip(samples).zip(controls) {
        let result = sample.and_then(|sample| {
            if let Some(control) = control {
                control?;
            }
            // This sample's verdicts, in its mutants' order, all taken (even after an error) so
            // the next sample starts at its own.
            let n = sample.mutants.mutants.len();
            let mine: Vec<_> = verdicts.by_ref().take(n).collect();
            let mine = mine.into_iter().collect::<Result<Vec<_>, _>>()?;
            Ok(sample.judge(mine))
        });
        judged.insert(record.id.clone(), result);
    }
    sidecar.seconds += started.elapsed().as_secs_f64();
    judged
}

/// On `--resume`: the mutants of the kept problems the output already holds but the sidecar
/// does not, written to the sidecar in the output's order, in batches the size of a flush.
fn backfill(ctx: &Ctx, sidecar: &mut Sidecar, output: &std::path::Path) -> Result<()> {
    // StageIo has moved an earlier output to its partial file to append to it.
    let partial = clover_protocol::partial_path(output);
    if !partial.exists() {
        return Ok(());
    }
    let mut reader = RecordReader::open(Some(&partial), usize::MAX)?;
    let mut batch: Vec<CalibratedProblem> = Vec::new();
    loop {
        let next = reader.next_record::<CalibratedProblem>().transpose()?;
        if let Some((_, r)) = next.as_ref() {
            if sidecar.wants(r) && ctx.repos.contains_key(&r.repo) {
                batch.push(r.clone());
            }
        }
        if next.is_none() || batch.len() >= ctx.pool.current_num_threads() * 4 {
            check_interpreters(ctx, batch.iter().map(|r| &r.problem))?;
            let records: Vec<&CalibratedProblem> = batch.iter().collect();
            let mut judged = judge_mutants(ctx, sidecar, &records);
            for r in &batch {
                if let Some(result) = judged.remove(&r.id) {
                    sidecar.write(&r.id, result)?;
                }
            }
            batch.clear();
        }
        if next.is_none() {
            return Ok(());
        }
    }
}
