//! `cargo xtask setup`: everything the tests and the demo need, installed idempotently.
//!
//! - Debian packages for C++ (g++, GoogleTest, gcovr, dpkg-dev), Chromium (the HTML report test), and
//!   GNU parallel, make, Slurm and munge (the scaling examples of `docs/examples`), bubblewrap
//!   (the spawn overhead's baseline in `cargo xtask bench`), mold (the C++ runner's linker)
//!   through `apt-get` when running as root; without root, a message naming what to install;
//! - a Python virtual environment at `target/clover-venv` with pinned pytest, pytest-cov,
//!   coverage, and sentencepiece and tokenizers (the tokenizer references);
//! - a second one at `target/clover-hf-venv` with pinned Hugging Face `datasets`, which
//!   clover-export's tests load records and exported folders with;
//! - a third at `target/clover-sysmon-venv` with the same pytest, pytest-cov and coverage on a
//!   Python 3.12 or later, where the machine has one (coverage.py's `sys.monitoring` core);
//! - the Mistral-7B tokenizer model from the PyPI package `mistral-common`, checked by sha256
//!   and cached at `target/clover-data/tokenizer.model.v1`;
//! - pinned maturin and auditwheel at `target/clover-wheel-venv`, which `cargo xtask wheel`
//!   (and so the test suite, which installs that wheel) builds and audits the wheel with.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::step;

/// pytest, pytest-cov and coverage.py, pinned as in every environment `clover env` makes: in
/// the test environment, and alone in the `sys.monitoring` one (made from a Python 3.12 or
/// later where the machine has one). Changing a pin rebuilds both environments.
const PYTEST_PACKAGES: &[&str] = clover_env::TEST_TOOLS;

/// The installer `clover env` builds repositories' environments with, in an environment of
/// its own (`$CLOVER_UV` for the tests).
const UV_PACKAGES: &[&str] = &["uv==0.13.9"];

/// The rest of the test environment: the tokenizer reference.
const TOKENIZER_PACKAGES: &[&str] = &["sentencepiece==0.2.3"];

/// Installed without their dependencies, which only fetch from the Hugging Face hub and would
/// add pytest plugins (anyio) to the environment: `tokenizers`, the reference for
/// `tokenizer.json` files in clover-pack-context's tests.
const PYTHON_PACKAGES_NO_DEPS: &[&str] = &["tokenizers==0.23.3"];

/// The environment clover-export's tests load datasets with. Apart from the test environment:
/// `datasets` brings anyio, whose pytest plugin would load in every pytest run there (0.15 s
/// more a run, measured: 0.32 s against 0.16 s for a one-test file).
const HF_PYTHON_PACKAGES: &[&str] = &["datasets==5.2.0"];

/// What `cargo xtask wheel` builds the `clover-bench` wheel with (maturin) and checks its
/// platform tag over every binary with (auditwheel).
const WHEEL_PACKAGES: &[&str] = &["maturin==1.16.0", "auditwheel==6.8.2"];

/// Debian packages: (package, a file it installs that tells it is there).
const DEBIAN_PACKAGES: &[(&str, &str)] = &[
    ("g++", "/usr/bin/g++"),
    (
        "googletest",
        "/usr/src/googletest/googletest/samples/sample1.cc",
    ),
    ("libgtest-dev", "/usr/include/gtest/gtest.h"),
    ("libgmock-dev", "/usr/include/gmock/gmock.h"),
    ("gcovr", "/usr/bin/gcovr"),
    // dpkg-source unpacks the Debian source packages of the C++ corpus (`cargo xtask corpus`).
    ("dpkg-dev", "/usr/bin/dpkg-source"),
    // The HTML score report is opened in headless Chromium by clover-score's tests.
    ("chromium", "/usr/bin/chromium"),
    // docs/examples/parallel.sh is run by clover-e2e's tests.
    ("parallel", "/usr/bin/parallel"),
    ("make", "/usr/bin/make"),
    // `cargo xtask bench` sets the sandbox's spawn overhead beside bubblewrap's.
    ("bubblewrap", "/usr/bin/bwrap"),
    // The C++ runner links candidates with mold when it is there (`-fuse-ld=mold`).
    ("mold", "/usr/bin/mold"),
    // docs/examples/slurm/local-cluster.sh runs a one-machine Slurm for clover-e2e's tests of
    // the Slurm job scripts: the controller, the node daemon, sbatch and friends, and munged.
    ("slurmctld", "/usr/sbin/slurmctld"),
    ("slurmd", "/usr/sbin/slurmd"),
    ("slurm-client", "/usr/bin/sbatch"),
    ("munge", "/usr/sbin/munged"),
];

/// What setup made, for the commands that come after it.
#[derive(Debug, Clone)]
pub struct Env {
    pub venv: PathBuf,
    pub python: PathBuf,
    pub tokenizer: PathBuf,
    pub hf_python: PathBuf,
    /// The environment on a Python with `sys.monitoring`, where one was found.
    pub sysmon_python: Option<PathBuf>,
    /// uv, for `clover env`.
    pub uv: PathBuf,
}

impl Env {
    /// Environment variables through which tests find what setup installed. With
    /// `CLOVER_REQUIRE_TOOLS=1` a test that would skip for want of a tool fails instead.
    pub fn vars(&self) -> Vec<(String, String)> {
        vec![
            ("CLOVER_VENV".into(), self.venv.display().to_string()),
            ("CLOVER_PYTHON".into(), self.python.display().to_string()),
            (
                "CLOVER_TOKENIZER".into(),
                self.tokenizer.display().to_string(),
            ),
            (
                "CLOVER_HF_PYTHON".into(),
                self.hf_python.display().to_string(),
            ),
            ("CLOVER_UV".into(), self.uv.display().to_string()),
            ("CLOVER_REQUIRE_TOOLS".into(), "1".into()),
        ]
        .into_iter()
        .chain(
            self.sysmon_python
                .iter()
                .map(|p| ("CLOVER_SYSMON_PYTHON".into(), p.display().to_string())),
        )
        .collect()
    }
}

pub fn run(root: &Path) -> Result<Env> {
    step("setup: Debian packages");
    debian_packages()?;
    step("setup: Python environment");
    let venv = root.join("target/clover-venv");
    let packages = [PYTEST_PACKAGES, TOKENIZER_PACKAGES].concat();
    let python = python_env(&venv, &packages, PYTHON_PACKAGES_NO_DEPS)?;
    step("setup: tokenizer model");
    let tokenizer = tokenizer(root, &python)?;
    step("setup: Python environment for Hugging Face datasets");
    let hf_python = python_env(&root.join("target/clover-hf-venv"), HF_PYTHON_PACKAGES, &[])?;
    step("setup: uv, the installer of clover env");
    let uv =
        python_env(&root.join("target/clover-uv-venv"), UV_PACKAGES, &[])?.with_file_name("uv");
    step("setup: maturin and auditwheel for the wheel");
    wheel_tools(root)?;
    step("setup: Python environment with sys.monitoring (3.12 or later)");
    let sysmon_python = match sysmon_base_python() {
        Some(base) => Some(python_env_from(
            &base,
            &root.join("target/clover-sysmon-venv"),
            PYTEST_PACKAGES,
            &[],
        )?),
        None => {
            eprintln!(
                "no Python 3.12 or later found (python3.12, python3.13, pyenv's, or \
                 $CLOVER_SYSMON_BASE_PYTHON): the tests of coverage.py's sys.monitoring core \
                 will skip, or fail where tools are required"
            );
            None
        }
    };
    Ok(Env {
        venv,
        python,
        tokenizer,
        hf_python,
        sysmon_python,
        uv,
    })
}

pub fn is_root() -> bool {
    duct::cmd!("id", "-u")
        .read()
        .map(|s| s.trim() == "0")
        .unwrap_or(false)
}

fn debian_packages() -> Result<()> {
    let missing: Vec<&str> = DEBIAN_PACKAGES
        .iter()
        .filter(|(_, marker)| !Path::new(marker).exists())
        .map(|(pkg, _)| *pkg)
        .collect();
    if missing.is_empty() {
        eprintln!(
            "all present: {}",
            DEBIAN_PACKAGES
                .iter()
                .map(|p| p.0)
                .collect::<Vec<_>>()
                .join(" ")
        );
        return Ok(());
    }
    if !is_root() {
        bail!(
            "missing Debian packages: {0}; install them with `sudo apt-get install {0}` and rerun",
            missing.join(" ")
        );
    }
    eprintln!("installing {}", missing.join(" "));
    duct::cmd!("apt-get", "update", "-q")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .run()
        .context("apt-get update failed")?;
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(missing.iter().copied());
    duct::cmd("apt-get", &args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .run()
        .context("apt-get install failed")?;
    Ok(())
}

/// The interpreter the environment is made from: `CLOVER_BASE_PYTHON` or `python3`.
pub fn base_python() -> String {
    std::env::var("CLOVER_BASE_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// A Python 3.12 or later to make the `sys.monitoring` environment from:
/// `$CLOVER_SYSMON_BASE_PYTHON`, or the first of `python3.12`, pyenv's 3.12 and 3.13 builds and
/// `python3.13` that runs and is one.
fn sysmon_base_python() -> Option<String> {
    if let Ok(base) = std::env::var("CLOVER_SYSMON_BASE_PYTHON") {
        return Some(base);
    }
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")));
    let mut built: Vec<PathBuf> = pyenv
        .and_then(|root| std::fs::read_dir(root.join("versions")).ok())
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| {
            ["3.12.", "3.13."]
                .iter()
                .any(|v| e.file_name().to_string_lossy().starts_with(v))
        })
        .map(|e| e.path().join("bin/python3"))
        .collect();
    built.sort();
    std::iter::once("python3.12".to_string())
        .chain(built.iter().map(|p| p.display().to_string()))
        .chain(std::iter::once("python3.13".to_string()))
        .find(|python| {
            duct::cmd!(
                python,
                "-c",
                "import sys; assert sys.version_info >= (3, 12)"
            )
            .stdout_null()
            .stderr_null()
            .unchecked()
            .run()
            .is_ok_and(|out| out.status.success())
        })
}

/// The environment with maturin and auditwheel, made unless it is there; its Python.
pub fn wheel_tools(root: &Path) -> Result<PathBuf> {
    python_env(&root.join("target/clover-wheel-venv"), WHEEL_PACKAGES, &[])
}

fn python_env(venv: &Path, packages: &[&str], no_deps: &[&str]) -> Result<PathBuf> {
    python_env_from(&base_python(), venv, packages, no_deps)
}

/// The virtual environment `venv`, made from `base` with `packages` (and `no_deps` without
/// their dependencies), unless it is there with them already.
fn python_env_from(
    base: &str,
    venv: &Path,
    packages: &[&str],
    no_deps: &[&str],
) -> Result<PathBuf> {
    let python = venv.join("bin/python");
    let stamp = venv.join("clover-requirements.txt");
    let wanted = [packages, no_deps].concat().join("\n") + "\n";
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted) {
        eprintln!("up to date: {}", venv.display());
        return Ok(python);
    }
    if !python.exists() {
        duct::cmd!(base, "-m", "venv", venv)
            .run()
            .context("cannot create the Python virtual environment (is python3-venv installed?)")?;
    }
    let mut args = vec!["-m", "pip", "install", "-q", "--disable-pip-version-check"];
    args.extend(packages.iter().copied());
    duct::cmd(&python, &args)
        .run()
        .context("pip install into the test environment failed")?;
    if !no_deps.is_empty() {
        let mut args = vec!["-m", "pip", "install", "-q", "--disable-pip-version-check"];
        args.push("--no-deps");
        args.extend(no_deps.iter().copied());
        duct::cmd(&python, &args)
            .run()
            .context("pip install into the test environment failed")?;
    }
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

fn tokenizer(root: &Path, python: &Path) -> Result<PathBuf> {
    let data = root.join("target/clover-data");
    let model = clover_doctor::fetch_tokenizer(python, &data)?;
    eprintln!("verified: {}", model.display());
    Ok(model)
}

/// The sha256 of `file`, in lowercase hex.
pub fn sha256(file: &Path) -> Result<String> {
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    Ok(clover_protocol::sha256_hex(&bytes))
}
