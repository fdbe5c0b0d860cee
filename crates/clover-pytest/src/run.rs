//! Running pytest in the sandbox: the command, the binds a Python interpreter needs, the
//! reports, and the verdict cross-checked between exit status, report and pytest's own record
//! of its session (sent by a trusted plugin, `_clover_report.py`, through the run's report
//! channel, which no file of the run is).

use std::ffi::OsString;
use std::path::PathBuf;

use clover_protocol::{FileCoverage, LimitHit, LineRanges, Outcome, TestCase, TestOutcome};

use clover_report::{parse_cobertura, parse_junit, verdict_of_ending, ReportError};
use clover_sandbox::{
    ChannelBytes, Collected, CollectedFile, ExitStatus, Limits, RunOutput, RunSpec, Sandbox,
    SandboxError, WriteFile,
};

use crate::interpreter::{python_binds, PythonTools};
use crate::worker::{BatchVerdicts, ColdReason, WarmPool, WarmRun};

/// Where reports go, relative to the repository; the sandbox user may write there.
pub const OUT_DIR: &str = ".clover-out";

/// The trusted plugin every run loads (`-p`): at the session's end it sends pytest's own
/// record of the session through the run's report channel ([`check_session`] reads it).
const PLUGIN: &str = include_str!("_clover_report.py");
const PLUGIN_MODULE: &str = "_clover_report";
/// The first word of the record's frame, `clover-session LENGTH\n` then the record.
const RECORD_TAG: &str = "clover-session";

/// The reports a run may write, relative to the repository: the JUnit report, a cold run's
/// Cobertura XML and a warm run's hit lines. The plugin hashes each into the session record
/// (`$CLOVER_REPORTS`), so that one rewritten after it does not pass for pytest's.
fn reports() -> [String; 3] {
    ["junit.xml", "coverage.xml", "coverage.json"].map(|f| format!("{OUT_DIR}/{f}"))
}

/// The coverage.py settings of a run that measures `sources` (folders relative to the
/// repository), to be passed as `--cov --cov-config=FILE`; the repository's own coverage
/// settings are not read, so every run measures the same lines the same way.
///
/// The files are chosen with `include`, not `source`: coverage.py's Cobertura report strips
/// each `source` folder from the names of the files under it, so `src/a/util.py` and
/// `src/b/util.py` would both be reported as `util.py`. With `include` and `relative_files`
/// every file is named by its path from the repository root (the run's working directory),
/// which [`clover_report::parse_cobertura`] resolves without a guess.
pub fn coverage_rc(sources: &[String]) -> String {
    let mut rc = String::from("[run]\nrelative_files = True\ninclude =\n");
    for s in sources {
        let s = s.trim_end_matches('/');
        // The folder's files, or the file itself when a source is one module.
        rc.push_str(&format!("    {s}/*\n    {s}\n"));
    }
    rc
}

/// The limits of a Python candidate's (or ground truth's) run on a mutant, from the limits
/// of its own run (`limits`) and the time it took (`plain`): three times that time and 1 s
/// more, at most its own wall clock; CPU within twice the wall. A mutant that loops is killed
/// by its limit in seconds; a run that takes a few times as long as the original is a mutant
/// that made the code slower, which the test may or may not notice: past three times, it is
/// counted as noticed (killed), as mutmut and cosmic-ray count a timeout. (A C++ mutant's run
/// has 5 s more, `gtest::mutant_limits`: it compiles and links first.)
pub fn mutant_limits(limits: &Limits, plain: std::time::Duration) -> Limits {
    let wall = (plain * 3 + std::time::Duration::from_secs(1)).min(limits.wall);
    Limits {
        wall,
        cpu_secs: limits.cpu_secs.min(wall.as_secs().max(1) * 2),
        ..limits.clone()
    }
}

/// One pytest invocation.
#[derive(Debug, Clone)]
pub struct PytestRun {
    pub repo: PathBuf,
    /// The interpreter, typically a virtual environment's `bin/python` with pytest and
    /// pytest-cov installed.
    pub python: PathBuf,
    /// Node ids or files, relative to the repository.
    pub targets: Vec<String>,
    /// Files written before the run (the candidate test).
    pub files: Vec<WriteFile>,
    /// Source folders to measure (`--cov=`); none means no coverage.
    pub cov_sources: Vec<String>,
    /// The files of `cov_sources` whose lines are read, when not all of theirs are: the run
    /// measures only these, and nothing when there are none (a verdict is all that is read).
    /// A warm run of it is served by the worker that measures all of `cov_sources`, which
    /// traces only these files in its fork, or stops measuring there.
    pub cov_only: Option<Vec<String>>,
    /// Record per-test contexts (`--cov-context=test`).
    pub cov_contexts: bool,
    /// Files (relative to the repository) whose function bodies the run witnesses: each of
    /// their statements, as it runs, is noted apart from coverage.py, and a run whose
    /// coverage claims a line the witness never saw run is forged ([`check_witness`]). The
    /// files the scoring reads (`cov_only`); none turns the defence off.
    pub witness: Vec<String>,
    pub env: Vec<(OsString, OsString)>,
    pub limits: Limits,
}

/// What a pytest run showed.
#[derive(Debug, Clone)]
pub struct PytestResult {
    pub outcome: Outcome,
    pub tests: Vec<TestCase>,
    pub coverage: Vec<FileCoverage>,
    /// Why the outcome is what it is when the report alone does not say it.
    pub message: Option<String>,
    pub run: RunOutput,
}

/// pytest's arguments before any coverage option and the targets: the same in a cold run
/// and a warm worker.
fn pytest_args() -> Vec<String> {
    [
        "-p",
        "no:cacheprovider",
        "-p",
        PLUGIN_MODULE,
        "-q",
        "-o",
        "junit_family=xunit1",
    ]
    .into_iter()
    .map(String::from)
    .chain([format!("--junitxml={}", reports()[0])])
    .collect()
}

/// How the lines a run covered come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CoverageReport {
    /// coverage.py's Cobertura XML (a cold run, through pytest-cov).
    Cobertura,
    /// The warm worker's record: repository-relative file → the lines coverage.py's XML
    /// report would mark as hit.
    Lines,
}

impl PytestRun {
    /// The sandbox run this pytest invocation is.
    pub fn spec(&self) -> RunSpec {
        let [junit, cov, _] = reports();
        let mut argv: Vec<OsString> =
            vec![self.python.clone().into(), "-m".into(), "pytest".into()];
        argv.extend(pytest_args().into_iter().map(OsString::from));
        if self.measures() {
            argv.push("--cov".into());
            argv.push(format!("--cov-config={OUT_DIR}/coveragerc").into());
            argv.push(format!("--cov-report=xml:{cov}").into());
            if self.cov_contexts {
                argv.push("--cov-context=test".into());
            }
        }
        argv.extend(self.targets.iter().map(OsString::from));
        let mut spec = self.base_spec(argv, self.measured_files());
        spec.files.extend(self.files.iter().cloned());
        // The witnessed files, one a line (a path may hold any other character): a cold run's
        // plugin reads them; a warm worker is told them per request instead, so that one
        // worker serves every set of them.
        if !self.witness.is_empty() {
            spec.env
                .push(("CLOVER_WITNESS".into(), self.witness.join("\n").into()));
        }
        spec.collect = vec![junit.into(), cov.into()];
        spec
    }

    /// Has coverage.py measure with `sys.monitoring` where `tools` say it reports the same
    /// lines that way ([`PythonTools::sysmon`]), unless the run's environment names a core
    /// already or the run records each test's lines (coverage.py's `sysmon` core has no
    /// dynamic contexts): `COVERAGE_CORE=sysmon`, which a cold run's pytest-cov and a warm
    /// worker's coverage.py both read, so the two measure alike.
    pub fn measure_with_sysmon(&mut self, tools: &PythonTools) {
        if tools.sysmon()
            && !self.cov_contexts
            && !self.env.iter().any(|(k, _)| k == "COVERAGE_CORE")
        {
            self.env.push(("COVERAGE_CORE".into(), "sysmon".into()));
        }
    }

    /// Whether the run measures anything.
    fn measures(&self) -> bool {
        !self.measured_files().is_empty()
    }

    /// What the run measures: `cov_only`, or else all of `cov_sources`.
    fn measured_files(&self) -> &[String] {
        self.cov_only.as_deref().unwrap_or(&self.cov_sources)
    }

    /// A run of `argv` with what every pytest run here needs: clover's plugin, the coverage
    /// settings of `measured` (none: no settings), the interpreter's binds, the environment
    /// and the limits.
    fn base_spec(&self, argv: Vec<OsString>, measured: &[String]) -> RunSpec {
        let mut spec = RunSpec::new(&self.repo, argv);
        spec.files.push(WriteFile {
            path: format!("{OUT_DIR}/{PLUGIN_MODULE}.py").into(),
            contents: PLUGIN.as_bytes().to_vec(),
        });
        if !measured.is_empty() {
            spec.files.push(WriteFile {
                path: format!("{OUT_DIR}/coveragerc").into(),
                contents: coverage_rc(measured).into_bytes(),
            });
        }
        spec.binds = python_binds(&self.python);
        spec.writable_dirs = vec![OUT_DIR.into()];
        spec.report_channel = true;
        spec.limits = self.limits.clone();
        let mut env = vec![("COVERAGE_FILE".into(), "/tmp/.coverage".into())];
        if let Some(bin) = self.python.parent() {
            let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
            env.push(("PATH".into(), path.into()));
        }
        // The plugin's folder goes first on the path, before any the repository asks for.
        let mut python_path = OsString::from(OUT_DIR);
        for (k, v) in &self.env {
            if k == "PYTHONPATH" && !v.is_empty() {
                python_path.push(":");
                python_path.push(v);
            }
        }
        env.extend(self.env.iter().filter(|(k, _)| k != "PYTHONPATH").cloned());
        env.push(("PYTHONPATH".into(), python_path));
        env.push(("CLOVER_REPORTS".into(), reports().join(":").into()));
        spec.env = env;
        spec
    }

    pub fn run(&self, sandbox: &Sandbox) -> Result<PytestResult, SandboxError> {
        let run = sandbox.run(&self.spec())?;
        Ok(self.verdict(run, CoverageReport::Cobertura))
    }

    /// Runs in a warm worker of `pool` (one is started for this repository, interpreter and
    /// setting when none is idle), or cold when no worker can serve it; the result's message
    /// then says why. The verdict is made the same way either way.
    pub fn run_warm(
        &self,
        sandbox: &Sandbox,
        pool: &WarmPool,
    ) -> Result<PytestResult, SandboxError> {
        Ok(self.run_warm_then_mutants(sandbox, pool, &[], None)?.0)
    }

    /// Runs as [`PytestRun::run_warm`] does and then, when the candidate passed (status 0),
    /// against each of `mutants` in the same worker request ([`WarmPool::run_measured`]):
    /// collected once, the measured run and each mutant's in a fork, each mutant's within
    /// `limits` (and three times the measured run's time). The result is the one
    /// `run_warm` gives; the verdicts are as [`PytestRun::run_mutants_warm`]'s, or `None`
    /// where no batch ran (the worker could not serve the run so, or ran it without one).
    pub fn run_warm_measuring_mutants(
        &self,
        sandbox: &Sandbox,
        pool: &WarmPool,
        mutants: &[WriteFile],
        limits: &Limits,
    ) -> Result<(PytestResult, Option<BatchVerdicts>), SandboxError> {
        self.run_warm_then_mutants(sandbox, pool, mutants, Some(limits))
    }

    fn run_warm_then_mutants(
        &self,
        sandbox: &Sandbox,
        pool: &WarmPool,
        mutants: &[WriteFile],
        limits: Option<&Limits>,
    ) -> Result<(PytestResult, Option<BatchVerdicts>), SandboxError> {
        if self.cov_contexts {
            return Ok((self.run(sandbox)?, None));
        }
        let [junit, _, cov_out] = reports();
        let collect: Vec<PathBuf> = vec![junit.into(), cov_out.clone().into()];
        let writable = [PathBuf::from(OUT_DIR)];
        // The worker measures all of the sources; the fork, what this run reads of them.
        let base = self.base_spec(Vec::new(), &self.cov_sources);
        let mut run = WarmRun {
            base: &base,
            python: &self.python,
            args: &pytest_args(),
            coveragerc: (!self.cov_sources.is_empty()).then(|| format!("{OUT_DIR}/coveragerc")),
            sources: &self.cov_sources,
            save_coverage: false,
            coverage_lines: (!self.cov_sources.is_empty()).then_some(cov_out.as_str()),
            only: self.cov_only.as_deref(),
            witness: &self.witness,
            targets: &self.targets,
            files: &self.files,
            writable: &writable,
            collect: &collect,
            late: false,
            mutants,
        };
        if let (Some(limits), false) = (limits, mutants.is_empty()) {
            // What the measured request cannot serve runs as a plain run alone.
            if let Ok((out, verdicts)) = pool.run_measured(sandbox, &run, limits) {
                return Ok((self.verdict(out, CoverageReport::Lines), verdicts));
            }
            run.mutants = &[];
        }
        let mut warm = pool.run_pytest(sandbox, &run);
        if matches!(warm, Err(ColdReason::Replaces(_))) {
            run.late = true;
            warm = pool.run_pytest(sandbox, &run);
        }
        match warm {
            Ok(run) => Ok((self.verdict(run, CoverageReport::Lines), None)),
            Err(why) => {
                let mut r = self.run(sandbox)?;
                let note = format!("ran cold: {why}");
                r.message = Some(match r.message.take() {
                    Some(m) => format!("{m} ({note})"),
                    None => note,
                });
                Ok((r, None))
            }
        }
    }

    /// Runs this candidate against each of `mutants` (files written over the repository's)
    /// in one batch of a warm worker of `pool` ([`WarmPool::run_mutants`]): collected once,
    /// then each mutant patched into a fork and run to its first failing test within
    /// `limits`, without coverage. Each mutant's verdict, `Some`, or `None` for one
    /// the batch could not judge (no worker, or the mutant needs a fresh view of its own):
    /// run that one on its own.
    pub fn run_mutants_warm(
        &self,
        sandbox: &Sandbox,
        pool: &WarmPool,
        mutants: &[WriteFile],
        limits: &Limits,
    ) -> BatchVerdicts {
        let none = || vec![None; mutants.len()];
        if self.cov_contexts || mutants.is_empty() {
            return none();
        }
        let mut base = self.base_spec(Vec::new(), &self.cov_sources);
        // The whole batch: the candidate's collection, then every mutant's run.
        base.limits.wall = self.limits.wall + limits.wall * mutants.len() as u32;
        let writable = [PathBuf::from(OUT_DIR)];
        let run = WarmRun {
            base: &base,
            python: &self.python,
            args: &pytest_args(),
            coveragerc: None,
            sources: &[],
            save_coverage: false,
            coverage_lines: None,
            only: None,
            witness: &[],
            targets: &self.targets,
            files: &self.files,
            writable: &writable,
            collect: &[],
            late: false,
            mutants,
        };
        pool.run_mutants(sandbox, &run, limits)
            .unwrap_or_else(|_| none())
    }

    /// The verdict of a run of this invocation, cold or warm, from what it left.
    fn verdict(&self, run: RunOutput, report: CoverageReport) -> PytestResult {
        let repo = self
            .repo
            .canonicalize()
            .unwrap_or_else(|_| self.repo.clone());
        let (tests, report_problem) = match run.files.first().map(|f| &f.content) {
            Some(Collected::Read { bytes, .. }) => match parse_junit(bytes) {
                Ok(t) => (Some(t), None),
                Err(e) => (None, Some(format!("the JUnit report is unreadable: {e}"))),
            },
            Some(Collected::Refused(why)) => {
                (None, Some(format!("the JUnit report was refused: {why}")))
            }
            _ => (None, None),
        };
        // A coverage report that is missing or unreadable counts as no coverage, and says so.
        let (coverage, coverage_problem) = match run.files.get(1).map(|f| &f.content) {
            _ if !self.measures() => (Vec::new(), None),
            Some(Collected::Read { bytes, .. }) => match match report {
                CoverageReport::Cobertura => parse_cobertura(bytes, &repo),
                CoverageReport::Lines => parse_lines(bytes),
            } {
                Ok(c) => (c, None),
                Err(e) => (
                    Vec::new(),
                    Some(format!("the coverage report is unreadable: {e}")),
                ),
            },
            Some(Collected::Refused(why)) => (
                Vec::new(),
                Some(format!("the coverage report was refused: {why}")),
            ),
            _ => (Vec::new(), Some("no coverage report was written".into())),
        };
        let (mut outcome, mut message) = judge(run.exit, run.limit_hit, tests.as_deref());
        let (mut tests, mut coverage) = (tests, coverage);
        // A report the judge would take is taken only if pytest's own record of the session
        // vouches for it; a limit or a signal already decided the verdict. A report it does not
        // vouch for is forged, and nothing of it outlives the verdict: no test, no line.
        if let (None, ExitStatus::Code(code), Some(cases)) = (run.limit_hit, run.exit, &tests) {
            let checked = session_record(run.channel.as_ref()).and_then(|record| {
                check_session(code, &run.files, cases, record)?;
                check_witness(record, &coverage)
            });
            if let Err(problem) = checked {
                outcome = Outcome::Forged;
                message = Some(problem);
                tests = None;
                coverage = Vec::new();
            }
        }
        PytestResult {
            outcome,
            tests: tests.unwrap_or_default(),
            coverage,
            message: match outcome {
                Outcome::Forged => message,
                _ => report_problem.or(message).or(coverage_problem),
            },
            run,
        }
    }
}

/// The warm worker's coverage record: `{"path": [line, ...], ...}`, paths relative to the
/// repository, in the order of the paths.
fn parse_lines(bytes: &[u8]) -> Result<Vec<FileCoverage>, ReportError> {
    let files: std::collections::BTreeMap<String, Vec<u32>> =
        serde_json::from_slice(bytes).map_err(|e| ReportError::Unreadable(e.to_string()))?;
    Ok(files
        .into_iter()
        .map(|(path, lines)| FileCoverage {
            path,
            lines: LineRanges::from_lines(lines),
        })
        .collect())
}

/// The verdict of a pytest run from its exit status, the limit that ended it and its report.
///
/// pytest's exit codes: 0 all passed, 1 some failed, 2 interrupted (collection errors),
/// 3 internal error, 4 usage error, 5 nothing collected. A run that ends without a report
/// (a crash, a kill) is never "passed"; a report that contradicts the exit code is an error;
/// a report whose every test was skipped (or xfailed) is `no_tests_run`.
pub fn judge(
    exit: ExitStatus,
    limit: Option<LimitHit>,
    tests: Option<&[TestCase]>,
) -> (Outcome, Option<String>) {
    let (code, tests) = match verdict_of_ending("pytest", exit, limit, tests) {
        Ok(ended) => ended,
        Err(verdict) => return verdict,
    };
    let any = |o: TestOutcome| tests.iter().any(|t| t.outcome == o);
    match code {
        5 => (Outcome::Error, Some("pytest collected no tests".into())),
        0 if any(TestOutcome::Failed) || any(TestOutcome::Error) => (
            Outcome::Error,
            Some("pytest exited 0 but its report has failures".into()),
        ),
        0 if tests.is_empty() => (Outcome::Error, Some("the report has no tests".into())),
        // pytest reports an xfailed test as skipped: a file that only skips or expects its
        // failures checked nothing, whatever its exit code says.
        0 if tests.iter().all(|t| t.outcome == TestOutcome::Skipped) => (
            Outcome::NoTestsRun,
            Some(format!("all {} tests were skipped or xfailed", tests.len())),
        ),
        0 => (Outcome::Passed, None),
        1 | 2 if any(TestOutcome::Error) => (Outcome::Error, None),
        1 if any(TestOutcome::Failed) => (Outcome::Failed, None),
        _ => (Outcome::Error, Some(format!("pytest exited with {code}"))),
    }
}

/// The session record in what a run wrote into its report channel: nothing (the session
/// never ended), or exactly one frame, `clover-session LENGTH\n` and LENGTH bytes. Bytes
/// before or after it, a second frame, a frame cut short or a channel that overflowed mean
/// that something besides the plugin wrote into the channel: the run is not believed.
fn session_record(channel: Option<&ChannelBytes>) -> Result<Option<&[u8]>, String> {
    let Some(channel) = channel else {
        return Err("the run had no report channel".into());
    };
    let bytes = channel.bytes.as_slice();
    if channel.total == 0 {
        return Ok(None);
    }
    let stray = || {
        format!(
            "the report channel holds {} bytes that are not one session record",
            channel.total
        )
    };
    if channel.total != bytes.len() as u64 {
        return Err(stray());
    }
    let header_end = bytes.iter().position(|&b| b == b'\n').ok_or_else(stray)?;
    let header = std::str::from_utf8(&bytes[..header_end]).map_err(|_| stray())?;
    let length = header
        .strip_prefix(RECORD_TAG)
        .and_then(|rest| rest.strip_prefix(' '))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<usize>().ok())
        .ok_or_else(stray)?;
    let body = &bytes[header_end + 1..];
    if body.len() != length {
        return Err(stray());
    }
    Ok(Some(body))
}

/// Whether pytest's own record of its session (sent by the trusted plugin at the very end,
/// `record`) vouches for the reports of a run that exited with `code` (`reports`, the files
/// read back, the JUnit report first, parsed as `tests`): the record exists (else the session
/// never ended: `os._exit`, a killed reporter), its exit status is the process's (an `atexit`
/// handler that exits otherwise shows), every report's bytes are those the record hashed,
/// and a report that is not there was not there for the plugin either (a report rewritten,
/// planted or removed after the session ended), and the JUnit report holds the tests pytest
/// saw, by outcome, with none left unfinished.
///
/// A test runs in pytest's process and could reach the channel and forge the record as well;
/// this catches the forgeries that do not, the screen the constructs that would.
pub fn check_session(
    code: i32,
    reports: &[CollectedFile],
    tests: &[TestCase],
    record: Option<&[u8]>,
) -> Result<(), String> {
    let Some(record) = record.map(String::from_utf8_lossy) else {
        return Err(format!(
            "the report was not completed by pytest: no session record (exit code {code})"
        ));
    };
    let field = |key: &str| {
        record.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().to_string())
        })
    };
    let number = |key: &str| field(key).and_then(|v| v.parse::<i64>().ok());
    if let Some(what) = field("tampered") {
        return Err(format!(
            "the run changed pytest's own machinery, through which verdicts travel: {what}"
        ));
    }
    let Some(status) = number("exitstatus") else {
        return Err("the session record is unreadable".into());
    };
    if status != i64::from(code) {
        return Err(format!(
            "pytest ended its session with exit code {status} but the process exited with {code}"
        ));
    }
    for report in reports {
        let path = report.path.to_string_lossy();
        let hashed = record.lines().find_map(|l| {
            let (p, hash) = l.strip_prefix("sha256 ")?.rsplit_once(' ')?;
            (p == path).then_some(hash)
        });
        let Some(hashed) = hashed else {
            return Err(format!("the session record does not vouch for {path}"));
        };
        let same = match &report.content {
            Collected::Read { bytes, .. } => clover_protocol::sha256_hex(bytes) == hashed,
            Collected::Missing => hashed == "none",
            Collected::Refused(_) => false,
        };
        if !same {
            return Err(format!(
                "{path} is not the one pytest left at the end of its session (its hash differs)"
            ));
        }
    }
    // One outcome per test name, ranked as `parse_junit` ranks the problems of a case: a
    // failing call and a failing teardown are one failed test in the report and the record.
    let rank = |o: TestOutcome| match o {
        TestOutcome::Passed => 0,
        TestOutcome::Skipped => 1,
        TestOutcome::Error => 2,
        TestOutcome::Failed => 3,
    };
    let mut worst: std::collections::HashMap<(&str, &str), TestOutcome> = Default::default();
    for t in tests {
        let w = worst.entry((&t.classname, &t.name)).or_insert(t.outcome);
        if rank(t.outcome) > rank(*w) {
            *w = t.outcome;
        }
    }
    let keys = ["passed", "skipped", "error", "failed"];
    let mut in_report = [0i64; 4];
    for o in worst.values() {
        in_report[rank(*o)] += 1;
    }
    let in_record = keys.map(|k| number(k).unwrap_or(-1));
    if in_report != in_record {
        let say = |n: [i64; 4]| {
            keys.iter()
                .zip(n)
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(format!(
            "the report has {} but pytest saw {}",
            say(in_report),
            say(in_record)
        ));
    }
    match number("unfinished") {
        Some(0) => Ok(()),
        Some(n) => Err(format!("{n} tests started and never finished")),
        None => Err("the session record is unreadable".into()),
    }
}

/// Whether the lines a run's coverage claims of each witnessed file ran, by the session
/// record's witness of it (`witness SEEN WATCHED PATH`, each a list of lines and ranges, `-`
/// for none): a watched line the coverage claims and the witness never saw was put into
/// coverage.py's data, not run. A file the record says was not witnessed
/// (`unwitnessed PATH: why`) is not checked.
pub fn check_witness(record: Option<&[u8]>, coverage: &[FileCoverage]) -> Result<(), String> {
    let Some(record) = record.map(String::from_utf8_lossy) else {
        return Ok(());
    };
    let lines = |text: &str| -> Option<std::collections::BTreeSet<u32>> {
        let mut out = std::collections::BTreeSet::new();
        if text == "-" {
            return Some(out);
        }
        for part in text.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b) = (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?);
            out.extend(a..=b);
        }
        Some(out)
    };
    for l in record.lines() {
        let Some(rest) = l.strip_prefix("witness ") else {
            continue;
        };
        let mut parts = rest.splitn(3, ' ');
        let (Some(seen), Some(watched), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err("the session record's witness is unreadable".into());
        };
        let (Some(seen), Some(watched)) = (lines(seen), lines(watched)) else {
            return Err("the session record's witness is unreadable".into());
        };
        let Some(file) = coverage.iter().find(|f| f.path == path) else {
            continue;
        };
        let unseen: Vec<u32> = file
            .lines
            .ranges()
            .iter()
            .flat_map(|[a, b]| *a..=*b)
            .filter(|n| watched.contains(n) && !seen.contains(n))
            .collect();
        if !unseen.is_empty() {
            let shown: Vec<String> = unseen.iter().take(10).map(u32::to_string).collect();
            return Err(format!(
                "the coverage of {path} claims {} line(s) that never ran (line {}{}): the run's \
                 own witness of its functions saw none of them",
                unseen.len(),
                shown.join(", "),
                if unseen.len() > 10 { ", …" } else { "" }
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(o: TestOutcome) -> TestCase {
        TestCase {
            name: "t".into(),
            classname: "c".into(),
            outcome: o,
            message: None,
            duration_secs: 0.0,
        }
    }

    #[test]
    fn exit_statuses_read_as_numbers_in_messages() {
        assert_eq!(ExitStatus::Code(1).to_string(), "exit code 1");
        assert_eq!(ExitStatus::Signal(9).to_string(), "signal 9");
    }

    #[test]
    fn a_report_is_taken_only_when_the_session_record_vouches_for_it() {
        use TestOutcome as T;
        let junit = b"<testsuite/>";
        let reports = [
            CollectedFile {
                path: ".clover-out/junit.xml".into(),
                content: Collected::Read {
                    bytes: junit.to_vec(),
                    truncated: false,
                },
            },
            CollectedFile {
                path: ".clover-out/coverage.xml".into(),
                content: Collected::Missing,
            },
        ];
        let tests = [t(T::Passed)];
        let hash = clover_protocol::sha256_hex(junit);
        let record = |status: i32, hash: &str, coverage: &str, passed: i32, unfinished: i32| {
            format!(
                "exitstatus {status}\npassed {passed}\nskipped 0\nfailed 0\nerror 0\n\
                 unfinished {unfinished}\nsha256 .clover-out/junit.xml {hash}\n\
                 sha256 .clover-out/coverage.xml {coverage}\n"
            )
        };
        let ok = record(0, &hash, "none", 1, 0);
        assert_eq!(
            check_session(0, &reports, &tests, Some(ok.as_bytes())),
            Ok(())
        );
        let problem =
            |r: Option<&str>| check_session(0, &reports, &tests, r.map(str::as_bytes)).unwrap_err();
        assert!(problem(None).contains("not completed by pytest"));
        assert!(problem(Some(&record(1, &hash, "none", 1, 0))).contains("exit code 1"));
        let rewritten = problem(Some(&record(0, "00", "none", 1, 0)));
        assert!(
            rewritten.contains("junit.xml is not the one"),
            "{rewritten}"
        );
        // A coverage report planted after the session ended, or one removed.
        let planted = problem(Some(&record(
            0,
            &hash,
            &clover_protocol::sha256_hex(b""),
            1,
            0,
        )));
        assert!(planted.contains("coverage.xml is not the one"), "{planted}");
        let unvouched = problem(Some(
            &ok.replace("sha256 .clover-out/coverage.xml none\n", ""),
        ));
        assert!(unvouched.contains("does not vouch for .clover-out/coverage.xml"));
        assert!(problem(Some(&record(0, &hash, "none", 2, 0))).contains("pytest saw 2 passed"));
        assert!(problem(Some(&record(0, &hash, "none", 1, 1))).contains("never finished"));
        // A failing call and a failing teardown are two cases of one test.
        let twice = [t(T::Failed), t(T::Error)];
        let r = record(1, &hash, "none", 0, 0).replace("failed 0", "failed 1");
        assert_eq!(
            check_session(1, &reports, &twice, Some(r.as_bytes())),
            Ok(())
        );
    }

    #[test]
    fn the_channel_must_hold_one_record_and_nothing_else() {
        let channel = |bytes: &[u8]| {
            let mut c = ChannelBytes::default();
            c.push(bytes);
            c
        };
        let one = channel(b"clover-session 5\nabcde");
        assert_eq!(session_record(Some(&one)), Ok(Some(&b"abcde"[..])));
        assert_eq!(session_record(Some(&channel(b""))), Ok(None));
        assert!(session_record(None).is_err());
        for bad in [
            &b"x"[..],
            b"garbageclover-session 5\nabcde",
            b"clover-session 5\nabcdeclover-session 5\nabcde",
            b"clover-session 5\nabc",
            b"clover-session +5\nabcde",
            b"clover-session 5",
            b"clover-session\n",
        ] {
            let problem = session_record(Some(&channel(bad))).unwrap_err();
            assert!(problem.contains("not one session record"), "{problem}");
        }
        // More than the cap: what was kept may look like a record; what was dropped was not.
        let mut flood = channel(b"clover-session 5\nabcde");
        flood.total += 1;
        assert!(session_record(Some(&flood)).is_err());
        let mut big = vec![b'x'; clover_sandbox::REPORT_CHANNEL_MAX_BYTES + 10];
        let head = b"clover-session 5\n";
        big[..head.len()].copy_from_slice(head);
        let big = channel(&big);
        assert_eq!(big.bytes.len(), clover_sandbox::REPORT_CHANNEL_MAX_BYTES);
        assert!(session_record(Some(&big)).is_err());
    }

    #[test]
    fn verdicts_cross_check_exit_and_report() {
        use TestOutcome as T;
        let pass = [t(T::Passed), t(T::Skipped)];
        let fail = [t(T::Passed), t(T::Failed)];
        let err = [t(T::Error)];
        assert_eq!(
            judge(ExitStatus::Code(0), None, Some(&pass)).0,
            Outcome::Passed
        );
        assert_eq!(
            judge(ExitStatus::Code(1), None, Some(&fail)).0,
            Outcome::Failed
        );
        assert_eq!(
            judge(
                ExitStatus::Code(0),
                None,
                Some(&[t(T::Skipped), t(T::Skipped)])
            )
            .0,
            Outcome::NoTestsRun
        );
        assert_eq!(
            judge(ExitStatus::Code(2), None, Some(&err)).0,
            Outcome::Error
        );
        // A crash writes no report: never "0 tests, passed".
        assert_eq!(judge(ExitStatus::Code(0), None, None).0, Outcome::Error);
        assert_eq!(judge(ExitStatus::Signal(11), None, None).0, Outcome::Killed);
        assert_eq!(
            judge(ExitStatus::Code(0), None, Some(&fail)).0,
            Outcome::Error
        );
        assert_eq!(
            judge(ExitStatus::Code(1), None, Some(&pass)).0,
            Outcome::Error
        );
        assert_eq!(
            judge(ExitStatus::Signal(9), Some(LimitHit::WallClock), None).0,
            Outcome::Timeout
        );
        assert_eq!(
            judge(ExitStatus::Signal(9), Some(LimitHit::Memory), None).0,
            Outcome::Oom
        );
    }
}
