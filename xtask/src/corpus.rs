//! `cargo xtask corpus`: real open-source packages nobody here wrote, to test clover against.
//!
//! The list is a copy of the project's reference `shared/corpus.toml` (a user's machine has
//! only the project). Each package's sdist is fetched with `pip download`, checked against its
//! pinned sha256, unpacked under `target/corpus/src/`, and given its own virtual environment
//! under `target/corpus/venv/` with the pinned test tools, its extras, and the package itself
//! installed in editable mode, so the tests import the unpacked source (and coverage measures
//! it there).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::step;

/// A pinned Python package of the corpus.
pub struct Package {
    pub name: &'static str,
    pub version: &'static str,
    pub sha256: &'static str,
    pub extras: &'static [&'static str],
    /// pytest and its plugins, when the package needs other pins than the default.
    pub test_tools: &'static [&'static str],
}

const TEST_TOOLS: &[&str] = &["pytest==9.2.0", "pytest-cov==7.1.0", "coverage==7.17.3"];

pub const PACKAGES: &[Package] = &[
    Package {
        name: "itsdangerous",
        version: "2.2.0",
        sha256: "e0050c0b7da1eea53ffaf149c0cfbb5c6e2e2b69c4bef22c81fa6eb73e5f6173",
        extras: &["freezegun"],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "markupsafe",
        version: "3.0.4",
        sha256: "2e9ad7dd851bf45fab9f75cbff4cb493fee9979e8d8c7c9c3ee119022518edd6",
        extras: &[],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "toolz",
        version: "1.2.0",
        sha256: "9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490",
        extras: &[],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "six",
        version: "1.17.0",
        sha256: "ff70335d468e7eb6ec65b95b99d3a2836546063f63acc5171de367e834932a81",
        extras: &[],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "jinja2",
        version: "3.1.6",
        sha256: "0137fb05990d35f1275a587e9aee6d56da821fc83491a0fb838183be43f66d6d",
        extras: &["trio"],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "click",
        version: "8.5.1",
        sha256: "9bbfada76703fd1d784b83eea012e3e8c6a001a876543ef104fa56aaaeb072b4",
        extras: &[],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "flask",
        version: "3.1.3",
        sha256: "0ef0e52b8a9cd932855379197dd8f94047b359ca0a78695144304cb45f87c9eb",
        extras: &["werkzeug==3.1.5", "asgiref", "greenlet", "python-dotenv"],
        // pytest 9.2 removed a name tests/test_cli.py imports.
        test_tools: &["pytest==9.0.2", "pytest-cov==7.1.0", "coverage==7.17.3"],
    },
];

/// The packages the test suite runs against.
pub const FOR_TESTS: &[&str] = &["itsdangerous", "toolz", "six"];

/// A package made ready: its source tree and its interpreter.
pub struct Ready {
    pub name: String,
    pub dir: PathBuf,
    pub python: PathBuf,
}

/// Fetches, checks, unpacks and installs the named packages (all when `only` is empty).
pub fn ensure(root: &Path, only: &[String]) -> Result<Vec<Ready>> {
    let base = root.join("target/corpus");
    let downloads = base.join("downloads");
    std::fs::create_dir_all(&downloads)?;
    let python = crate::setup::base_python();
    let mut out = Vec::new();
    for p in PACKAGES {
        if !only.is_empty() && !only.iter().any(|o| o == p.name) {
            continue;
        }
        let dir = base.join("src").join(format!("{}-{}", p.name, p.version));
        let venv = base.join("venv").join(p.name);
        let venv_python = venv.join("bin/python");
        let stamp = venv.join("clover-corpus.txt");
        let wanted = format!(
            "{} {} {:?} {:?}\n",
            p.name, p.version, p.extras, p.test_tools
        );
        if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) && dir.is_dir()
        {
            out.push(Ready {
                name: p.name.into(),
                dir,
                python: venv_python,
            });
            continue;
        }
        step(&format!("corpus: {} {}", p.name, p.version));
        let sdist = fetch(&python, &downloads, p)?;
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let src = base.join("src");
        std::fs::create_dir_all(&src)?;
        duct::cmd!(
            &python,
            "-c",
            "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')",
            &sdist,
            &src
        )
        .run()
        .with_context(|| format!("cannot unpack {}", sdist.display()))?;
        if !dir.is_dir() {
            bail!("{} did not unpack into {}", sdist.display(), dir.display());
        }
        if venv.exists() {
            std::fs::remove_dir_all(&venv)?;
        }
        duct::cmd!(&python, "-m", "venv", &venv).run()?;
        let mut args: Vec<String> = ["-m", "pip", "install", "-q", "--disable-pip-version-check"]
            .map(String::from)
            .to_vec();
        args.extend(p.test_tools.iter().chain(p.extras).map(|s| s.to_string()));
        args.push("-e".into());
        args.push(dir.display().to_string());
        duct::cmd(&venv_python, &args)
            .run()
            .with_context(|| format!("cannot install {} into its environment", p.name))?;
        std::fs::write(&stamp, wanted)?;
        out.push(Ready {
            name: p.name.into(),
            dir,
            python: venv_python,
        });
    }
    // The manifest lists every package made ready on this machine, not only this call's.
    let all: Vec<Ready> = PACKAGES
        .iter()
        .filter_map(|p| {
            let venv = base.join("venv").join(p.name);
            let dir = base.join("src").join(format!("{}-{}", p.name, p.version));
            (venv.join("clover-corpus.txt").is_file() && dir.is_dir()).then(|| Ready {
                name: p.name.into(),
                dir,
                python: venv.join("bin/python"),
            })
        })
        .collect();
    write_manifest(&base, &all)?;
    Ok(out)
}

/// `target/corpus/clover.toml`: the ready packages as repositories, so tests and benchmarks
/// name them with `--manifest` and nothing else.
fn write_manifest(base: &Path, ready: &[Ready]) -> Result<()> {
    let mut text = String::from(
        "# Written by `cargo xtask corpus`: the corpus packages made ready on this machine.\n",
    );
    for r in ready {
        text.push_str(&format!(
            "\n[[repo]]\nname = \"{}\"\npath = \"{}\"\nlanguage = \"python\"\npython = \"{}\"\ntimeout_secs = 300\n",
            r.name,
            r.dir.display(),
            r.python.display()
        ));
    }
    std::fs::write(base.join("clover.toml"), text)?;
    Ok(())
}

/// The sdist of `p` in `downloads`, fetched if missing, checked against its sha256.
fn fetch(python: &str, downloads: &Path, p: &Package) -> Result<PathBuf> {
    let find = || -> Option<PathBuf> {
        std::fs::read_dir(downloads)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|f| {
                let n = f
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("")
                    .to_lowercase();
                n.starts_with(&format!("{}-{}", p.name, p.version)) && n.ends_with(".tar.gz")
            })
    };
    if find().is_none() {
        duct::cmd!(
            python,
            "-m",
            "pip",
            "download",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-binary",
            ":all:",
            "-d",
            downloads,
            format!("{}=={}", p.name, p.version)
        )
        .run()
        .with_context(|| format!("pip download of {} failed", p.name))?;
    }
    let sdist = find().with_context(|| {
        format!(
            "no sdist of {} {} in {}",
            p.name,
            p.version,
            downloads.display()
        )
    })?;
    let got = crate::setup::sha256(python, &sdist)?;
    if got != p.sha256 {
        std::fs::remove_file(&sdist).ok();
        bail!(
            "{} has sha256 {got}, expected {}; removed it",
            sdist.display(),
            p.sha256
        );
    }
    Ok(sdist)
}
