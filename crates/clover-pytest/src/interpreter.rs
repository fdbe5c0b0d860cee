//! Whether an interpreter can run clover's pytest runs at all, asked once before the first.
//!
//! A Python without pytest, pytest-cov or coverage.py fails every run the same way; asked run
//! by run, that looks like a result (every problem `excluded_error`, every candidate `error`).
//! [`check_python`] asks once, inside the sandbox like every run, and says how to fix it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clover_sandbox::{Limits, OnceMap, RunSpec, Sandbox, SandboxError};

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

/// The versions a usable interpreter reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonTools {
    pub python: String,
    pub pytest: String,
    pub pytest_cov: String,
    pub coverage: String,
}

/// The oldest coverage.py whose `sys.monitoring` core (`sysmon`) was checked to report the
/// lines its C tracer reports, on the fixture's suite and the corpus's toolz oracle (warm and
/// cold); the core itself came in 7.4.
const SYSMON_COVERAGE: (u32, u32) = (7, 17);

impl PythonTools {
    /// Whether coverage.py measures lines with `sys.monitoring` here when asked to
    /// (`COVERAGE_CORE=sysmon`): Python 3.12 or later, which has it, and a coverage.py that
    /// was checked to report the same lines with it. It switches off events per code object
    /// (a file not measured costs nothing after its first call), where the C tracer is called
    /// on every line of every file: the toolz suite under `pytest --cov` took 2.0 s instead of
    /// 3.6 s on Python 3.12.
    pub fn sysmon(&self) -> bool {
        version(&self.python) >= Some((3, 12)) && version(&self.coverage) >= Some(SYSMON_COVERAGE)
    }
}

/// The major and minor numbers of a version such as `3.12.1` or `7.17.3`.
fn version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
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

/// What the check runs: the versions of the three packages on one line. Each is read from its
/// installed distribution when the module an import would load is that distribution's (found,
/// not imported: importing pytest alone is about 0.2 s, the whole check then 0.08 s instead
/// of 0.28 s); else (a module shadowed by another of its name, one with no distribution) the
/// three are imported and their own `__version__` read, which also says what is missing.
const PROBE: &str = r#"import os, sys
try:
    from importlib.metadata import distribution
    from importlib.util import find_spec

    found = []
    for module, name in (("pytest", "pytest"), ("pytest_cov", "pytest-cov"), ("coverage", "coverage")):
        spec, dist = find_spec(module), distribution(name)
        home = os.path.realpath(dist.locate_file(""))
        if not os.path.realpath(spec.origin).startswith(home + os.sep):
            raise ImportError(module)
        found.append(dist.version)
except Exception:
    import pytest, pytest_cov, coverage
    found = [pytest.__version__, pytest_cov.__version__, coverage.__version__]
print(sys.version.split()[0], *found)
"#;

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
    checked: OnceMap<PathBuf, Result<PythonTools, String>>,
}

impl CheckedInterpreters {
    /// `Ok(Ok(versions))` when `python` can serve (`first` gets them too, the first time only),
    /// `Ok(Err(why))` when it cannot. A sandbox failure is returned and asked again later.
    pub fn check(
        &self,
        sandbox: &Sandbox,
        python: &Path,
        repo: &Path,
        first: impl FnOnce(&PythonTools),
    ) -> Result<Result<PythonTools, String>, SandboxError> {
        let checked = self.checked.get_or_make(&python.to_path_buf(), || {
            match check_python(sandbox, python, repo) {
                Ok(tools) => {
                    first(&tools);
                    Ok(Ok(tools))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(python: &str, coverage: &str) -> PythonTools {
        PythonTools {
            python: python.into(),
            pytest: "9.2.0".into(),
            pytest_cov: "7.1.0".into(),
            coverage: coverage.into(),
        }
    }

    #[test]
    fn sysmon_where_python_has_it_and_coverage_was_checked_with_it() {
        assert!(tools("3.12.1", "7.17.3").sysmon());
        assert!(tools("3.13.0rc1", "7.18").sysmon());
        assert!(tools("3.14.0", "8.0.0").sysmon());
        assert!(!tools("3.11.7", "7.17.3").sysmon());
        assert!(!tools("3.12.1", "7.16.0").sysmon());
        assert!(!tools("3.12.1", "6.5.0").sysmon());
        assert!(!tools("unknown", "7.17.3").sysmon());
    }
}
