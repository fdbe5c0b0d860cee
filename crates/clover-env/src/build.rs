//! Making one environment: the interpreter, the installs, the pins, the stamp.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use clover_protocol::{
    sha256_hex, DependencySource, EnvFailure, Environment, RecordKind, Unresolved, SCHEMA_VERSION,
};

use crate::detect::{dependency_sources, Found, Install, PACKAGING_FILES};
use crate::recipe::RecipeEntry;
use crate::suite;

/// pytest and its coverage plugin, as every other clover environment has them: pytest only
/// when the repository brought none of its own (a repository that pins one keeps it).
pub const TEST_TOOLS: &[&str] = &["pytest==9.2.0", "pytest-cov==7.1.0", "coverage==7.17.3"];

/// The test tools for an interpreter of `version` (`3.10.13`): [`TEST_TOOLS`], but with the
/// newest coverage.py that still runs on it where [`TEST_TOOLS`]'s does not (7.17 needs
/// Python 3.11; the CLOVER paper's environments are 3.10).
pub fn test_tools(version: &str) -> Vec<String> {
    let minor: Option<u32> = version.split('.').nth(1).and_then(|m| m.parse().ok());
    TEST_TOOLS
        .iter()
        .map(|t| match (t.starts_with("coverage=="), minor) {
            (true, Some(m)) if m < 11 => "coverage==7.16.2".to_string(),
            _ => t.to_string(),
        })
        .collect()
}

/// Bumped when the same inputs would now make a different environment.
const FORMAT: u32 = 1;

/// The file in an environment that says it is whole, holding its record.
pub const STAMP: &str = "clover-env.json";

/// What to build, and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub name: String,
    /// The repository folder, absolute.
    pub repo: PathBuf,
    /// The base interpreter: a path, or a version (`3.10`) looked for on `PATH` and in pyenv.
    pub python: String,
    /// Where environments (and the installer's cache) live.
    pub cache: PathBuf,
    /// The installer, uv.
    pub uv: PathBuf,
    pub entry: Option<RecipeEntry>,
    /// Only packages uploaded before this instant (RFC 3339) are installed.
    pub exclude_newer: Option<String>,
    /// Run the suite once with this time budget; `None`: do not run it.
    pub suite_budget: Option<Duration>,
}

/// Bad usage: nothing was attempted.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("{0} is not a folder")]
    NoRepo(String),
    #[error("cannot run the installer {uv}: {why} (install it: python3 -m pip install uv)")]
    NoInstaller { uv: String, why: String },
    #[error("cannot write the environment cache {path}: {source}")]
    Cache {
        path: String,
        source: std::io::Error,
    },
}

fn failed(step: &str, package: Option<String>, message: impl Into<String>) -> EnvFailure {
    EnvFailure {
        step: step.into(),
        package,
        message: message.into(),
    }
}

/// The record of `name` at `repo` before anything is made: no interpreter, no installs.
pub fn empty_environment(name: &str, repo: &Path, exclude_newer: Option<String>) -> Environment {
    Environment {
        kind: RecordKind::Environment,
        schema_version: SCHEMA_VERSION,
        id: name.into(),
        repo: repo.display().to_string(),
        python: String::new(),
        python_version: String::new(),
        key: String::new(),
        cached: false,
        installer: String::new(),
        exclude_newer,
        sources: Vec::new(),
        unresolved: Vec::new(),
        installed: Vec::new(),
        suite: None,
        failure: None,
    }
}

/// Makes the environment `opts` describe, or finds it made already from the same inputs.
/// A step that fails is in the record's `failure`, and leaves no environment behind.
pub fn build(opts: &Options) -> Result<Environment, EnvError> {
    if !opts.repo.is_dir() {
        return Err(EnvError::NoRepo(opts.repo.display().to_string()));
    }
    let installer =
        run_text(Command::new(&opts.uv).arg("--version")).map_err(|why| EnvError::NoInstaller {
            uv: opts.uv.display().to_string(),
            why,
        })?;
    std::fs::create_dir_all(&opts.cache).map_err(|source| EnvError::Cache {
        path: opts.cache.display().to_string(),
        source,
    })?;
    let mut env = Environment {
        installer: installer.trim().to_string(),
        ..empty_environment(&opts.name, &opts.repo, opts.exclude_newer.clone())
    };
    let base = match find_python(&opts.python) {
        Ok(p) => p,
        Err(message) => {
            env.failure = Some(failed("interpreter", None, message));
            return Ok(env);
        }
    };
    let version = match run_text(
        Command::new(&base).args(["-c", "import platform; print(platform.python_version())"]),
    ) {
        Ok(v) => v.trim().to_string(),
        Err(why) => {
            env.failure = Some(failed(
                "interpreter",
                None,
                format!("{} does not run: {why}", base.display()),
            ));
            return Ok(env);
        }
    };
    env.python_version = version.clone();
    env.key = key(opts, &base, &version, &env.installer);
    let dir = opts.cache.join(format!("{}-{}", opts.name, &env.key[..16]));
    env.python = dir.join("bin/python").display().to_string();
    if let Some(made) = read_stamp(&dir) {
        return Ok(Environment {
            cached: true,
            ..made
        });
    }
    // An environment without its stamp is one a killed run left half made.
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|source| EnvError::Cache {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let made = Installer {
        opts,
        dir: &dir,
        python: dir.join("bin/python"),
    }
    .make(&base, &mut env);
    if let Err(f) = made {
        std::fs::remove_dir_all(&dir).ok();
        env.failure = Some(f);
        env.sources.retain(|s| s.installed);
        return Ok(env);
    }
    if let Some(budget) = opts.suite_budget {
        match suite::run(opts, &dir.join("bin/python"), budget) {
            Ok(run) => env.suite = Some(run),
            // Not the environment's fault, but an environment nobody could check is not
            // stamped as made: the next run makes it again and checks it.
            Err(message) => {
                std::fs::remove_dir_all(&dir).ok();
                env.failure = Some(failed("suite", None, message));
                return Ok(env);
            }
        }
    }
    let text = serde_json::to_string_pretty(&env).expect("an environment serializes");
    std::fs::write(dir.join(STAMP), text + "\n").map_err(|source| EnvError::Cache {
        path: dir.display().to_string(),
        source,
    })?;
    Ok(env)
}

fn read_stamp(dir: &Path) -> Option<Environment> {
    let text = std::fs::read_to_string(dir.join(STAMP)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The digest of everything the environment is made from.
fn key(opts: &Options, base: &Path, version: &str, installer: &str) -> String {
    let mut text = format!(
        "clover-env {FORMAT}\npython {} {version}\ninstaller {installer}\nexclude-newer {:?}\n\
         tools {:?}\nentry {}\n",
        base.display(),
        opts.exclude_newer,
        test_tools(version),
        serde_json::to_string(&opts.entry).expect("an entry serializes"),
    );
    let mut files: Vec<PathBuf> = PACKAGING_FILES.iter().map(PathBuf::from).collect();
    files.extend(crate::detect::requirements_files(&opts.repo));
    for f in files {
        if let Ok(bytes) = std::fs::read(opts.repo.join(&f)) {
            text.push_str(&format!("{} {}\n", f.display(), sha256_hex(&bytes)));
        }
    }
    sha256_hex(text.as_bytes())
}

/// The interpreter `choice` names: a path; or a version (`3.10`), found as `python3.10` on
/// `PATH` or as a pyenv build of it; or a command on `PATH`.
pub fn find_python(choice: &str) -> Result<PathBuf, String> {
    if choice.contains('/') {
        let p = PathBuf::from(choice);
        return if p.exists() {
            Ok(p)
        } else {
            Err(format!("no interpreter at {choice}"))
        };
    }
    let is_version = !choice.is_empty() && choice.chars().all(|c| c.is_ascii_digit() || c == '.');
    let command = if is_version {
        let minor: String = choice.split('.').take(2).collect::<Vec<_>>().join(".");
        format!("python{minor}")
    } else {
        choice.to_string()
    };
    if let Some(found) = on_path(&command) {
        return Ok(found);
    }
    if is_version {
        let root = std::env::var_os("PYENV_ROOT")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")));
        let mut builds: Vec<PathBuf> = root
            .and_then(|r| std::fs::read_dir(r.join("versions")).ok())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                let n = e.file_name().to_string_lossy().to_string();
                n == choice || n.starts_with(&format!("{choice}."))
            })
            .map(|e| e.path().join("bin").join(&command))
            .filter(|p| p.exists())
            .collect();
        builds.sort();
        if let Some(newest) = builds.pop() {
            return Ok(newest);
        }
    }
    Err(format!(
        "no Python {choice} on this machine ({command} is not on PATH{}); install it \
         (apt-get install {command}, or pyenv install {choice}) or pass --python PATH",
        if is_version {
            " nor built by pyenv"
        } else {
            ""
        }
    ))
}

/// `command` on `PATH`, but not a pyenv shim: a shim is a script that picks an interpreter by
/// the current folder's settings, so it is not one interpreter.
fn on_path(command: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .filter(|d| !d.ends_with("shims"))
            .map(|d| d.join(command))
            .find(|p| p.is_file())
    })
}

/// Runs `cmd`, its stdout if it succeeded, else the last lines it wrote.
fn run_text(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(last_words(&out.stderr, &out.stdout))
    }
}

/// The installer's own explanation of a failure: its last few lines, on one line.
fn last_words(stderr: &[u8], stdout: &[u8]) -> String {
    let text = String::from_utf8_lossy(if stderr.is_empty() { stdout } else { stderr });
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let from = lines.len().saturating_sub(4);
    lines[from..].join(" ")
}

struct Installer<'a> {
    opts: &'a Options,
    dir: &'a Path,
    python: PathBuf,
}

impl Installer<'_> {
    fn make(&self, base: &Path, env: &mut Environment) -> Result<(), EnvFailure> {
        // The venv is made where it stays: a virtual environment cannot be moved.
        let mut venv = Command::new(&self.opts.uv);
        venv.args(["venv", "--no-config", "--quiet", "--python"])
            .arg(base)
            .arg(self.dir);
        self.uv_env(&mut venv);
        run_text(&mut venv).map_err(|why| failed("venv", None, why))?;
        let repo = &self.opts.repo;
        let project = PACKAGING_FILES[..3]
            .iter()
            .any(|f| repo.join(f).is_file())
            .then(|| project_name(repo));
        if let Some(name) = &project {
            self.install(&["-e".into(), ".".into()], true)
                .map_err(|why| failed("install", Some(name.clone()), why))?;
            env.sources.push(DependencySource {
                origin: "project".into(),
                name: name.clone(),
                requirements: vec![".".into()],
                installed: true,
            });
        }
        for found in dependency_sources(repo) {
            env.sources.push(self.source(&found, &mut env.unresolved));
        }
        if let Some(entry) = &self.opts.entry {
            if !entry.extras.is_empty() {
                let found = Found {
                    origin: "recipe",
                    name: format!("recipe[{}].extras", entry.name),
                    install: Install::Extras(entry.extras.clone()),
                };
                env.sources.push(self.source(&found, &mut env.unresolved));
            }
            if !entry.requirements.is_empty() {
                let found = Found {
                    origin: "recipe",
                    name: format!("recipe[{}]", entry.name),
                    install: Install::List(entry.requirements.clone()),
                };
                env.sources.push(self.source(&found, &mut env.unresolved));
            }
        }
        // A source may have pinned the project itself to a release (an example's
        // requirements): the tests are of this tree, so it is put back.
        if let Some(name) = &project {
            self.install(&["-e".into(), ".".into()], true)
                .map_err(|why| failed("install", Some(name.clone()), why))?;
        }
        let pins = self.freeze()?;
        let mut tools: Vec<String> = Vec::new();
        for tool in test_tools(&env.python_version) {
            let name = tool.split("==").next().unwrap_or(&tool).to_string();
            let has = pins.iter().any(|p| {
                p.split("==")
                    .next()
                    .unwrap_or("")
                    .eq_ignore_ascii_case(&name)
            });
            if name != "pytest" || !has {
                tools.push(tool.clone());
            }
        }
        // The test tools are the measuring instruments: the same ones in every environment,
        // whatever the cutoff.
        self.install(&tools, false)
            .map_err(|why| failed("install", Some(tools.join(" ")), why))?;
        env.sources.push(DependencySource {
            origin: "test_tools".into(),
            name: "clover".into(),
            requirements: tools,
            installed: true,
        });
        env.installed = self.freeze()?;
        std::fs::write(
            self.dir.join("requirements.lock"),
            env.installed.join("\n") + "\n",
        )
        .map_err(|e| failed("freeze", None, e.to_string()))?;
        Ok(())
    }

    /// Installs one source; when it fails as a whole, each of its requirements alone, and
    /// the ones that still fail are unresolved.
    fn source(&self, found: &Found, unresolved: &mut Vec<Unresolved>) -> DependencySource {
        let whole: Vec<String> = match &found.install {
            Install::File { path, .. } => vec!["-r".into(), path.display().to_string()],
            Install::Extras(extras) => vec!["-e".into(), format!(".[{}]", extras.join(","))],
            Install::List(list) => list.clone(),
        };
        let mut record = DependencySource {
            origin: found.origin.into(),
            name: found.name.clone(),
            requirements: found.requirements(),
            installed: true,
        };
        if whole.is_empty() || self.install(&whole, true).is_ok() {
            return record;
        }
        let alone: Vec<Vec<String>> = match &found.install {
            Install::Extras(extras) => extras
                .iter()
                .map(|e| vec!["-e".into(), format!(".[{e}]")])
                .collect(),
            _ => found.requirements().into_iter().map(|r| vec![r]).collect(),
        };
        for args in alone {
            if let Err(why) = self.install(&args, true) {
                record.installed = false;
                unresolved.push(Unresolved {
                    requirement: args.last().cloned().unwrap_or_default(),
                    source: found.name.clone(),
                    why,
                });
            }
        }
        record
    }

    fn install(&self, args: &[String], bounded: bool) -> Result<(), String> {
        let mut cmd = Command::new(&self.opts.uv);
        cmd.args(["pip", "install", "--no-config", "--quiet", "--python"])
            .arg(&self.python);
        if let (true, Some(at)) = (bounded, &self.opts.exclude_newer) {
            cmd.args(["--exclude-newer", at]);
        }
        cmd.args(args).current_dir(&self.opts.repo);
        self.uv_env(&mut cmd);
        run_text(&mut cmd).map(drop)
    }

    fn freeze(&self) -> Result<Vec<String>, EnvFailure> {
        let mut cmd = Command::new(&self.opts.uv);
        cmd.args([
            "pip",
            "freeze",
            "--no-config",
            "--exclude-editable",
            "--python",
        ])
        .arg(&self.python);
        self.uv_env(&mut cmd);
        let text = run_text(&mut cmd).map_err(|why| failed("freeze", None, why))?;
        let mut pins: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
        pins.sort_by_key(|p| p.to_ascii_lowercase());
        Ok(pins)
    }

    /// uv's cache beside the environments, and no interpreter fetched from the network.
    fn uv_env(&self, cmd: &mut Command) {
        cmd.env("UV_CACHE_DIR", self.opts.cache.join("uv"))
            .env("UV_PYTHON_DOWNLOADS", "never")
            .env_remove("VIRTUAL_ENV");
    }
}

/// The project's name, from its packaging files, else its folder's.
fn project_name(repo: &Path) -> String {
    let from_pyproject = std::fs::read_to_string(repo.join("pyproject.toml"))
        .ok()
        .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
        .and_then(|t| {
            let project = t.get("project").and_then(|p| p.get("name"));
            let poetry = t
                .get("tool")
                .and_then(|p| p.get("poetry"))
                .and_then(|p| p.get("name"));
            project.or(poetry)?.as_str().map(String::from)
        });
    from_pyproject
        .or_else(|| {
            let cfg = std::fs::read_to_string(repo.join("setup.cfg")).ok()?;
            cfg.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == "name").then(|| v.trim().to_string())
            })
        })
        .unwrap_or_else(|| {
            repo.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_looked_for_in_pyenv_and_a_missing_one_says_how_to_get_it() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("versions/3.10.13/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("python3.10"), "").unwrap();
        std::env::set_var("PYENV_ROOT", d.path());
        std::env::set_var("PATH", d.path());
        assert_eq!(find_python("3.10").unwrap(), bin.join("python3.10"));
        let err = find_python("2.1").unwrap_err();
        assert!(
            err.contains("python2.1") && err.contains("--python"),
            "{err}"
        );
        assert!(find_python("/no/such/python").is_err());
    }

    #[test]
    fn the_project_is_named_by_its_packaging_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("setup.cfg"), "[metadata]\nname = kombu\n").unwrap();
        assert_eq!(project_name(d.path()), "kombu");
        std::fs::write(
            d.path().join("pyproject.toml"),
            "[project]\nname = \"httpx\"\n",
        )
        .unwrap();
        assert_eq!(project_name(d.path()), "httpx");
    }
}
