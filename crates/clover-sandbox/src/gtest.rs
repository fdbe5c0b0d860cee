//! GoogleTest runs: the library under test built once per repository (with `--coverage`,
//! cached), a candidate test compiled and linked against it and run with
//! `--gtest_output=xml:`, coverage read through gcovr's Cobertura output, and the verdict
//! cross-checked between exit status and report.
//!
//! Every compiler run happens inside the sandbox — the library's own sources too, though
//! they are not model-written — and so does gcov, which parses counters a candidate wrote.
//! One candidate takes three runs, each in its own throwaway view of the repository:
//!
//! 1. (once per repository and cache key) compile every library source into
//!    `.clover-build/lib/<stem>.o` + `.gcno`; both are read back and kept on the host in a
//!    folder keyed by a hash of the sources, headers, compiler and flags ([`LibraryCache`]).
//! 2. write the cached objects and the candidate into a fresh view, compile and link the
//!    candidate (diagnostics to `.clover-out/compile.txt`), then `exec` the test binary, so
//!    the run's exit status is the binary's own; read back the report and the `.gcda` files.
//! 3. write `.gcno` + `.gcda` into another fresh view and run `gcovr --cobertura` there; its
//!    report gives the covered lines and the executable (instrumented) ones.
//!
//! A test file that runs many times (calibration: the ground truth as a whole, then each
//! `TEST` alone) is built once instead: [`GtestRun::build`] compiles and links it in step 2's
//! view and reads the binary back, and every [`TestBinary::run`] writes it into a fresh view
//! and `exec`s it there.
//!
//! `.gcda` counters exist only in the view of the run that wrote them and in the one that
//! reads them, so no run ever counts into another's coverage.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clover_protocol::{FileCoverage, LimitHit, Outcome, TestCase, TestOutcome};

use crate::once::OnceMap;
use crate::report::{parse_cobertura_lines, parse_junit, FileLines};
use crate::spec::{Collected, ExitStatus, Limits, RunOutput, RunSpec, WriteFile};
use crate::{Sandbox, SandboxError};

const LIB_DIR: &str = ".clover-build/lib";
const BUILD_DIR: &str = ".clover-build";
const OUT_DIR: &str = ".clover-out";
const CANDIDATE_OBJ: &str = ".clover-build/candidate.o";
const TEST_BINARY: &str = ".clover-build/candidate-test";
const GTEST_XML: &str = ".clover-out/gtest.xml";
const COVERAGE_XML: &str = ".clover-out/coverage.xml";
/// The flags of every coverage build, compile and link. Counters are updated atomically: a
/// test's threads (a background compaction, a pool) update them at once, plain increments
/// race, gcov then reads impossible counts and gcovr gives up (`UnknownLineType: branch 1
/// taken -3`).
const COVERAGE_FLAGS: [&str; 2] = ["--coverage", "-fprofile-update=atomic"];
const COMPILE_LOG: &str = ".clover-out/compile.txt";
const COMPILE_FAILED: &str = ".clover-out/compile.failed";

/// Extensions of C++ translation units.
const CXX_EXTENSIONS: &[&str] = &["cc", "cpp", "cxx", "c++", "C"];

/// How to build a C++ repository's library under test and its tests.
#[derive(Debug, Clone)]
pub struct CppProject {
    /// The repository on the host (canonical or not).
    pub repo: PathBuf,
    /// The compiler driver, looked up in the sandbox's `PATH` (`g++`).
    pub cxx: String,
    pub cxxflags: Vec<String>,
    /// Relative to the repository; passed as `-I`.
    pub include_dirs: Vec<PathBuf>,
    /// Relative to the repository; every translation unit below them that is not a test is
    /// part of the library under test.
    pub source_dirs: Vec<PathBuf>,
    /// File-name globs of test files (`*_test.cc`), left out of the library.
    pub test_globs: Vec<String>,
    /// Repository-relative globs of files left out of the library.
    pub excludes: Vec<String>,
    /// Libraries to link, without `-l` (`gtest_main`, `gtest`, `pthread`).
    pub link: Vec<String>,
    pub env: Vec<(OsString, OsString)>,
}

impl CppProject {
    /// The project a manifest entry describes.
    pub fn from_config(cfg: &clover_manifest::RepoConfig) -> CppProject {
        CppProject {
            repo: cfg.root.clone(),
            cxx: cfg.cxx.clone(),
            cxxflags: cfg.cxxflags.clone(),
            include_dirs: cfg.include_dirs.clone(),
            source_dirs: cfg.source_dirs.clone(),
            test_globs: cfg.test_globs.clone(),
            excludes: cfg.excludes.clone(),
            // A manifest that names no libraries means the usual GoogleTest ones, as detection
            // does.
            link: if cfg.link.is_empty() {
                ["gtest_main", "gtest", "gmock", "pthread"]
                    .map(String::from)
                    .to_vec()
            } else {
                cfg.link.clone()
            },
            env: cfg.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }

    fn include_flags(&self) -> Vec<String> {
        self.include_dirs
            .iter()
            .map(|d| format!("-I{}", d.display()))
            .collect()
    }

    /// The library's translation units, repository-relative and sorted.
    fn library_sources(&self, repo: &Path) -> Result<Vec<PathBuf>, SandboxError> {
        // The manifest's one meaning of a glob, as extract reads it: a name at any depth, or
        // a path from the root when it holds a `/`.
        let globs = |pats: &[String], what: &str| {
            clover_manifest::PathGlobs::new(pats)
                .map_err(|e| SandboxError::InvalidSpec(format!("{what} glob: {e}")))
        };
        let tests = globs(&self.test_globs, "test")?;
        let excludes = globs(&self.excludes, "exclude")?;
        let mut found = Vec::new();
        for dir in &self.source_dirs {
            for rel in walk_files(repo, dir) {
                let ext = rel.extension().and_then(|e| e.to_str()).unwrap_or("");
                let path = rel.to_string_lossy();
                if CXX_EXTENSIONS.contains(&ext)
                    && !tests.is_match(&path)
                    && !excludes.covers(&path)
                {
                    found.push(rel);
                }
            }
        }
        found.sort();
        found.dedup();
        Ok(found)
    }

    /// The shell line that compiles one source of the library, instrumented, into `obj`.
    fn compile_library_object(&self, src: &Path, obj: &str) -> String {
        let flags = self.include_flags();
        let src = src.to_string_lossy();
        let words = std::iter::once(self.cxx.as_str())
            .chain(self.cxxflags.iter().map(String::as_str))
            .chain(flags.iter().map(String::as_str))
            .chain(COVERAGE_FLAGS)
            .chain(["-c", &src, "-o", obj]);
        sh_words(words)
    }

    /// A hash of everything the library's objects depend on: the repository's path (object
    /// files name their `.gcda` by absolute path), the compiler and flags, and the content
    /// of every file below the source and include folders.
    fn cache_key(&self, repo: &Path) -> String {
        let mut bytes = Vec::new();
        let mut add = |b: &[u8]| {
            bytes.extend_from_slice(&(b.len() as u64).to_le_bytes());
            bytes.extend_from_slice(b);
        };
        add(repo.as_os_str().as_bytes());
        add(self.cxx.as_bytes());
        for f in self
            .cxxflags
            .iter()
            .map(String::as_str)
            .chain(COVERAGE_FLAGS)
        {
            add(f.as_bytes());
        }
        for d in &self.include_dirs {
            add(d.as_os_str().as_bytes());
        }
        if let Some(cxx) = which(&self.cxx) {
            if let Ok(md) = std::fs::metadata(&cxx) {
                add(&md.mtime().to_le_bytes());
                add(&md.size().to_le_bytes());
            }
        }
        let mut files: Vec<PathBuf> = self
            .source_dirs
            .iter()
            .chain(&self.include_dirs)
            .flat_map(|d| walk_files(repo, d))
            .collect();
        files.sort();
        files.dedup();
        for f in files {
            add(f.as_os_str().as_bytes());
            add(&std::fs::read(repo.join(&f)).unwrap_or_default());
        }
        // Two differently seeded FNV-1a hashes: 128 bits for a cache key.
        let a = clover_protocol::fnv1a64(&bytes);
        bytes.push(0x5a);
        let b = clover_protocol::fnv1a64(&bytes);
        format!("{a:016x}{b:016x}")
    }
}

/// Regular files below `repo/dir`, repository-relative; never follows symlinks, skips build,
/// tool and hidden folders.
fn walk_files(repo: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(repo.join(&rel)) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let name = e.file_name();
            let child = if rel.as_os_str().is_empty() || rel == Path::new(".") {
                PathBuf::from(&name)
            } else {
                rel.join(&name)
            };
            if ft.is_dir() {
                let n = name.to_string_lossy();
                // Hidden folders hold tool state, not the library (quilt's `.pc` keeps
                // pre-patch copies of sources; `.git`, `.clover-build`).
                if !clover_manifest::PRUNED_DIRS.contains(&n.as_ref()) && !n.starts_with('.') {
                    stack.push(child);
                }
            } else if ft.is_file() {
                out.push(child);
            }
        }
    }
    out
}

fn which(cmd: &str) -> Option<PathBuf> {
    if cmd.contains('/') {
        return Some(PathBuf::from(cmd));
    }
    ["/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(cmd))
        .find(|p| p.exists())
}

/// Quotes one word for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn sh_words<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    words
        .into_iter()
        .map(sh_quote)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One object file of the library under test.
#[derive(Debug)]
struct Object {
    /// The source, repository-relative.
    source: PathBuf,
    /// File stem inside [`LIB_DIR`]: the source path with `/` turned into `__`.
    stem: String,
    object: Vec<u8>,
    gcno: Vec<u8>,
}

impl Object {
    fn path(&self, ext: &str) -> PathBuf {
        Path::new(LIB_DIR).join(format!("{}.{ext}", self.stem))
    }
}

/// The library under test of one repository, compiled with `--coverage`.
#[derive(Debug)]
pub struct LibraryBuild {
    /// The cache key it was built (or found) under.
    pub key: String,
    objects: Vec<Object>,
}

impl LibraryBuild {
    /// The repository-relative sources it was compiled from.
    pub fn sources(&self) -> impl Iterator<Item = &Path> {
        self.objects.iter().map(|o| o.source.as_path())
    }
}

/// Builds the library under test once per repository and key, in memory for this process
/// and on disk (a folder per key) across processes.
#[derive(Debug)]
pub struct LibraryCache {
    dir: PathBuf,
    /// Per key: the build, or the compiler's diagnostics when the library does not compile.
    builds: OnceMap<String, Result<Arc<LibraryBuild>, String>>,
}

impl LibraryCache {
    /// A cache in `dir` (created with mode 0700; it must belong to us).
    pub fn new(dir: impl Into<PathBuf>) -> Result<LibraryCache, SandboxError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|e| SandboxError::io("creating", &dir, e))?;
        let md =
            std::fs::symlink_metadata(&dir).map_err(|e| SandboxError::io("reading", &dir, e))?;
        // SAFETY: geteuid has no preconditions.
        if !md.is_dir() || md.uid() != unsafe { libc::geteuid() } {
            return Err(SandboxError::InvalidSpec(format!(
                "the build cache {} must be a directory of ours; remove it or choose another",
                dir.display()
            )));
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| SandboxError::io("securing", &dir, e))?;
        Ok(LibraryCache {
            dir,
            builds: OnceMap::default(),
        })
    }

    /// The default place: `$TMPDIR/clover-gtest-cache`.
    pub fn default_dir() -> PathBuf {
        std::env::temp_dir().join("clover-gtest-cache")
    }

    /// The library of `project`, built in the sandbox unless this process or the disk cache
    /// has it. Concurrent callers for the same key wait for one build. `Err` holds why the
    /// library does not compile (the compiler's diagnostics).
    pub fn library(
        &self,
        sandbox: &Sandbox,
        project: &CppProject,
        limits: &Limits,
    ) -> Result<Arc<LibraryBuild>, LibraryError> {
        let repo = project
            .repo
            .canonicalize()
            .map_err(|e| SandboxError::io("opening the repository", &project.repo, e))?;
        let key = project.cache_key(&repo);
        // A sandbox failure is no verdict on the sources: the key is forgotten and a later
        // call builds again.
        let built = self
            .builds
            .get_or_make(&key, || match self.load(&key) {
                Some(b) => Ok(Ok(Arc::new(b))),
                None => Ok(match self.build(sandbox, project, &repo, &key, limits)? {
                    Ok(b) => {
                        // A cache that cannot be written only costs a rebuild next time.
                        let _ = self.store(&b);
                        Ok(Arc::new(b))
                    }
                    Err(diag) => Err(diag),
                }),
            })
            .map_err(LibraryError::Sandbox)?;
        match built {
            Some(Ok(b)) => Ok(b),
            Some(Err(diag)) => Err(LibraryError::DoesNotCompile(diag)),
            None => Err(LibraryError::Sandbox(SandboxError::InvalidSpec(
                "an earlier build of the library could not be carried out".into(),
            ))),
        }
    }

    fn build(
        &self,
        sandbox: &Sandbox,
        project: &CppProject,
        repo: &Path,
        key: &str,
        limits: &Limits,
    ) -> Result<Result<LibraryBuild, String>, SandboxError> {
        let sources = project.library_sources(repo)?;
        let objects: Vec<(PathBuf, String)> = sources
            .into_iter()
            .map(|s| {
                let stem = s.to_string_lossy().replace('/', "__");
                (s, stem)
            })
            .collect();
        if objects.is_empty() {
            return Ok(Ok(LibraryBuild {
                key: key.to_string(),
                objects: Vec::new(),
            }));
        }
        let mut script = String::from("set -e\n");
        for (src, stem) in &objects {
            let obj = format!("{LIB_DIR}/{stem}.o");
            script.push_str(&project.compile_library_object(src, &obj));
            script.push('\n');
        }
        let mut spec = RunSpec::new(repo, ["/bin/sh", "-c", &script]);
        spec.env = project.env.clone();
        spec.writable_dirs = vec![BUILD_DIR.into(), LIB_DIR.into()];
        spec.limits = Limits {
            wall: Duration::from_secs(600).max(limits.wall),
            cpu_secs: 600.max(limits.cpu_secs),
            ..limits.clone()
        };
        for (_, stem) in &objects {
            spec.collect
                .push(Path::new(LIB_DIR).join(format!("{stem}.o")));
            spec.collect
                .push(Path::new(LIB_DIR).join(format!("{stem}.gcno")));
        }
        let out = sandbox.run(&spec)?;
        if !out.exit.success() {
            let why = match out.limit_hit {
                Some(l) => format!("the build hit its {l:?} limit"),
                None => first_errors(&out.stderr.text()),
            };
            return Ok(Err(why));
        }
        let mut files = out.files.into_iter();
        let mut built = Vec::new();
        for (source, stem) in objects {
            let (Some(o), Some(g)) = (files.next(), files.next()) else {
                unreachable!("two collected files per object")
            };
            match (o.content, g.content) {
                (
                    Collected::Read {
                        bytes: object,
                        truncated: false,
                    },
                    Collected::Read {
                        bytes: gcno,
                        truncated: false,
                    },
                ) => built.push(Object {
                    source,
                    stem,
                    object,
                    gcno,
                }),
                _ => {
                    return Ok(Err(format!(
                        "the build of {} left no object file and notes",
                        source.display()
                    )))
                }
            }
        }
        Ok(Ok(LibraryBuild {
            key: key.to_string(),
            objects: built,
        }))
    }

    fn load(&self, key: &str) -> Option<LibraryBuild> {
        let dir = self.dir.join(key);
        let index = std::fs::read_to_string(dir.join("index")).ok()?;
        let mut objects = Vec::new();
        for line in index.lines() {
            let (stem, source) = line.split_once('\t')?;
            objects.push(Object {
                source: PathBuf::from(source),
                stem: stem.to_string(),
                object: std::fs::read(dir.join(format!("{stem}.o"))).ok()?,
                gcno: std::fs::read(dir.join(format!("{stem}.gcno"))).ok()?,
            });
        }
        Some(LibraryBuild {
            key: key.to_string(),
            objects,
        })
    }

    /// Writes a build to `<dir>/<key>/` through a temporary folder renamed at the end, so a
    /// reader sees a whole build or none.
    fn store(&self, b: &LibraryBuild) -> std::io::Result<()> {
        let tmp = self
            .dir
            .join(format!(".{}.{}.tmp", b.key, std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir(&tmp)?;
        let mut index = std::fs::File::create(tmp.join("index"))?;
        for o in &b.objects {
            std::fs::write(tmp.join(format!("{}.o", o.stem)), &o.object)?;
            std::fs::write(tmp.join(format!("{}.gcno", o.stem)), &o.gcno)?;
            writeln!(index, "{}\t{}", o.stem, o.source.display())?;
        }
        drop(index);
        match std::fs::rename(&tmp, self.dir.join(&b.key)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                Err(e)
            }
        }
    }
}

/// Why the library under test is not available.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("the library under test does not compile: {0}")]
    DoesNotCompile(String),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// The first compiler errors of a log: the lines from the first `error` on, at most 20
/// lines and 2000 bytes.
pub fn first_errors(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains("error"))
        .map_or(0, |i| i.saturating_sub(1));
    let mut out = String::new();
    for l in lines.iter().skip(start).take(20) {
        if out.len() + l.len() > 2000 {
            break;
        }
        out.push_str(l);
        out.push('\n');
    }
    let out = out.trim_end().to_string();
    if out.is_empty() {
        "the compiler failed without a message".into()
    } else {
        out
    }
}

/// One candidate GoogleTest file run against its repository's library.
#[derive(Debug, Clone)]
pub struct GtestRun<'a> {
    pub project: &'a CppProject,
    /// The candidate test file, written at its repository-relative path.
    pub test_file: WriteFile,
    /// GoogleTest filters (`Suite.Name`, patterns), joined with `:`; none runs every test.
    pub filter: Vec<String>,
    /// Limits of the compile-and-run step (compiling counts against the wall clock).
    pub limits: Limits,
}

/// What a GoogleTest run showed.
#[derive(Debug, Clone)]
pub struct GtestResult {
    pub outcome: Outcome,
    pub tests: Vec<TestCase>,
    /// Covered lines of the library's files (below the source folders).
    pub coverage: Vec<FileCoverage>,
    /// Executable (instrumented) lines of the same files, covered or not.
    pub executable: Vec<FileCoverage>,
    /// Why the run failed, or else why its coverage is missing or incomplete.
    pub message: Option<String>,
    /// Why coverage is missing or incomplete though the binary ended by itself: counters it
    /// did not write, or gcovr that gave no report. `None` when the lines are whole.
    pub coverage_problem: Option<String>,
    /// The compile-and-run step (for [`TestBinary::run`], the run alone).
    pub run: RunOutput,
}

impl<'a> GtestRun<'a> {
    /// Compiles, runs and measures the candidate. `Err` means a run could not be carried out
    /// or the library under test does not compile; a candidate that does not compile is
    /// `Ok` with outcome `compile_error`.
    pub fn run(
        &self,
        sandbox: &Sandbox,
        cache: &LibraryCache,
    ) -> Result<GtestResult, LibraryError> {
        let (lib, repo) = self.library(sandbox, cache)?;
        // The test binary replaces the shell, so the run's exit status is its own.
        let script = format!("{}\nexec ./{TEST_BINARY} \"$@\"\n", self.build_script(&lib));
        let mut spec = self.build_spec(&repo, &lib, script);
        spec.argv.extend(run_args(&self.filter));
        spec.collect
            .extend(lib.objects.iter().map(|o| o.path("gcda")));
        spec.collect.push(GTEST_XML.into());
        let run = sandbox.run(&spec)?;
        if let Some(failed) = compile_error(&run) {
            return Ok(failed);
        }
        Measure {
            project: self.project,
            repo: &repo,
            lib: &lib,
            limits: &self.limits,
        }
        .result(sandbox, run)
    }

    /// Compiles and links the test file once, for several runs of [`TestBinary::run`] (a
    /// ground truth run as a whole and then test by test). `Ok(Err(_))` is a test file that
    /// does not compile (outcome `compile_error`), or a build that ended without a binary.
    /// `self.filter` is not used: each run names its own.
    pub fn build(
        &self,
        sandbox: &Sandbox,
        cache: &LibraryCache,
    ) -> Result<Result<TestBinary<'a>, GtestResult>, LibraryError> {
        let (lib, repo) = self.library(sandbox, cache)?;
        let script = self.build_script(&lib);
        let mut spec = self.build_spec(&repo, &lib, script);
        spec.collect.push(TEST_BINARY.into());
        let run = sandbox.run(&spec)?;
        if let Some(failed) = compile_error(&run) {
            return Ok(Err(failed));
        }
        let binary = match run.file(TEST_BINARY) {
            Some(Collected::Read {
                bytes,
                truncated: false,
            }) if run.exit.success() => bytes.clone(),
            _ => {
                // Out of time or killed: say so; else the binary is missing or too large.
                let ended = run.limit_hit.is_some() || run.exit.signal().is_some();
                let (outcome, message) = match ended {
                    true => {
                        crate::spec::verdict_of_ending("the build", run.exit, run.limit_hit, None)
                            .err()
                            .unwrap_or((Outcome::Error, None))
                    }
                    false => (Outcome::Error, None),
                };
                let message = message.unwrap_or_else(|| {
                    format!(
                        "the build ended ({:?}) without a whole test binary",
                        run.exit
                    )
                });
                return Ok(Err(GtestResult {
                    outcome,
                    tests: Vec::new(),
                    coverage: Vec::new(),
                    executable: Vec::new(),
                    message: Some(message),
                    coverage_problem: None,
                    run,
                }));
            }
        };
        Ok(Ok(TestBinary {
            project: self.project,
            repo,
            lib,
            binary,
        }))
    }

    fn library(
        &self,
        sandbox: &Sandbox,
        cache: &LibraryCache,
    ) -> Result<(Arc<LibraryBuild>, PathBuf), LibraryError> {
        let p = self.project;
        let lib = cache.library(sandbox, p, &self.limits)?;
        let repo = p.repo.canonicalize().map_err(|e| {
            LibraryError::Sandbox(SandboxError::io("opening the repository", &p.repo, e))
        })?;
        Ok((lib, repo))
    }

    /// Shell lines that compile and link the candidate into [`TEST_BINARY`]; on failure they
    /// leave the diagnostics in [`COMPILE_LOG`], mark [`COMPILE_FAILED`] and exit 1.
    fn build_script(&self, lib: &LibraryBuild) -> String {
        let p = self.project;
        let cand = self.test_file.path.to_string_lossy().into_owned();
        let flags = p.include_flags();
        let base = || {
            std::iter::once(p.cxx.as_str())
                .chain(p.cxxflags.iter().map(String::as_str))
                .chain(flags.iter().map(String::as_str))
        };
        let compile = sh_words(base().chain(["-c", &cand, "-o", CANDIDATE_OBJ]));
        let objs: Vec<String> = lib
            .objects
            .iter()
            .map(|o| o.path("o").to_string_lossy().into_owned())
            .collect();
        let libs: Vec<String> = p.link.iter().map(|l| format!("-l{l}")).collect();
        let link = sh_words(
            base()
                .chain([CANDIDATE_OBJ])
                .chain(objs.iter().map(String::as_str))
                .chain(COVERAGE_FLAGS)
                .chain(["-o", TEST_BINARY])
                .chain(libs.iter().map(String::as_str)),
        );
        format!(
            "if ! {{ {compile} && {link}; }} > {COMPILE_LOG} 2>&1; then : > {COMPILE_FAILED}; exit 1; fi"
        )
    }

    /// The view that builds the candidate: the library's objects and the test file written
    /// in, the compiler's report collected.
    fn build_spec(&self, repo: &Path, lib: &LibraryBuild, script: String) -> RunSpec {
        let mut spec = RunSpec::new(repo, ["/bin/sh", "-c", &script, "gtest"]);
        spec.env = self.project.env.clone();
        spec.files = lib
            .objects
            .iter()
            .map(|o| WriteFile {
                path: o.path("o"),
                contents: o.object.clone(),
            })
            .collect();
        spec.files.push(self.test_file.clone());
        spec.writable_dirs = vec![BUILD_DIR.into(), LIB_DIR.into(), OUT_DIR.into()];
        spec.collect = vec![COMPILE_LOG.into(), COMPILE_FAILED.into()];
        spec.limits = self.limits.clone();
        spec
    }
}

/// The test binary's arguments: its XML report, and the filter if there is one.
fn run_args(filter: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![format!("--gtest_output=xml:{GTEST_XML}").into()];
    if !filter.is_empty() {
        args.push(format!("--gtest_filter={}", filter.join(":")).into());
    }
    args
}

/// The `compile_error` result of a run whose build failed (and not for want of time).
fn compile_error(run: &RunOutput) -> Option<GtestResult> {
    let failed = matches!(run.file(COMPILE_FAILED), Some(Collected::Read { .. }));
    if !failed || run.limit_hit.is_some() {
        return None;
    }
    let log = run
        .file(COMPILE_LOG)
        .and_then(Collected::bytes)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    Some(GtestResult {
        outcome: Outcome::CompileError,
        tests: Vec::new(),
        coverage: Vec::new(),
        executable: Vec::new(),
        message: Some(first_errors(&log)),
        coverage_problem: None,
        run: run.clone(),
    })
}

/// A test file compiled and linked once ([`GtestRun::build`]). Every [`TestBinary::run`]
/// starts from a fresh view of the repository, so `.gcda` counters start at zero and no run
/// sees another's files, as with a build per run.
#[derive(Debug)]
pub struct TestBinary<'a> {
    project: &'a CppProject,
    repo: PathBuf,
    lib: Arc<LibraryBuild>,
    binary: Vec<u8>,
}

impl TestBinary<'_> {
    /// Runs the binary (with `--gtest_filter` when `filter` names tests) and measures it.
    pub fn run(
        &self,
        sandbox: &Sandbox,
        filter: &[String],
        limits: &Limits,
    ) -> Result<GtestResult, LibraryError> {
        // Files are written without the execute bit; the binary is the sandbox user's, so it
        // may give itself one. Then it replaces the shell: the exit status is its own.
        let script = format!("chmod u+x {TEST_BINARY} && exec ./{TEST_BINARY} \"$@\"");
        let mut spec = RunSpec::new(&self.repo, ["/bin/sh", "-c", &script, "gtest"]);
        spec.argv.extend(run_args(filter));
        spec.env = self.project.env.clone();
        spec.files = vec![WriteFile {
            path: TEST_BINARY.into(),
            contents: self.binary.clone(),
        }];
        spec.writable_dirs = vec![BUILD_DIR.into(), LIB_DIR.into(), OUT_DIR.into()];
        spec.collect = vec![GTEST_XML.into()];
        spec.collect
            .extend(self.lib.objects.iter().map(|o| o.path("gcda")));
        spec.limits = limits.clone();
        let run = sandbox.run(&spec)?;
        Measure {
            project: self.project,
            repo: &self.repo,
            lib: &self.lib,
            limits,
        }
        .result(sandbox, run)
    }
}

/// Turns a finished run of a test binary into its result: the report, the verdict, and the
/// coverage of its counters.
struct Measure<'a> {
    project: &'a CppProject,
    repo: &'a Path,
    lib: &'a LibraryBuild,
    limits: &'a Limits,
}

impl Measure<'_> {
    fn result(&self, sandbox: &Sandbox, run: RunOutput) -> Result<GtestResult, LibraryError> {
        let (tests, report_problem) = match run.file(GTEST_XML) {
            Some(Collected::Read { bytes, .. }) => match parse_junit(bytes) {
                Ok(t) => (Some(t), None),
                Err(e) => (
                    None,
                    Some(format!("the GoogleTest report is unreadable: {e}")),
                ),
            },
            Some(Collected::Refused(why)) => (
                None,
                Some(format!("the GoogleTest report was refused: {why}")),
            ),
            _ => (None, None),
        };
        let (outcome, message) = judge(run.exit, run.limit_hit, tests.as_deref());
        // Every library object linked into the binary writes its counters when the binary
        // exits; a run that ended by itself without them lost its coverage, and says so.
        let mut gcda = Vec::new();
        let mut lost = Vec::new();
        for o in &self.lib.objects {
            let path = o.path("gcda");
            match run.file(&path) {
                Some(Collected::Read {
                    bytes,
                    truncated: false,
                }) => gcda.push((path, bytes.clone())),
                Some(Collected::Read { .. }) => lost.push(format!("{} (over the cap)", o.stem)),
                Some(Collected::Refused(why)) => lost.push(format!("{} (refused: {why})", o.stem)),
                _ => lost.push(o.stem.clone()),
            }
        }
        let ended_by_itself = run.limit_hit.is_none() && run.exit.code().is_some();
        // libgcov says on stderr why it could not write a file.
        let mut coverage_problem = (ended_by_itself && !lost.is_empty()).then(|| {
            format!(
                "no counters (.gcda) from {} of {} library objects: {}; the binary's stderr \
                 ends: {:?}",
                lost.len(),
                self.lib.objects.len(),
                lost.join(", "),
                run.stderr.tail(600)
            )
        });
        let lines = if gcda.is_empty() {
            Vec::new()
        } else {
            match self.coverage(sandbox, gcda)? {
                Ok(lines) => lines,
                Err(why) => {
                    coverage_problem.get_or_insert(why);
                    Vec::new()
                }
            }
        };
        let (coverage, executable) = lines
            .into_iter()
            .map(|f| {
                (
                    FileCoverage {
                        path: f.path.clone(),
                        lines: f.covered,
                    },
                    FileCoverage {
                        path: f.path,
                        lines: f.executable,
                    },
                )
            })
            .unzip();
        Ok(GtestResult {
            outcome,
            tests: tests.unwrap_or_default(),
            coverage,
            executable,
            message: report_problem.or(message).or(coverage_problem.clone()),
            coverage_problem,
            run,
        })
    }

    /// Runs gcovr over the counters of one run, in a view of its own. The inner `Err` says
    /// why gcovr gave no lines.
    fn coverage(
        &self,
        sandbox: &Sandbox,
        gcda: Vec<(PathBuf, Vec<u8>)>,
    ) -> Result<Result<Vec<FileLines>, String>, SandboxError> {
        let repo = self.repo;
        let mut spec = RunSpec::new(
            repo,
            [
                OsString::from("gcovr"),
                "--root".into(),
                repo.into(),
                "--cobertura".into(),
                COVERAGE_XML.into(),
                LIB_DIR.into(),
            ],
        );
        spec.files = self
            .lib
            .objects
            .iter()
            .map(|o| WriteFile {
                path: o.path("gcno"),
                contents: o.gcno.clone(),
            })
            .chain(
                gcda.into_iter()
                    .map(|(path, contents)| WriteFile { path, contents }),
            )
            .collect();
        spec.writable_dirs = vec![BUILD_DIR.into(), LIB_DIR.into(), OUT_DIR.into()];
        spec.collect = vec![COVERAGE_XML.into()];
        spec.limits = Limits {
            wall: Duration::from_secs(120),
            cpu_secs: 120,
            ..self.limits.clone()
        };
        let out = sandbox.run(&spec)?;
        let Some(bytes) = out.file(COVERAGE_XML).and_then(Collected::bytes) else {
            let ended = match (out.limit_hit, out.exit) {
                (Some(l), _) => format!("hit its {l:?} limit"),
                (None, ExitStatus::Code(c)) => format!("exited with {c}"),
                (None, ExitStatus::Signal(s)) => format!("was killed by signal {s}"),
            };
            return Ok(Err(format!(
                "gcovr wrote no coverage report: it {ended}: {}",
                out.stderr.tail(1000).trim()
            )));
        };
        let mut cov = match parse_cobertura_lines(bytes, repo) {
            Ok(cov) => cov,
            Err(e) => return Ok(Err(format!("gcovr's coverage report is unreadable: {e}"))),
        };
        let dirs: Vec<&Path> = self
            .project
            .source_dirs
            .iter()
            .map(PathBuf::as_path)
            .collect();
        cov.retain(|f| {
            dirs.iter()
                .any(|d| *d == Path::new(".") || Path::new(&f.path).starts_with(d))
        });
        Ok(Ok(cov))
    }
}

/// The verdict of a GoogleTest binary's run. A crash (signal, or a non-zero exit with no
/// report: `abort()` in a test writes no XML) is `killed`/`error`, never "0 tests, passed".
pub fn judge(
    exit: ExitStatus,
    limit: Option<LimitHit>,
    tests: Option<&[TestCase]>,
) -> (Outcome, Option<String>) {
    let (code, tests) = match crate::spec::verdict_of_ending("the test binary", exit, limit, tests)
    {
        Ok(ended) => ended,
        Err(verdict) => return verdict,
    };
    let failed = tests.iter().any(|t| t.outcome == TestOutcome::Failed);
    let ran = tests.iter().any(|t| t.outcome != TestOutcome::Skipped);
    match (code, failed) {
        (0, false) if ran => (Outcome::Passed, None),
        (0, false) => (Outcome::Error, Some("no test ran".into())),
        (1, true) => (Outcome::Failed, None),
        _ => (
            Outcome::Error,
            Some(format!("exit code {code} disagrees with the report")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_without_xml_is_not_a_pass() {
        assert_eq!(judge(ExitStatus::Signal(6), None, None).0, Outcome::Killed);
        assert_eq!(judge(ExitStatus::Code(134), None, None).0, Outcome::Error);
        assert_eq!(
            judge(ExitStatus::Code(0), None, Some(&[])).0,
            Outcome::Error
        );
    }

    #[test]
    fn shell_words_are_quoted() {
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_words(["g++", "-DX=\"1\""]), r#"'g++' '-DX="1"'"#);
    }

    #[test]
    fn first_errors_start_at_the_first_error() {
        let log =
            "In file included from a.cc:1:\nb.h:2:3: error: x was not declared\n  x;\nnote: y\n";
        let got = first_errors(log);
        assert!(got.starts_with("In file included"), "{got}");
        assert!(got.contains("error: x was not declared"));
        assert_eq!(first_errors(""), "the compiler failed without a message");
    }

    #[test]
    fn library_sources_leave_tests_out() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "src/a.cc",
            "src/a_test.cc",
            "src/sub/b.cpp",
            "src/c.h",
            "tests/t_test.cc",
        ] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let project = CppProject {
            repo: dir.path().into(),
            cxx: "g++".into(),
            cxxflags: vec![],
            include_dirs: vec!["src".into()],
            source_dirs: vec!["src".into()],
            test_globs: vec!["*_test.cc".into()],
            excludes: vec![],
            link: vec![],
            env: vec![],
        };
        let got = project.library_sources(dir.path()).unwrap();
        assert_eq!(got, vec![PathBuf::from("src/a.cc"), "src/sub/b.cpp".into()]);
        // An exclude without `/` is a name at any depth, as extract reads it: a tool with its
        // own main() below the sources is not linked into the library.
        std::fs::write(dir.path().join("src/sub/bench.cc"), "int main() {}\n").unwrap();
        let tool = CppProject {
            excludes: vec!["bench.cc".into()],
            ..project.clone()
        };
        assert_eq!(
            tool.library_sources(dir.path()).unwrap(),
            vec![PathBuf::from("src/a.cc"), "src/sub/b.cpp".into()]
        );
        // Coverage builds update their counters atomically (threaded tests), library and link.
        let line = project.compile_library_object(Path::new("src/a.cc"), "a.o");
        assert!(
            line.contains("'--coverage' '-fprofile-update=atomic'"),
            "{line}"
        );
        let run = GtestRun {
            project: &project,
            test_file: WriteFile {
                path: "tests/t_test.cc".into(),
                contents: Vec::new(),
            },
            filter: Vec::new(),
            limits: Limits::default(),
        };
        let lib = LibraryBuild {
            key: String::new(),
            objects: Vec::new(),
        };
        let script = run.build_script(&lib);
        assert!(
            script.contains("'--coverage' '-fprofile-update=atomic' '-o'"),
            "{script}"
        );
        let k1 = project.cache_key(dir.path());
        std::fs::write(dir.path().join("src/c.h"), "#define X 1\n").unwrap();
        assert_ne!(
            k1,
            project.cache_key(dir.path()),
            "a header change is a new key"
        );
    }
}
