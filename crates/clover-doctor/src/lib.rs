//! `clover doctor`: what a clover run needs on this machine, each piece found or not, and the
//! one command that fixes a missing one — before a long run fails on it.
//!
//! Each check uses what the stages use: the sandbox is made and runs a command
//! ([`clover_sandbox::Sandbox`]), the interpreter is probed inside it as calibrate and
//! sandbox-run probe it ([`clover_pytest::check_python`]), the tokenizer model is looked for
//! where pack-context looks ([`clover_pack_context::default_data_dirs`]) and checked by
//! sha256, and the C++ compiler compiles, links and runs a GoogleTest program with coverage
//! counters, as the C++ runner builds candidates. [`fetch_tokenizer`] brings the model from
//! PyPI for a user who installed clover without a checkout (`cargo xtask setup` calls it too).

pub mod cli;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clover_protocol::Language;
use clover_sandbox::{LimitBackend, RunSpec, Sandbox};

/// The PyPI package whose wheel holds the tokenizer model, pinned.
pub const TOKENIZER_PACKAGE: &str = "mistral-common==1.13.1";
/// The model's member in that wheel.
pub const TOKENIZER_MEMBER: &str = "mistral_common/data/tokenizer.model.v1";
/// The model's sha256.
pub const TOKENIZER_SHA256: &str =
    "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055";

/// What runs need a piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Every run: the sandbox, the tokenizer.
    All,
    Python,
    Cpp,
    /// Nice to have; never decides the exit status.
    Optional,
}

/// One requirement and what was found.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub need: Need,
    /// What was found, or why it is missing.
    pub found: Result<String, String>,
    /// The one command (or step) that fixes it, when it is missing.
    pub fix: String,
}

/// What the checks look at.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub repo: Option<PathBuf>,
    pub python: Option<PathBuf>,
    pub cxx: Option<String>,
}

/// Every check, in the order a run meets them.
pub fn checks(opts: &Options) -> Result<(Vec<Check>, Option<Language>)> {
    let repo = match &opts.repo {
        Some(dir) => Some(
            clover_manifest::RepoConfig::resolve(None, None, Some(dir))
                .map_err(anyhow::Error::from)?
                .into_iter()
                .next()
                .context("the folder names no repository")?,
        ),
        None => None,
    };
    let scratch = tempfile::tempdir().context("cannot make a scratch folder")?;
    let view = repo.as_ref().map_or(scratch.path(), |r| r.root.as_path());
    let mut out = Vec::new();
    let sandbox = Sandbox::new();
    out.push(sandbox_check(sandbox.as_ref(), view));
    if let Ok(sb) = &sandbox {
        out.push(cgroup_check(sb.limit_backend()));
    }
    let python = opts
        .python
        .clone()
        .or_else(|| repo.as_ref().and_then(|r| r.python.clone()))
        .or_else(|| {
            let p = std::env::var("CLOVER_PYTHON").ok()?;
            Some(clover_protocol::resolved_path(&p).unwrap_or(p.into()))
        })
        .or_else(|| on_path("python3"));
    out.push(python_check(sandbox.as_ref().ok(), python.as_deref(), view));
    out.push(tokenizer_check());
    let cxx = opts
        .cxx
        .clone()
        .or_else(|| repo.as_ref().map(|r| r.cxx.clone()))
        .unwrap_or_else(|| "g++".into());
    out.extend(cpp_checks(&cxx, scratch.path()));
    Ok((out, repo.map(|r| r.language)))
}

/// Whether a run of `language` (any, when none) can start with what `checks` found.
pub fn can_start(checks: &[Check], language: Option<Language>) -> bool {
    checks.iter().all(|c| {
        let needed = match (c.need, language) {
            (Need::Optional, _) => false,
            (Need::All, _) | (_, None) => true,
            (Need::Python, Some(l)) => l == Language::Python,
            (Need::Cpp, Some(l)) => l == Language::Cpp,
        };
        !needed || c.found.is_ok()
    })
}

/// The report: a line per check, then whether a run can start.
pub fn render(checks: &[Check], language: Option<Language>) -> String {
    let mut s = String::new();
    for c in checks {
        let need = match c.need {
            Need::All => "every run",
            Need::Python => "Python runs",
            Need::Cpp => "C++ runs",
            Need::Optional => "optional",
        };
        match &c.found {
            Ok(what) => s.push_str(&format!("ok       {:<12} {what}\n", c.name)),
            Err(why) => {
                s.push_str(&format!(
                    "missing  {:<12} {why} (needed by {need})\n",
                    c.name
                ));
                s.push_str(&format!("         {:<12} fix: {}\n", "", c.fix));
            }
        }
    }
    let what = match language {
        Some(Language::Python) => "a Python run",
        Some(Language::Cpp) => "a C++ run",
        None => "a run",
    };
    if can_start(checks, language) {
        s.push_str(&format!("{what} can start\n"));
    } else {
        s.push_str(&format!("{what} cannot start: fix what is missing above\n"));
    }
    s
}

fn sandbox_check(sandbox: Result<&Sandbox, &clover_sandbox::SandboxError>, view: &Path) -> Check {
    let fix = "run clover as root: each run gets user, pid, mount and network namespaces of its \
               own (e.g. `sudo clover …`, or a container started with --privileged)"
        .to_string();
    let found = match sandbox {
        Err(e) => Err(format!("the sandbox cannot be made: {e}")),
        Ok(sb) => {
            let spec = RunSpec::new(view, ["/bin/sh", "-c", "exit 0"]);
            match sb.run(&spec) {
                Ok(r) if r.exit.code() == Some(0) => {
                    Ok("root; a command ran in namespaces of its own".into())
                }
                Ok(r) => Err(format!("a command in the sandbox ended with {}", r.exit)),
                Err(e) => Err(format!("a command cannot run in the sandbox: {e}")),
            }
        }
    };
    Check {
        name: "sandbox",
        need: Need::All,
        found,
        fix,
    }
}

fn cgroup_check(backend: LimitBackend) -> Check {
    Check {
        name: "cgroups",
        need: Need::Optional,
        found: match backend {
            LimitBackend::CgroupV2 => Ok("cgroup v2: memory, pids and CPU limits per run".into()),
            LimitBackend::CgroupV1 => Ok("cgroup v1: memory, pids and CPU limits per run".into()),
            LimitBackend::Rlimits => Err(
                "no writable cgroup hierarchy: runs are limited by rlimits only (no memory \
                 or process-count limit of a run's whole tree)"
                    .into(),
            ),
        },
        fix: "mount cgroup v2 with the memory and pids controllers at /sys/fs/cgroup \
              (`mount -t cgroup2 none /sys/fs/cgroup`), or run where it is"
            .into(),
    }
}

fn python_check(sandbox: Option<&Sandbox>, python: Option<&Path>, view: &Path) -> Check {
    let shown = python.map_or("python3".into(), |p| p.display().to_string());
    let fix = format!(
        "{shown} -m pip install pytest pytest-cov coverage (or name another interpreter with \
         --python, $CLOVER_PYTHON or `python` in clover.toml)"
    );
    let found = match (python, sandbox) {
        (None, _) => Err("no python3 on PATH".into()),
        (Some(_), None) => Err("it cannot be checked without the sandbox".into()),
        (Some(py), Some(sb)) => match clover_pytest::check_python(sb, py, view) {
            Ok(tools) => Ok(format!("{}: {tools}", py.display())),
            Err(clover_pytest::InterpreterError::Unusable { why, .. }) => {
                Err(format!("{}: {why}", py.display()))
            }
            Err(e) => Err(e.to_string()),
        },
    };
    Check {
        name: "python",
        need: Need::Python,
        found,
        fix,
    }
}

/// The model where pack-context looks for it, with the pinned sha256.
pub fn find_tokenizer() -> Result<PathBuf, String> {
    let dirs = clover_pack_context::default_data_dirs();
    let mut wrong = Vec::new();
    for dir in &dirs {
        let path = dir.join(clover_pack_context::MISTRAL_MODEL_FILE);
        if let Ok(bytes) = std::fs::read(&path) {
            if clover_protocol::sha256_hex(&bytes) == TOKENIZER_SHA256 {
                return Ok(path);
            }
            wrong.push(path.display().to_string());
        }
    }
    if !wrong.is_empty() {
        return Err(format!(
            "{} has another sha256 than the model clover pins",
            wrong.join(", ")
        ));
    }
    Err(format!(
        "no tokenizer model in {}",
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn tokenizer_check() -> Check {
    Check {
        name: "tokenizer",
        need: Need::All,
        found: find_tokenizer().map(|p| format!("{} (sha256 checked)", p.display())),
        fix: "clover doctor --fetch-tokenizer (or pass pack-context --tokenizer PATH, cl100k \
              or o200k)"
            .into(),
    }
}

/// A GoogleTest program with coverage counters, as the C++ runner builds candidates.
const GTEST_PROBE: &str = "#include <gtest/gtest.h>\nTEST(Doctor, Runs) { EXPECT_EQ(1 + 1, 2); }\n";

fn cpp_checks(cxx: &str, scratch: &Path) -> Vec<Check> {
    let apt = "apt-get install g++ libgtest-dev libgmock-dev gcovr";
    let version = |cmd: &str| -> Result<String, String> {
        let out = Command::new(cmd)
            .arg("--version")
            .output()
            .map_err(|e| format!("{cmd}: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        match (out.status.success(), text.lines().next()) {
            (true, Some(line)) => Ok(line.trim().to_string()),
            _ => Err(format!("`{cmd} --version` failed")),
        }
    };
    let compiler = version(cxx);
    let gtest = match &compiler {
        Err(_) => Err("there is no compiler to try it with".into()),
        Ok(_) => gtest_probe(cxx, scratch),
    };
    let gcov = version("gcov");
    vec![
        Check {
            name: "c++",
            need: Need::Cpp,
            found: compiler,
            fix: format!("{apt} (or name the compiler with `cxx` in clover.toml or --cxx)"),
        },
        Check {
            name: "googletest",
            need: Need::Cpp,
            found: gtest,
            fix: apt.into(),
        },
        Check {
            name: "gcov",
            need: Need::Cpp,
            found: gcov,
            fix: apt.into(),
        },
        Check {
            name: "gcovr",
            need: Need::Optional,
            found: version("gcovr"),
            fix: apt.into(),
        },
    ]
}

fn gtest_probe(cxx: &str, scratch: &Path) -> Result<String, String> {
    let src = scratch.join("doctor_test.cc");
    let bin = scratch.join("doctor_test");
    std::fs::write(&src, GTEST_PROBE).map_err(|e| e.to_string())?;
    let out = Command::new(cxx)
        .args(["--coverage", "-o"])
        .arg(&bin)
        .arg(&src)
        .args(["-lgtest_main", "-lgtest", "-pthread"])
        .current_dir(scratch)
        .output()
        .map_err(|e| format!("{cxx}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or("it failed");
        return Err(format!(
            "a GoogleTest program does not compile and link: {}",
            first.trim()
        ));
    }
    let ran = Command::new(&bin)
        .current_dir(scratch)
        .output()
        .map_err(|e| e.to_string())?;
    if !ran.status.success() {
        return Err("a GoogleTest program built but did not pass".into());
    }
    Ok("a GoogleTest program compiles, links with gtest_main and runs".into())
}

/// `name` in a folder of `$PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Where [`fetch_tokenizer`] puts the model by default: `$CLOVER_DATA_DIR`, else
/// `../share/clover` beside this program (where pack-context looks first).
pub fn default_tokenizer_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("CLOVER_DATA_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let prefix = exe
        .parent()
        .and_then(Path::parent)
        .context("this program has no folder above its own")?;
    Ok(prefix.join("share/clover"))
}

/// Brings the tokenizer model into `dir` (`tokenizer.model.v1`) with `python`'s pip: the
/// pinned wheel from PyPI, the model read out of it, checked by sha256 before it takes its
/// name (a model of another digest is refused, and nothing is left). One already there with
/// the right digest is kept.
pub fn fetch_tokenizer(python: &Path, dir: &Path) -> Result<PathBuf> {
    let model = dir.join(clover_pack_context::MISTRAL_MODEL_FILE);
    if std::fs::read(&model).is_ok_and(|b| clover_protocol::sha256_hex(&b) == TOKENIZER_SHA256) {
        return Ok(model);
    }
    // The wheel stays in `downloads` (pip's own folder of found files): a second fetch, or
    // pip with `--find-links` there, needs no registry.
    let downloads = dir.join("downloads");
    std::fs::create_dir_all(&downloads)
        .with_context(|| format!("cannot create {}", downloads.display()))?;
    clover_env::pip_download(python, &downloads, TOKENIZER_PACKAGE, true)?;
    // A wheel is a zip file: the interpreter's zipfile reads the one member.
    let tmp = model.with_extension("v1.partial");
    let script = format!(
        "import glob, sys, zipfile\n\
         wheel = sorted(glob.glob(sys.argv[1] + '/mistral_common-*.whl'))[-1]\n\
         open(sys.argv[2], 'wb').write(zipfile.ZipFile(wheel).read('{TOKENIZER_MEMBER}'))\n"
    );
    let status = Command::new(python)
        .args(["-c", &script])
        .arg(&downloads)
        .arg(&tmp)
        .status()?;
    if !status.success() {
        bail!("cannot read {TOKENIZER_MEMBER} out of the wheel ({status})");
    }
    let got = clover_protocol::sha256_hex(&std::fs::read(&tmp)?);
    if got != TOKENIZER_SHA256 {
        std::fs::remove_file(&tmp).ok();
        // Nor the wheel it came in: the next fetch asks the registry again.
        for entry in std::fs::read_dir(&downloads)
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with("mistral_common-")
            {
                std::fs::remove_file(entry.path()).ok();
            }
        }
        bail!("the tokenizer model has sha256 {got}, not {TOKENIZER_SHA256}: refused");
    }
    std::fs::rename(&tmp, &model)?;
    Ok(model)
}
