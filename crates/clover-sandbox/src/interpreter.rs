//! Whether an interpreter can run clover's pytest runs at all, asked once before the first.
//!
//! A Python without pytest, pytest-cov or coverage.py fails every run the same way; asked run
//! by run, that looks like a result (every problem `excluded_error`, every candidate `error`).
//! [`check_python`] asks once, inside the sandbox like every run, and says how to fix it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::once::OnceMap;
use crate::pytest::python_binds;
use crate::spec::{Limits, RunSpec};
use crate::{Sandbox, SandboxError};

/// The versions a usable interpreter reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonTools {
    pub python: String,
    pub pytest: String,
    pub pytest_cov: String,
    pub coverage: String,
}

impl std::fmt::Display for PythonTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Python {}, pytest {}, pytest-cov {}, coverage {}",
            self.python, self.pytest, self.pytest_cov, self.coverage
        )
    }
}

/// Why an interpreter cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum InterpreterError {
    #[error(
        "the Python interpreter {python} cannot run clover's tests: {why}; install pytest, \
         pytest-cov and coverage into it (`{python} -m pip install pytest pytest-cov \
         coverage`), or name another with --python, $CLOVER_PYTHON or `python` in clover.toml"
    )]
    Unusable { python: PathBuf, why: String },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// What the check runs: imports of the three packages, their versions on one line.
const PROBE: &str = "import sys, pytest, pytest_cov, coverage\n\
print(sys.version.split()[0], pytest.__version__, pytest_cov.__version__, coverage.__version__)";

/// Runs `python` in the sandbox (in a view of `repo`, as the runs will) and returns the
/// versions of Python, pytest, pytest-cov and coverage.py, or why they cannot be had.
pub fn check_python(
    sandbox: &Sandbox,
    python: &Path,
    repo: &Path,
) -> Result<PythonTools, InterpreterError> {
    let unusable = |why: String| InterpreterError::Unusable {
        python: python.to_path_buf(),
        why,
    };
    if !python.is_file() {
        return Err(unusable("there is no such file".into()));
    }
    let mut spec = RunSpec::new(repo, [python.as_os_str(), "-c".as_ref(), PROBE.as_ref()]);
    spec.binds = python_binds(python);
    spec.limits = Limits {
        wall: Duration::from_secs(60),
        cpu_secs: 60,
        ..Limits::default()
    };
    let run = sandbox.run(&spec)?;
    let stdout = run.stdout.text();
    let words: Vec<&str> = stdout.split_whitespace().collect();
    match (run.exit.code(), words.as_slice()) {
        (Some(0), [py, pytest, cov, coverage]) => Ok(PythonTools {
            python: py.to_string(),
            pytest: pytest.to_string(),
            pytest_cov: cov.to_string(),
            coverage: coverage.to_string(),
        }),
        (code, _) => {
            // The last line of a traceback says what is missing (`ModuleNotFoundError: …`).
            let stderr = run.stderr.text();
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
            let status = match (code, run.exit.signal()) {
                (Some(c), _) => format!("it exited with {c}"),
                (None, Some(s)) => format!("it was killed by signal {s}"),
                (None, None) => "it did not finish".to_string(),
            };
            Err(unusable(match last {
                Some(l) => format!("{status}: {}", l.trim()),
                None => status,
            }))
        }
    }
}

/// Interpreters checked once each, however many runs and threads ask: what calibrate and
/// sandbox-run consult before a Python run.
#[derive(Debug, Default)]
pub struct CheckedInterpreters {
    checked: OnceMap<PathBuf, Result<(), String>>,
}

impl CheckedInterpreters {
    /// `Ok(Ok(()))` when `python` can serve (`first` gets its versions, the first time only),
    /// `Ok(Err(why))` when it cannot. A sandbox failure is returned and asked again later.
    pub fn check(
        &self,
        sandbox: &Sandbox,
        python: &Path,
        repo: &Path,
        first: impl FnOnce(&PythonTools),
    ) -> Result<Result<(), String>, SandboxError> {
        let checked = self.checked.get_or_make(&python.to_path_buf(), || {
            match check_python(sandbox, python, repo) {
                Ok(tools) => {
                    first(&tools);
                    Ok(Ok(()))
                }
                Err(e @ InterpreterError::Unusable { .. }) => Ok(Err(e.to_string())),
                Err(InterpreterError::Sandbox(e)) => Err(e),
            }
        })?;
        Ok(checked.unwrap_or_else(|| {
            Err(format!(
                "the check of {} could not be carried out",
                python.display()
            ))
        }))
    }
}
