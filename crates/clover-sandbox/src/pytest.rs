//! Running pytest in the sandbox: the command, the binds a Python interpreter needs, the
//! reports, and the verdict cross-checked between exit status and report.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clover_protocol::{FileCoverage, LimitHit, Outcome, TestCase, TestOutcome};

use crate::report::{parse_cobertura, parse_junit};
use crate::spec::{Collected, ExitStatus, Limits, RunOutput, RunSpec, WriteFile};
use crate::{Sandbox, SandboxError};

/// Where reports go, relative to the repository; the sandbox user may write there.
const OUT_DIR: &str = ".clover-out";

/// The coverage.py settings of a run that measures `sources` (folders relative to the
/// repository), to be passed as `--cov --cov-config=FILE`; the repository's own coverage
/// settings are not read, so every run measures the same lines the same way.
///
/// The files are chosen with `include`, not `source`: coverage.py's Cobertura report strips
/// each `source` folder from the names of the files under it, so `src/a/util.py` and
/// `src/b/util.py` would both be reported as `util.py`. With `include` and `relative_files`
/// every file is named by its path from the repository root (the run's working directory),
/// which [`crate::report::parse_cobertura`] resolves without a guess.
pub fn coverage_rc(sources: &[String]) -> String {
    let mut rc = String::from("[run]\nrelative_files = True\ninclude =\n");
    for s in sources {
        let s = s.trim_end_matches('/');
        // The folder's files, or the file itself when a source is one module.
        rc.push_str(&format!("    {s}/*\n    {s}\n"));
    }
    rc
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
    /// Record per-test contexts (`--cov-context=test`).
    pub cov_contexts: bool,
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

/// The host paths a Python interpreter needs inside the sandbox: its virtual environment
/// (when it is in one) and the installation the environment points to.
pub fn python_binds(python: &Path) -> Vec<PathBuf> {
    let mut binds = Vec::new();
    if let Some(venv) = python.parent().and_then(Path::parent) {
        if let Ok(cfg) = std::fs::read_to_string(venv.join("pyvenv.cfg")) {
            binds.push(venv.to_path_buf());
            let home = cfg.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == "home").then(|| PathBuf::from(v.trim()))
            });
            if let Some(prefix) = home.as_deref().and_then(Path::parent) {
                binds.push(prefix.to_path_buf());
            }
        }
    }
    if let Some(prefix) = python
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().and_then(Path::parent).map(Path::to_path_buf))
    {
        binds.push(prefix);
    }
    binds.retain(|b| !b.starts_with("/usr") && b.exists());
    binds.sort();
    binds.dedup();
    binds
}

impl PytestRun {
    /// The sandbox run this pytest invocation is.
    pub fn spec(&self) -> RunSpec {
        let junit = format!("{OUT_DIR}/junit.xml");
        let cov = format!("{OUT_DIR}/coverage.xml");
        let mut argv: Vec<OsString> = vec![
            self.python.clone().into(),
            "-m".into(),
            "pytest".into(),
            "-p".into(),
            "no:cacheprovider".into(),
            "-q".into(),
            "-o".into(),
            "junit_family=xunit1".into(),
            format!("--junitxml={junit}").into(),
        ];
        let rc = format!("{OUT_DIR}/coveragerc");
        if !self.cov_sources.is_empty() {
            argv.push("--cov".into());
            argv.push(format!("--cov-config={rc}").into());
            argv.push(format!("--cov-report=xml:{cov}").into());
            if self.cov_contexts {
                argv.push("--cov-context=test".into());
            }
        }
        argv.extend(self.targets.iter().map(OsString::from));
        let mut spec = RunSpec::new(&self.repo, argv);
        spec.files = self.files.clone();
        if !self.cov_sources.is_empty() {
            spec.files.push(WriteFile {
                path: rc.into(),
                contents: coverage_rc(&self.cov_sources).into_bytes(),
            });
        }
        spec.binds = python_binds(&self.python);
        spec.writable_dirs = vec![OUT_DIR.into()];
        spec.collect = vec![junit.into(), cov.into()];
        spec.limits = self.limits.clone();
        let mut env = vec![("COVERAGE_FILE".into(), "/tmp/.coverage".into())];
        if let Some(bin) = self.python.parent() {
            let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
            env.push(("PATH".into(), path.into()));
        }
        env.extend(self.env.iter().cloned());
        spec.env = env;
        spec
    }

    pub fn run(&self, sandbox: &Sandbox) -> Result<PytestResult, SandboxError> {
        let run = sandbox.run(&self.spec())?;
        let repo = self
            .repo
            .canonicalize()
            .unwrap_or_else(|_| self.repo.clone());
        let junit = run.files.first().map(|f| f.content.clone());
        let (tests, report_problem) = match junit {
            Some(Collected::Read { bytes, .. }) => match parse_junit(&bytes) {
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
            _ if self.cov_sources.is_empty() => (Vec::new(), None),
            Some(Collected::Read { bytes, .. }) => match parse_cobertura(bytes, &repo) {
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
        let (outcome, message) = judge(run.exit, run.limit_hit, tests.as_deref());
        Ok(PytestResult {
            outcome,
            tests: tests.unwrap_or_default(),
            coverage,
            message: report_problem.or(message).or(coverage_problem),
            run,
        })
    }
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
    let (code, tests) = match crate::spec::verdict_of_ending("pytest", exit, limit, tests) {
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
