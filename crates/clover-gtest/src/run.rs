//! One candidate GoogleTest file built against its library, run, and measured.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clover_protocol::{FileCoverage, LimitHit, Outcome, TestCase, TestOutcome};

use clover_report::{parse_cobertura_lines, parse_junit, FileLines};
use clover_sandbox::{
    Collected, ExitStatus, Limits, OnceMap, RunOutput, RunSpec, Sandbox, SandboxError, WriteFile,
};

use crate::compile::{build_key, depfile_inputs, first_errors, sh_quote, sh_words, KeyHasher};
use crate::{gcov, pch, record};

pub(crate) const LIB_DIR: &str = ".clover-build/lib";
pub(crate) const BUILD_DIR: &str = ".clover-build";
pub(crate) const OUT_DIR: &str = ".clover-out";
pub(crate) const CANDIDATE_OBJ: &str = ".clover-build/candidate.o";
pub(crate) const TEST_BINARY: &str = ".clover-build/candidate-test";
pub(crate) const GTEST_XML: &str = ".clover-out/gtest.xml";
/// clover's GoogleTest listener (`record.rs`), compiled, linked into every test binary.
pub(crate) const LISTENER_OBJ: &str = ".clover-build/clover-listener.o";
const LISTENER_SRC: &str = ".clover-build/clover-listener.cc";
const COVERAGE_XML: &str = ".clover-out/coverage.xml";
/// The flags of every coverage build, compile and link. Counters are updated atomically: a
/// test's threads (a background compaction, a pool) update them at once, plain increments
/// race, gcov then reads impossible counts and gcovr gives up (`UnknownLineType: branch 1
/// taken -3`).
const COVERAGE_FLAGS: [&str; 2] = ["--coverage", "-fprofile-update=atomic"];
pub(crate) const COMPILE_LOG: &str = ".clover-out/compile.txt";
pub(crate) const COMPILE_FAILED: &str = ".clover-out/compile.failed";
/// Coverage notes and counters of the test file itself, beside [`CANDIDATE_OBJ`].
const CANDIDATE_GCNO: &str = ".clover-build/candidate.gcno";
const CANDIDATE_GCDA: &str = ".clover-build/candidate.gcda";
/// The library whose one object is a `main` that runs every test.
const GTEST_MAIN: &str = "gtest_main";
/// Lists the symbols of [`CANDIDATE_OBJ`] once, into `.clover-build/candidate.syms`: the
/// build asks two things of them. `readelf` (a table: number, value, size, type, binding,
/// visibility, section, name) takes a few milliseconds where `nm`, which sets up every object
/// format it knows first, took 40 ms on a GoogleTest object. A listing that fails reads as no
/// `main` and no counters.
pub(crate) const LIST_SYMBOLS: &str =
    "{ readelf -sW .clover-build/candidate.o > .clover-build/candidate.syms 2>/dev/null || :; }";
/// A shell condition that holds when the test file's object defines `main` (a global or weak
/// symbol in one of its sections), once [`LIST_SYMBOLS`] ran.
pub(crate) const DEFINES_MAIN: &str =
    "grep -Eq ' (GLOBAL|WEAK) +[A-Z]+ +[0-9]+ main$' .clover-build/candidate.syms";
/// A shell condition that holds when the test file's object has coverage counters, once
/// [`LIST_SYMBOLS`] ran.
const HAS_COUNTERS: &str = "grep -q ' __gcov0[.]' .clover-build/candidate.syms";
/// Marks a test object that defines its own `main` (linked without `gtest_main`).
pub(crate) const OWN_MAIN: &str = ".clover-out/own-main";
/// The CPU time the run's shell and the processes it waited for (compile, link) had spent
/// when it turned into the test binary: the shell's `times`, written just before the `exec`.
pub(crate) const TIMES_BEFORE_EXEC: &str = ".clover-out/times-before-exec.txt";

/// The linker tried first when [`FastBuild::fast_linker`] is on and it is installed; a link
/// it fails is done again with the compiler's default.
const FAST_LINKER: &str = "mold";
/// Where the fast linker's own diagnostics go, so that a failed link's log is the default
/// linker's, as without it.
const FAST_LINK_LOG: &str = ".clover-out/fast-link.txt";

/// What the runner does to build a candidate faster. None of it changes a verdict or a
/// covered line (tested on the fixtures); each is there to be turned off for comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastBuild {
    /// Precompile the candidate's leading `#include` lines (those of a file that includes
    /// GoogleTest or GMock), and a mutated library source's, once, the second time they are
    /// seen, and compile the candidate or the mutant against the `.gch`.
    pub precompiled_headers: bool,
    /// Link with `mold` when it is installed (`cargo xtask setup` installs it).
    pub fast_linker: bool,
    /// Instrument only the repository's files in the candidate's object
    /// (`-fprofile-filter-files`, `-fprofile-exclude-files` of the test file itself): the
    /// test file's own lines are never read, and instrumenting its test bodies is most of the
    /// cost of `--coverage` there.
    pub narrow_instrumentation: bool,
    /// Read coverage from gcov's own output, as gcovr would (`gcov.rs`), rather than
    /// start gcovr for every run; gcovr still reads what this reader does not do the same
    /// way (exclusion markers).
    pub gcov_reader: bool,
}

impl FastBuild {
    /// Everything on: the default.
    pub const ALL: FastBuild = FastBuild {
        precompiled_headers: true,
        fast_linker: true,
        narrow_instrumentation: true,
        gcov_reader: true,
    };
    /// Every candidate compiled whole, instrumented whole and linked by the default linker.
    pub const NONE: FastBuild = FastBuild {
        precompiled_headers: false,
        fast_linker: false,
        narrow_instrumentation: false,
        gcov_reader: false,
    };
}

impl Default for FastBuild {
    fn default() -> Self {
        FastBuild::ALL
    }
}

/// Extensions of C++ translation units.
const CXX_EXTENSIONS: &[&str] = &["cc", "cpp", "cxx", "c++", "C"];

/// Whether `path` names a C++ translation unit (by its extension), as the library's sources
/// are found.
pub fn is_translation_unit(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    CXX_EXTENSIONS.contains(&ext)
}

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
                let path = rel.to_string_lossy();
                if is_translation_unit(&rel) && !tests.is_match(&path) && !excludes.covers(&path) {
                    found.push(rel);
                }
            }
        }
        found.sort();
        found.dedup();
        Ok(found)
    }

    /// The words of an instrumented compile, up to its input: the compiler, the
    /// repository's flags, its include folders and the coverage flags.
    pub(crate) fn compile_words(&self) -> Vec<String> {
        std::iter::once(self.cxx.clone())
            .chain(self.cxxflags.iter().cloned())
            .chain(self.include_flags())
            .chain(COVERAGE_FLAGS.map(String::from))
            .collect()
    }

    /// The shell line that compiles one source of the library, instrumented, into `obj`.
    pub(crate) fn compile_library_object(&self, src: &Path, obj: &str) -> String {
        let src = src.to_string_lossy();
        let words = self.compile_words();
        sh_words(
            words
                .iter()
                .map(String::as_str)
                .chain(["-c", &src, "-o", obj]),
        )
    }

    /// The library's objects: each source and the stem of its files in [`LIB_DIR`] (the
    /// source path with `/` turned into `__`).
    fn library_objects(&self, repo: &Path) -> Result<Vec<(PathBuf, String)>, SandboxError> {
        Ok(self
            .library_sources(repo)?
            .into_iter()
            .map(|s| {
                let stem = s.to_string_lossy().replace('/', "__");
                (s, stem)
            })
            .collect())
    }

    /// The shell line that compiles one object of the library and writes the files it read
    /// (the compiler's dependency list, repository headers only) to `<stem>.d`.
    fn library_job(&self, src: &Path, stem: &str) -> String {
        let obj = format!("{LIB_DIR}/{stem}.o");
        let deps = format!("{LIB_DIR}/{stem}.d");
        format!(
            "{} {}",
            self.compile_library_object(src, &obj),
            sh_words(["-MMD", "-MF", &deps])
        )
    }

    /// What goes into the library's build besides the contents of the files it reads: the
    /// repository's path (object files name their `.gcda` by absolute path), the compiler
    /// (`compiler`: its path and version), the environment, and every object's whole
    /// command line (flags, source, output).
    fn recipe(&self, repo: &Path, compiler: &str, objects: &[(PathBuf, String)]) -> String {
        let mut h = KeyHasher::default();
        h.add(repo.as_os_str().as_bytes());
        h.add(compiler.as_bytes());
        for (k, v) in &self.env {
            h.add(k.as_bytes());
            h.add(v.as_bytes());
        }
        for (src, stem) in objects {
            h.add(self.library_job(src, stem).as_bytes());
        }
        h.finish()
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

/// One object file of the library under test.
#[derive(Debug)]
pub(crate) struct Object {
    /// The source, repository-relative.
    pub(crate) source: PathBuf,
    /// File stem inside [`LIB_DIR`]: the source path with `/` turned into `__`.
    pub(crate) stem: String,
    pub(crate) object: Vec<u8>,
    pub(crate) gcno: Vec<u8>,
    /// The repository's files its compile read (its dependency file's, repository-relative):
    /// a mutated header is compiled again into exactly the objects that read it. `None` for
    /// a build cached before the list was kept, where every object counts as reading it.
    pub(crate) reads: Option<Vec<String>>,
}

impl Object {
    pub(crate) fn path(&self, ext: &str) -> PathBuf {
        Path::new(LIB_DIR).join(format!("{}.{ext}", self.stem))
    }

    /// Whether its compile read `file` (repository-relative), or may have.
    fn reads(&self, file: &str) -> bool {
        self.reads
            .as_ref()
            .is_none_or(|r| r.iter().any(|f| f == file))
    }
}

/// The library under test of one repository, compiled with `--coverage`.
#[derive(Debug)]
pub struct LibraryBuild {
    /// The cache key it was built (or found) under.
    pub key: String,
    pub(crate) objects: Vec<Object>,
    /// Every file the compiler read for it (sources and repository headers), sorted.
    pub(crate) inputs: Vec<PathBuf>,
}

impl LibraryBuild {
    /// The repository-relative sources it was compiled from.
    pub fn sources(&self) -> impl Iterator<Item = &Path> {
        self.objects.iter().map(|o| o.source.as_path())
    }

    /// The sources whose objects a mutant of `header` (repository-relative) compiles again:
    /// those whose compile read it, by the dependency files of the build; every source for a
    /// build cached without them.
    pub fn sources_reading(&self, header: &Path) -> Vec<&Path> {
        self.objects_reading(header)
            .map(|o| o.source.as_path())
            .collect()
    }

    pub(crate) fn objects_reading(&self, header: &Path) -> impl Iterator<Item = &Object> {
        // Lexically, as the dependency files' names were made repository-relative.
        let header = gcov::repo_relative(&header.to_string_lossy(), Path::new("/"));
        self.objects
            .iter()
            .filter(move |o| header.as_deref().is_some_and(|h| o.reads(h)))
    }
}

/// Builds the library under test once per repository and key, in memory for this process
/// and on disk (a folder per key) across processes.
#[derive(Debug)]
pub struct LibraryCache {
    pub(crate) dir: PathBuf,
    /// Per key: the build, or the compiler's diagnostics when the library does not compile.
    pub(crate) builds: OnceMap<String, Result<Arc<LibraryBuild>, String>>,
    /// How many sources a build compiles at once.
    pub(crate) jobs: usize,
    /// Per compiler command: its resolved path and version.
    pub(crate) compilers: std::sync::Mutex<std::collections::HashMap<String, String>>,
    pub(crate) fast: FastBuild,
    /// Precompiled include prefixes of candidates and of mutated library sources, in
    /// `<dir>/pch/`.
    pub(crate) pch: Arc<pch::PchCache>,
    /// Link clover's listener into every test binary and believe a report only when its
    /// record vouches for it (`record.rs`); on unless turned off for comparison.
    pub(crate) report_record: bool,
    /// Per compile line: the listener's object, or why it does not compile.
    listeners: OnceMap<String, Result<Arc<Vec<u8>>, String>>,
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
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            compilers: Default::default(),
            fast: FastBuild::default(),
            pch: Default::default(),
            report_record: true,
            listeners: OnceMap::default(),
        })
    }

    /// Whether test binaries get clover's listener and their reports are checked against
    /// its record (on by default; off runs them as before, for comparison).
    pub fn with_report_record(mut self, on: bool) -> LibraryCache {
        self.report_record = on;
        self
    }

    /// clover's listener compiled for `project` (its compiler, flags and include folders,
    /// without coverage), built once per compile line in a sandboxed run and kept in
    /// `<dir>/listener-<key>.o`. `Ok(Err(_))`: it does not compile with these headers.
    pub(crate) fn listener(
        &self,
        sandbox: &Sandbox,
        project: &CppProject,
        repo: &Path,
        limits: &Limits,
    ) -> Result<Result<Arc<Vec<u8>>, String>, SandboxError> {
        let line = sh_words(
            std::iter::once(project.cxx.as_str())
                .chain(project.cxxflags.iter().map(String::as_str))
                .chain(project.include_flags().iter().map(String::as_str))
                .chain(["-c", LISTENER_SRC, "-o", LISTENER_OBJ]),
        );
        let mut h = KeyHasher::default();
        h.add(record::LISTENER_SOURCE.as_bytes());
        h.add(line.as_bytes());
        h.add(repo.as_os_str().as_bytes());
        h.add(self.compiler_identity(&project.cxx).as_bytes());
        for (k, v) in &project.env {
            h.add(k.as_bytes());
            h.add(v.as_bytes());
        }
        let key = h.finish();
        let kept = self.dir.join(format!("listener-{key}.o"));
        let made = self.listeners.get_or_make(&key, || {
            if let Ok(bytes) = std::fs::read(&kept) {
                return Ok(Ok(Arc::new(bytes)));
            }
            let script = format!("{line} 2> .clover-out/listener.txt || {{ cat .clover-out/listener.txt >&2; exit 1; }}");
            let mut spec = RunSpec::new(repo, ["/bin/sh", "-c", &script]);
            spec.env = project.env.clone();
            spec.files = vec![WriteFile {
                path: LISTENER_SRC.into(),
                contents: record::LISTENER_SOURCE.as_bytes().to_vec(),
            }];
            spec.writable_dirs = vec![BUILD_DIR.into(), OUT_DIR.into()];
            spec.collect = vec![LISTENER_OBJ.into()];
            spec.limits = Limits {
                wall: Duration::from_secs(120).max(limits.wall),
                cpu_secs: 120.max(limits.cpu_secs),
                ..limits.clone()
            };
            let run = sandbox.run(&spec)?;
            Ok(match whole_file(&run, LISTENER_OBJ) {
                Some(bytes) if run.exit.success() => {
                    let tmp = self.dir.join(format!(".listener-{key}.{}.tmp", std::process::id()));
                    // A cache that cannot be written only costs a compile next time.
                    if std::fs::write(&tmp, &bytes).is_ok() {
                        let _ = std::fs::rename(&tmp, &kept);
                    }
                    Ok(Arc::new(bytes))
                }
                _ => Err(first_errors(&run.stderr.text())),
            })
        })?;
        Ok(made.unwrap_or_else(|| Err("an earlier build of the listener could not run".into())))
    }

    /// Builds candidates with these speed-ups only ([`FastBuild::NONE`]: as before them).
    pub fn with_fast_build(mut self, fast: FastBuild) -> LibraryCache {
        self.fast = fast;
        self
    }

    /// How many precompiled headers this cache has compiled (not found on disk) so far.
    pub fn precompiled_header_builds(&self) -> usize {
        self.pch.built()
    }

    /// Compiles up to `jobs` of a library's sources at once (at least one; by default as
    /// many as there are cores).
    pub fn with_jobs(mut self, jobs: usize) -> LibraryCache {
        self.jobs = jobs.max(1);
        self
    }

    /// The compiler `cxx` names: its resolved path and what `-dumpfullversion -dumpmachine`
    /// says, asked once per process. The version is asked on the host, where the sandbox's
    /// `/usr` comes from; it runs no code of the repository.
    pub(crate) fn compiler_identity(&self, cxx: &str) -> String {
        let mut known = self.compilers.lock().unwrap_or_else(|e| e.into_inner());
        known
            .entry(cxx.to_string())
            .or_insert_with(|| {
                let path = which(cxx).and_then(|p| p.canonicalize().ok());
                let version = std::process::Command::new(path.as_deref().unwrap_or(Path::new(cxx)))
                    .args(["-dumpfullversion", "-dumpmachine"])
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default();
                format!(
                    "{}\n{}",
                    path.unwrap_or_else(|| cxx.into()).display(),
                    version.trim()
                )
            })
            .clone()
    }

    /// The files the last build of `recipe` read, as its dependency files listed them.
    fn inputs_of(&self, recipe: &str) -> Option<Vec<PathBuf>> {
        let text = std::fs::read_to_string(self.dir.join(format!("{recipe}.inputs"))).ok()?;
        Some(text.lines().map(PathBuf::from).collect())
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
        let objects = project.library_objects(&repo)?;
        let recipe = project.recipe(&repo, &self.compiler_identity(&project.cxx), &objects);
        // The key needs the files the build reads, which its last build listed; a recipe
        // never built is keyed by itself until its build says what it read.
        let key = match self.inputs_of(&recipe) {
            Some(inputs) => build_key(&recipe, &repo, &inputs),
            None => format!("{recipe}-unbuilt"),
        };
        // A sandbox failure is no verdict on the sources: the key is forgotten and a later
        // call builds again.
        let built = self
            .builds
            .get_or_make(&key, || match self.load(&key) {
                Some(b) => Ok(Ok(Arc::new(b))),
                None => Ok(
                    match self.build(sandbox, project, &repo, objects, &recipe, limits)? {
                        Ok(b) => {
                            // A cache that cannot be written only costs a rebuild next time.
                            let _ = self.store(&b, &recipe);
                            Ok(Arc::new(b))
                        }
                        Err(diag) => Err(diag),
                    },
                ),
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

    /// Compiles the library's objects in one sandboxed run, up to [`LibraryCache::jobs`]
    /// at once: each object's command is a script of its own, and `xargs -P` runs them.
    fn build(
        &self,
        sandbox: &Sandbox,
        project: &CppProject,
        repo: &Path,
        objects: Vec<(PathBuf, String)>,
        recipe: &str,
        limits: &Limits,
    ) -> Result<Result<LibraryBuild, String>, SandboxError> {
        if objects.is_empty() {
            return Ok(Ok(LibraryBuild {
                key: build_key(recipe, repo, &[]),
                objects: Vec::new(),
                inputs: Vec::new(),
            }));
        }
        let job = |i: usize| Path::new(LIB_DIR).join(format!("job-{i}.sh"));
        // A failed compile prints its own diagnostics whole, not interleaved with another's.
        let files = objects
            .iter()
            .enumerate()
            .map(|(i, (src, stem))| {
                let log = format!("{LIB_DIR}/{stem}.log");
                WriteFile {
                    path: job(i),
                    contents: format!(
                        "if ! {} > {q} 2>&1; then cat {q} >&2; exit 1; fi\n",
                        project.library_job(src, stem),
                        q = sh_quote(&log)
                    )
                    .into_bytes(),
                }
            })
            .collect();
        let script = format!(
            "seq 0 {} | xargs -P {} -I{{}} /bin/sh {LIB_DIR}/job-{{}}.sh",
            objects.len() - 1,
            self.jobs.min(objects.len())
        );
        let mut spec = RunSpec::new(repo, ["/bin/sh", "-c", &script]);
        spec.env = project.env.clone();
        spec.files = files;
        spec.writable_dirs = vec![BUILD_DIR.into(), LIB_DIR.into()];
        spec.limits = Limits {
            wall: Duration::from_secs(600).max(limits.wall),
            cpu_secs: 600.max(limits.cpu_secs),
            // The CPU cap of one run would serialize the jobs again.
            cpus: limits.cpus.max(self.jobs.min(objects.len()) as f64),
            ..limits.clone()
        };
        for (_, stem) in &objects {
            for ext in ["o", "gcno", "d"] {
                spec.collect
                    .push(Path::new(LIB_DIR).join(format!("{stem}.{ext}")));
            }
        }
        let out = sandbox.run(&spec)?;
        if !out.exit.success() {
            let why = match out.limit_hit {
                Some(l) => format!("the build hit its {l} limit"),
                None => first_errors(&out.stderr.text()),
            };
            return Ok(Err(why));
        }
        let mut files = out.files.into_iter();
        let mut built = Vec::new();
        let mut inputs = Vec::new();
        for (source, stem) in objects {
            let (Some(o), Some(g), Some(d)) = (files.next(), files.next(), files.next()) else {
                unreachable!("three collected files per object")
            };
            let reads = match d.content.bytes() {
                Some(text) => {
                    let deps = depfile_inputs(&String::from_utf8_lossy(text));
                    let mut reads: Vec<String> = deps
                        .iter()
                        .filter_map(|f| gcov::repo_relative(&f.to_string_lossy(), repo))
                        .collect();
                    reads.sort();
                    reads.dedup();
                    inputs.extend(deps);
                    reads
                }
                None => {
                    return Ok(Err(format!(
                        "the build of {} left no dependency file",
                        source.display()
                    )))
                }
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
                    reads: Some(reads),
                }),
                _ => {
                    return Ok(Err(format!(
                        "the build of {} left no object file and notes",
                        source.display()
                    )))
                }
            }
        }
        inputs.sort();
        inputs.dedup();
        Ok(Ok(LibraryBuild {
            key: build_key(recipe, repo, &inputs),
            objects: built,
            inputs,
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
                reads: std::fs::read_to_string(dir.join(format!("{stem}.reads")))
                    .ok()
                    .map(|t| t.lines().map(String::from).collect()),
            });
        }
        let inputs = std::fs::read_to_string(dir.join("inputs")).ok()?;
        Some(LibraryBuild {
            key: key.to_string(),
            objects,
            inputs: inputs.lines().map(PathBuf::from).collect(),
        })
    }

    /// Writes a build to `<dir>/<key>/` through a temporary folder renamed at the end, so a
    /// reader sees a whole build or none; then the files it read to `<dir>/<recipe>.inputs`,
    /// which keys the next lookup of the recipe.
    fn store(&self, b: &LibraryBuild, recipe: &str) -> std::io::Result<()> {
        let inputs: String = b
            .inputs
            .iter()
            .map(|p| format!("{}\n", p.display()))
            .collect();
        let tmp = self
            .dir
            .join(format!(".{}.{}.tmp", b.key, std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir(&tmp)?;
        let mut index = std::fs::File::create(tmp.join("index"))?;
        for o in &b.objects {
            std::fs::write(tmp.join(format!("{}.o", o.stem)), &o.object)?;
            std::fs::write(tmp.join(format!("{}.gcno", o.stem)), &o.gcno)?;
            if let Some(reads) = &o.reads {
                let list: String = reads.iter().map(|f| format!("{f}\n")).collect();
                std::fs::write(tmp.join(format!("{}.reads", o.stem)), list)?;
            }
            writeln!(index, "{}\t{}", o.stem, o.source.display())?;
        }
        drop(index);
        std::fs::write(tmp.join("inputs"), &inputs)?;
        // Another process may have stored the same key first: its build is as good.
        if let Err(e) = std::fs::rename(&tmp, self.dir.join(&b.key)) {
            let _ = std::fs::remove_dir_all(&tmp);
            if !self.dir.join(&b.key).is_dir() {
                return Err(e);
            }
        }
        let list = self
            .dir
            .join(format!(".{recipe}.{}.inputs", std::process::id()));
        std::fs::write(&list, inputs)?;
        std::fs::rename(&list, self.dir.join(format!("{recipe}.inputs")))
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
    /// The test file was compiled against a precompiled header of its include prefix.
    pub precompiled_header: bool,
    /// Its coverage was read from gcov's output here, not from gcovr's report.
    pub gcov_read: bool,
}

/// A test object as a run compiled it, whether it defines its own `main`, and the CPU time
/// of the run's test binary when that run measured it.
pub(crate) struct TestObject {
    pub bytes: Vec<u8>,
    pub own_main: bool,
    pub binary_cpu: Option<Duration>,
}

/// The test object a run kept, and the view and build it was compiled for.
pub(crate) struct KeptObject {
    pub repo: PathBuf,
    pub lib: Arc<LibraryBuild>,
    pub plan: BuildPlan,
    pub object: TestObject,
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
        Ok(self.run_measured(sandbox, cache, false)?.0)
    }

    /// [`GtestRun::run`], and, when `keep_object`, the test object it compiled (read back
    /// whole) with what a mutant harness needs of the run.
    pub(crate) fn run_measured(
        &self,
        sandbox: &Sandbox,
        cache: &LibraryCache,
        keep_object: bool,
    ) -> Result<(GtestResult, Option<KeptObject>), LibraryError> {
        let (lib, repo) = self.library(sandbox, cache)?;
        let plan = self.plan(sandbox, cache, &repo);
        // The test binary replaces the shell, so the run's exit status is its own.
        // A run that keeps its object notes what the build cost before the binary ran: the
        // binary's own CPU time is then the measure of its mutants' ([`binary_cpu_time`]).
        let before_exec = match keep_object {
            true => format!("times > {TIMES_BEFORE_EXEC}\n"),
            false => String::new(),
        };
        let script = format!(
            "{}\n{before_exec}exec ./{TEST_BINARY} \"$@\"\n",
            self.build_script(&lib, &plan)
        );
        let mut spec = self.build_spec(&repo, &lib, &plan, script);
        spec.argv.extend(run_args(&self.filter));
        spec.collect
            .extend(lib.objects.iter().map(|o| o.path("gcda")));
        spec.collect
            .extend([GTEST_XML, CANDIDATE_GCNO, CANDIDATE_GCDA].map(PathBuf::from));
        if keep_object {
            spec.collect
                .extend([CANDIDATE_OBJ, OWN_MAIN, TIMES_BEFORE_EXEC].map(PathBuf::from));
        }
        let run = sandbox.run(&spec)?;
        let (precompiled, note) = plan.used(&run);
        if let Some(mut failed) = compile_error(&run) {
            failed.precompiled_header = precompiled;
            return Ok((failed, None));
        }
        // The object is read back whole or not kept; a run that compiled none (it ended
        // before) keeps none.
        let object = whole_file(&run, CANDIDATE_OBJ).map(|bytes| TestObject {
            bytes,
            own_main: matches!(run.file(OWN_MAIN), Some(Collected::Read { .. })),
            binary_cpu: binary_cpu_time(&run),
        });
        let notes = whole_file(&run, CANDIDATE_GCNO);
        let mut result = Measure {
            project: self.project,
            test_file: &self.test_file,
            repo: &repo,
            lib: &lib,
            notes: notes.as_deref(),
            limits: &self.limits,
            gcov_reader: cache.fast.gcov_reader,
            recorded: plan.listener.is_some(),
        }
        .result(sandbox, run)?;
        result.precompiled_header = precompiled;
        if result.message.is_none() {
            result.message = note;
        }
        let kept = object.map(|object| KeptObject {
            repo,
            lib,
            plan,
            object,
        });
        Ok((result, kept))
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
        let plan = self.plan(sandbox, cache, &repo);
        let script = self.build_script(&lib, &plan);
        let mut spec = self.build_spec(&repo, &lib, &plan, script);
        spec.collect
            .extend([TEST_BINARY, CANDIDATE_GCNO].map(PathBuf::from));
        let run = sandbox.run(&spec)?;
        let (precompiled, note) = plan.used(&run);
        if let Some(mut failed) = compile_error(&run) {
            failed.precompiled_header = precompiled;
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
                        clover_report::verdict_of_ending("the build", run.exit, run.limit_hit, None)
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
                    precompiled_header: plan.pch.is_some(),
                    gcov_read: false,
                }));
            }
        };
        Ok(Ok(TestBinary {
            project: self.project,
            test_file: self.test_file.clone(),
            repo,
            lib,
            notes: whole_file(&run, CANDIDATE_GCNO),
            binary,
            precompiled_header: precompiled,
            note,
            gcov_reader: cache.fast.gcov_reader,
            recorded: plan.listener.is_some(),
        }))
    }

    pub(crate) fn library(
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

    /// How this candidate is built: what [`FastBuild`] allows for it. Never fails: a
    /// precompiled header that cannot be had is a note, and the candidate compiles without.
    pub(crate) fn plan(&self, sandbox: &Sandbox, cache: &LibraryCache, repo: &Path) -> BuildPlan {
        let fast = cache.fast;
        let p = self.project;
        let mut plan = self.plan_without_pch(cache, repo);
        if cache.report_record {
            match cache.listener(sandbox, p, repo, &self.limits) {
                Ok(Ok(object)) => plan.listener = Some(object),
                Ok(Err(why)) => {
                    plan.note = Some(format!(
                        "its report is not checked: clover's listener does not compile here: {why}"
                    ))
                }
                Err(e) => {
                    plan.note = Some(format!(
                        "its report is not checked: clover's listener could not be built: {e}"
                    ))
                }
            }
        }
        let filter = plan
            .narrow
            .then(|| instrumentation_filter(repo, &self.test_file.path))
            .flatten();
        let prefix = fast
            .precompiled_headers
            .then(|| pch::include_prefix(&self.test_file.contents))
            .flatten();
        let Some(prefix) = prefix else {
            return plan;
        };
        let quote_dir = pch::quote_dir(&self.test_file.path);
        let mut command = p.compile_words();
        command.extend(filter.map(|[only, _]| only));
        command.extend(["-iquote".into(), quote_dir.clone()]);
        let recipe = pch::PchRecipe {
            repo,
            compiler: &cache.compiler_identity(&p.cxx),
            env: &p.env,
            command,
            limits: &self.limits,
        };
        match cache.pch.get(&cache.dir, sandbox, &recipe, &prefix) {
            Ok(None) => {}
            Ok(Some(Ok(pch))) => {
                plan.compile_flags.extend(pch.flags(quote_dir, &p.cxxflags));
                plan.test_file.contents = prefix.blanked;
                plan.pch = Some(pch);
            }
            Ok(Some(Err(why))) => {
                plan.note = Some(format!("compiled without a precompiled header: {why}"))
            }
            Err(e) => {
                plan.note = Some(format!(
                    "compiled without a precompiled header: its build could not run: {e}"
                ))
            }
        }
        plan
    }

    /// The part of [`GtestRun::plan`] that needs no precompiled header: the test file whole,
    /// narrow instrumentation and the fast linker. A run against a mutated header compiles
    /// the test file this way, since the header may be inside the precompiled prefix.
    pub(crate) fn plan_without_pch(&self, cache: &LibraryCache, repo: &Path) -> BuildPlan {
        let fast = cache.fast;
        let mut plan = BuildPlan {
            test_file: self.test_file.clone(),
            pch: None,
            compile_flags: Vec::new(),
            link_flags: Vec::new(),
            narrow: false,
            note: None,
            listener: None,
        };
        let filter = fast
            .narrow_instrumentation
            .then(|| instrumentation_filter(repo, &self.test_file.path))
            .flatten();
        if let Some([only, not]) = &filter {
            plan.compile_flags.extend([only.clone(), not.clone()]);
            plan.narrow = true;
        }
        if fast.fast_linker && which(FAST_LINKER).is_some() {
            plan.link_flags.push(format!("-fuse-ld={FAST_LINKER}"));
        }
        plan
    }

    /// Shell lines that compile and link the candidate into [`TEST_BINARY`]; on failure they
    /// leave the diagnostics in [`COMPILE_LOG`], mark [`COMPILE_FAILED`] and exit 1.
    fn build_script(&self, lib: &LibraryBuild, plan: &BuildPlan) -> String {
        let compile = self.compile_line(plan);
        let objs: Vec<String> = lib
            .objects
            .iter()
            .map(|o| o.path("o").to_string_lossy().into_owned())
            .collect();
        // `gtest_main` brings a `main`: a test file that defines its own is linked without
        // it, one that defines none always with it, whatever the manifest lists.
        let (own, with_gtest_main) = (
            self.link_line(plan, &objs, false),
            self.link_line(plan, &objs, true),
        );
        // An object instrumented only where the repository's files are compiled into it may
        // have no counter at all; it then writes no `.gcda`, and its notes would read as lost
        // counters.
        let no_counters = match plan.narrow {
            true => format!("if ! {HAS_COUNTERS}; then rm -f {CANDIDATE_GCNO}; fi && "),
            false => String::new(),
        };
        format!(
            "if ! {{ {compile} && {LIST_SYMBOLS} && \
             {no_counters}if {DEFINES_MAIN}; then {own}; else {with_gtest_main}; fi; }} \
             > {COMPILE_LOG} 2>&1; then : > {COMPILE_FAILED}; exit 1; fi\n\
             if {DEFINES_MAIN}; then : > {OWN_MAIN}; fi"
        )
    }

    /// The shell line that compiles the test file into [`CANDIDATE_OBJ`].
    pub(crate) fn compile_line(&self, plan: &BuildPlan) -> String {
        let p = self.project;
        let cand = self.test_file.path.to_string_lossy().into_owned();
        let flags = p.include_flags();
        // The test file is instrumented too: code that exists only in headers it
        // instantiates (a header-only template) is compiled nowhere else.
        sh_words(
            std::iter::once(p.cxx.as_str())
                .chain(p.cxxflags.iter().map(String::as_str))
                .chain(flags.iter().map(String::as_str))
                .chain(COVERAGE_FLAGS)
                .chain(plan.compile_flags.iter().map(String::as_str))
                .chain(["-c", &cand, "-o", CANDIDATE_OBJ]),
        )
    }

    /// The shell line that links [`CANDIDATE_OBJ`] and the library's objects `objs` into
    /// [`TEST_BINARY`], with `gtest_main` or without. A link the fast linker fails is done
    /// again by the default one, whose diagnostics are then the log's, as without the fast
    /// linker.
    pub(crate) fn link_line(&self, plan: &BuildPlan, objs: &[String], gtest_main: bool) -> String {
        let p = self.project;
        let flags = p.include_flags();
        let link_with = |fast: bool| {
            let libs: Vec<String> = gtest_main
                .then(|| format!("-l{GTEST_MAIN}"))
                .into_iter()
                .chain(
                    p.link
                        .iter()
                        .filter(|l| *l != GTEST_MAIN)
                        .map(|l| format!("-l{l}")),
                )
                .collect();
            let fast = if fast { &plan.link_flags[..] } else { &[] };
            sh_words(
                std::iter::once(p.cxx.as_str())
                    .chain(p.cxxflags.iter().map(String::as_str))
                    .chain(flags.iter().map(String::as_str))
                    .chain(fast.iter().map(String::as_str))
                    .chain([CANDIDATE_OBJ])
                    .chain(plan.listener.as_ref().map(|_| LISTENER_OBJ))
                    .chain(objs.iter().map(String::as_str))
                    .chain(COVERAGE_FLAGS)
                    .chain(["-o", TEST_BINARY])
                    .chain(libs.iter().map(String::as_str)),
            )
        };
        match plan.link_flags.is_empty() {
            true => link_with(false),
            false => format!(
                "{{ {} > {FAST_LINK_LOG} 2>&1 || {}; }}",
                link_with(true),
                link_with(false)
            ),
        }
    }

    /// The view that builds the candidate: the library's objects and the test file written
    /// in, the compiler's report collected.
    pub(crate) fn build_spec(
        &self,
        repo: &Path,
        lib: &LibraryBuild,
        plan: &BuildPlan,
        script: String,
    ) -> RunSpec {
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
        spec.files.push(plan.test_file.clone());
        if let Some(object) = &plan.listener {
            spec.files.push(WriteFile {
                path: LISTENER_OBJ.into(),
                contents: object.to_vec(),
            });
            spec.report_channel = true;
        }
        // The precompiled header is read where it is kept, read-only.
        spec.binds.extend(plan.pch.iter().map(|p| p.dir.clone()));
        spec.writable_dirs = vec![BUILD_DIR.into(), LIB_DIR.into(), OUT_DIR.into()];
        spec.collect = vec![COMPILE_LOG.into(), COMPILE_FAILED.into()];
        spec.limits = self.limits.clone();
        spec
    }
}

/// How one candidate is compiled and linked ([`GtestRun::plan`]).
pub(crate) struct BuildPlan {
    /// The test file as the build view gets it: its include prefix blanked when a
    /// precompiled header stands for it.
    pub(crate) test_file: WriteFile,
    pub(crate) pch: Option<Arc<pch::Pch>>,
    /// Words added to the candidate's compile line, before `-c`.
    pub(crate) compile_flags: Vec<String>,
    /// Words of the fast linker's link line; none links with the default only.
    pub(crate) link_flags: Vec<String>,
    /// The candidate is instrumented only where the repository's files are compiled into it.
    pub(crate) narrow: bool,
    /// Why the candidate is compiled without a precompiled header though it has a prefix.
    pub(crate) note: Option<String>,
    /// clover's listener object, linked in ([`LibraryCache::with_report_record`]); `None`
    /// when the check is off or the listener does not compile with the project's headers.
    pub(crate) listener: Option<Arc<Vec<u8>>>,
}

impl BuildPlan {
    /// Whether the build used the precompiled header, and else why not: GCC says when it
    /// found a `.gch` it would not use (`-Winvalid-pch`) and read the header as text.
    fn used(&self, run: &RunOutput) -> (bool, Option<String>) {
        if self.pch.is_none() {
            return (false, self.note.clone());
        }
        let log = run
            .file(COMPILE_LOG)
            .and_then(Collected::bytes)
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        match log.lines().find(|l| l.contains("[-Winvalid-pch]")) {
            Some(why) => (
                false,
                Some(format!(
                    "compiled without a precompiled header: the compiler rejected it: {}",
                    why.trim()
                )),
            ),
            None => (true, None),
        }
    }
}

/// The flags that instrument only the repository's files in a candidate's object: names
/// relative to the repository (as `-I` finds them) or absolute below it, not the test file.
/// Coverage keeps only files below the source folders that are not the test file, so what
/// it reads is instrumented as before. `None` where a path cannot be written in GCC's
/// `;`-separated list of regular expressions.
fn instrumentation_filter(repo: &Path, test: &Path) -> Option<[String; 2]> {
    let (repo, test) = (repo.to_str()?, test.to_str()?);
    if repo.contains(';') || test.contains(';') {
        return None;
    }
    Some([
        format!("-fprofile-filter-files=^[^/];^{}/", ere_escape(repo)),
        format!("-fprofile-exclude-files=^{}$", ere_escape(test)),
    ])
}

/// `s` as a POSIX extended regular expression that matches it literally.
fn ere_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if r".[]()*+?{}|^$\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The test binary's arguments: its XML report, and the filter if there is one.
pub(crate) fn run_args(filter: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![format!("--gtest_output=xml:{GTEST_XML}").into()];
    if !filter.is_empty() {
        args.push(format!("--gtest_filter={}", filter.join(":")).into());
    }
    args
}

/// The `compile_error` result of a run whose build failed (and not for want of time).
pub(crate) fn compile_error(run: &RunOutput) -> Option<GtestResult> {
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
        precompiled_header: false,
        gcov_read: false,
    })
}

/// A test file compiled and linked once ([`GtestRun::build`]). Every [`TestBinary::run`]
/// starts from a fresh view of the repository, so `.gcda` counters start at zero and no run
/// sees another's files, as with a build per run.
#[derive(Debug)]
pub struct TestBinary<'a> {
    project: &'a CppProject,
    /// The test file: gcov reads it beside its notes.
    test_file: WriteFile,
    repo: PathBuf,
    lib: Arc<LibraryBuild>,
    /// The test file's coverage notes (`.gcno`).
    notes: Option<Vec<u8>>,
    binary: Vec<u8>,
    /// How it was built: against a precompiled header, or why not.
    precompiled_header: bool,
    note: Option<String>,
    gcov_reader: bool,
    /// It holds clover's listener (`record.rs`).
    recorded: bool,
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
        spec.collect = vec![GTEST_XML.into(), CANDIDATE_GCDA.into()];
        spec.collect
            .extend(self.lib.objects.iter().map(|o| o.path("gcda")));
        spec.report_channel = self.recorded;
        spec.limits = limits.clone();
        let run = sandbox.run(&spec)?;
        let mut result = Measure {
            project: self.project,
            test_file: &self.test_file,
            repo: &self.repo,
            lib: &self.lib,
            notes: self.notes.as_deref(),
            limits,
            gcov_reader: self.gcov_reader,
            recorded: self.recorded,
        }
        .result(sandbox, run)?;
        result.precompiled_header = self.precompiled_header;
        if result.message.is_none() {
            result.message = self.note.clone();
        }
        Ok(result)
    }
}

/// Turns a finished run of a test binary into its result: the report, the verdict, and the
/// coverage of its counters.
struct Measure<'a> {
    project: &'a CppProject,
    /// The test file. Its own lines are not the library's; gcov needs its text all the same
    /// (a candidate is not in the repository) to read the headers compiled into it.
    test_file: &'a WriteFile,
    repo: &'a Path,
    lib: &'a LibraryBuild,
    /// The test file's coverage notes, when its build left them.
    notes: Option<&'a [u8]>,
    limits: &'a Limits,
    /// Read gcov's output here rather than run gcovr ([`FastBuild::gcov_reader`]).
    gcov_reader: bool,
    /// The binary holds clover's listener: its report is believed only as its record says.
    recorded: bool,
}

/// A result of `run` with nothing measured: no tests, no lines.
pub(crate) fn unmeasured(outcome: Outcome, message: Option<String>, run: RunOutput) -> GtestResult {
    GtestResult {
        outcome,
        tests: Vec::new(),
        coverage: Vec::new(),
        executable: Vec::new(),
        message,
        coverage_problem: None,
        run,
        precompiled_header: false,
        gcov_read: false,
    }
}

/// The CPU time of the test binary a run's shell turned into (`exec`): the run's whole CPU
/// time less what the shell and the processes it waited for had spent before, as its `times`
/// wrote to [`TIMES_BEFORE_EXEC`]. `None` when the run did not get that far, or the binary
/// was stopped by a signal or a limit (its time then measures nothing of a passing run).
pub(crate) fn binary_cpu_time(run: &RunOutput) -> Option<Duration> {
    if !run.exit.success() || run.limit_hit.is_some() {
        return None;
    }
    let times = String::from_utf8(whole_file(run, TIMES_BEFORE_EXEC)?).ok()?;
    let before = parse_times(&times)?;
    Some(run.cpu_time.saturating_sub(before))
}

/// The sum of the four times a POSIX shell's `times` prints (`0m0.010000s 0m0.004000s`, the
/// shell's user and system time, then its children's); `None` for anything else.
fn parse_times(text: &str) -> Option<Duration> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() != 4 {
        return None;
    }
    let mut total = Duration::ZERO;
    for w in words {
        let (min, sec) = w.strip_suffix('s')?.split_once('m')?;
        let secs = min.parse::<u64>().ok()? as f64 * 60.0 + sec.parse::<f64>().ok()?;
        if !secs.is_finite() || secs < 0.0 {
            return None;
        }
        total += Duration::from_secs_f64(secs);
    }
    Some(total)
}

/// A collected file read whole, or `None`.
fn whole_file(run: &RunOutput, path: &str) -> Option<Vec<u8>> {
    match run.file(path) {
        Some(Collected::Read {
            bytes,
            truncated: false,
        }) => Some(bytes.clone()),
        _ => None,
    }
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
        // A report its record does not vouch for is forged: nothing of it is measured.
        if let Some(why) = record::forged(self.recorded, &run, outcome, tests.as_deref()) {
            return Ok(unmeasured(Outcome::Forged, Some(why), run));
        }
        // Every instrumented object linked into the binary (the library's, and the test
        // file's) writes its counters when the binary exits; a run that ended by itself
        // without them lost its coverage, and says so.
        let instrumented: Vec<(PathBuf, &str)> = self
            .lib
            .objects
            .iter()
            .map(|o| (o.path("gcda"), o.stem.as_str()))
            .chain(
                self.notes
                    .map(|_| (PathBuf::from(CANDIDATE_GCDA), "the test file")),
            )
            .collect();
        let mut gcda = Vec::new();
        let mut lost = Vec::new();
        for (path, name) in &instrumented {
            match run.file(path) {
                Some(Collected::Read {
                    bytes,
                    truncated: false,
                }) => gcda.push((path.clone(), bytes.clone())),
                Some(Collected::Read { .. }) => lost.push(format!("{name} (over the cap)")),
                Some(Collected::Refused(why)) => lost.push(format!("{name} (refused: {why})")),
                _ => lost.push(name.to_string()),
            }
        }
        let ended_by_itself = run.limit_hit.is_none() && run.exit.code().is_some();
        // libgcov says on stderr why it could not write a file.
        let mut coverage_problem = (ended_by_itself && !lost.is_empty()).then(|| {
            format!(
                "no counters (.gcda) from {} of {} instrumented objects: {}; the binary's \
                 stderr ends: {:?}",
                lost.len(),
                instrumented.len(),
                lost.join(", "),
                run.stderr.tail(600)
            )
        });
        let mut gcov_read = false;
        let lines = if gcda.is_empty() {
            Vec::new()
        } else {
            match self.coverage(sandbox, gcda)? {
                Ok((lines, by_gcov)) => {
                    gcov_read = by_gcov;
                    lines
                }
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
            precompiled_header: false,
            gcov_read,
        })
    }

    /// The lines of the library's files that one run's counters cover, read in a view of
    /// their own by gcov (`true`) or gcovr. The inner `Err` says why there are none.
    fn coverage(
        &self,
        sandbox: &Sandbox,
        gcda: Vec<(PathBuf, Vec<u8>)>,
    ) -> Result<Result<(Vec<FileLines>, bool), String>, SandboxError> {
        let read = match self.gcov_reader {
            true => self.gcov(sandbox, &gcda)?,
            false => None,
        };
        let by_gcov = read.is_some();
        let mut cov = match read {
            Some(cov) => cov,
            None => match self.gcovr(sandbox, gcda)? {
                Ok(cov) => cov,
                Err(why) => return Ok(Err(why)),
            },
        };
        let dirs: Vec<&Path> = self
            .project
            .source_dirs
            .iter()
            .map(PathBuf::as_path)
            .collect();
        // The library's files, wherever they were compiled (a header instantiated by the
        // test counts); not the test file, other tests, GoogleTest's or the system's headers.
        let tests = clover_manifest::PathGlobs::new(&self.project.test_globs).ok();
        cov.retain(|f| {
            let path = Path::new(&f.path);
            path != self.test_file.path
                && !tests.as_ref().is_some_and(|t| t.is_match(&f.path))
                && path.is_relative()
                && !f.path.starts_with("..")
                && dirs
                    .iter()
                    .any(|d| *d == Path::new(".") || path.starts_with(d))
        });
        Ok(Ok((cov, by_gcov)))
    }

    /// The view that reads the counters: every object's notes, the counters the run left,
    /// and the test file beside its notes.
    fn coverage_view(&self, argv: Vec<OsString>, gcda: Vec<(PathBuf, Vec<u8>)>) -> RunSpec {
        let mut spec = RunSpec::new(self.repo, argv);
        spec.files = self
            .lib
            .objects
            .iter()
            .map(|o| WriteFile {
                path: o.path("gcno"),
                contents: o.gcno.clone(),
            })
            .chain(self.notes.map(|n| WriteFile {
                path: CANDIDATE_GCNO.into(),
                contents: n.to_vec(),
            }))
            .chain(self.notes.map(|_| self.test_file.clone()))
            .chain(
                gcda.into_iter()
                    .map(|(path, contents)| WriteFile { path, contents }),
            )
            .collect();
        spec.writable_dirs = vec![BUILD_DIR.into(), LIB_DIR.into(), OUT_DIR.into()];
        spec.limits = Limits {
            wall: Duration::from_secs(120),
            cpu_secs: 120,
            ..self.limits.clone()
        };
        spec
    }

    /// gcov run on each object (whose counters the run left or not: gcov then counts zero,
    /// as gcovr does with notes alone), its output read by [`gcov::read_gcov`]. `None` when
    /// gcovr is to read them instead: gcov failed, or its output holds what the reader does
    /// not read as gcovr does.
    fn gcov(
        &self,
        sandbox: &Sandbox,
        gcda: &[(PathBuf, Vec<u8>)],
    ) -> Result<Option<Vec<FileLines>>, SandboxError> {
        let objects: Vec<PathBuf> = self
            .lib
            .objects
            .iter()
            .map(|o| o.path("gcda"))
            .chain(self.notes.map(|_| PathBuf::from(CANDIDATE_GCDA)))
            .collect();
        let output = |i: usize| format!("{OUT_DIR}/gcov-{i}.txt");
        let script: String = objects
            .iter()
            .enumerate()
            .map(|(i, o)| {
                format!(
                    "gcov --stdout {} > {} 2>/dev/null\n",
                    sh_quote(&o.to_string_lossy()),
                    output(i)
                )
            })
            .collect();
        let mut spec = self.coverage_view(
            ["/bin/sh", "-c", script.as_str()]
                .map(OsString::from)
                .to_vec(),
            gcda.to_vec(),
        );
        spec.collect = (0..objects.len()).map(|i| output(i).into()).collect();
        let out = sandbox.run(&spec)?;
        let mut texts = Vec::new();
        for i in 0..objects.len() {
            match out.file(output(i)) {
                Some(Collected::Read {
                    bytes,
                    truncated: false,
                }) if out.exit.success() => texts.push(String::from_utf8_lossy(bytes)),
                _ => return Ok(None),
            }
        }
        let texts: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
        Ok(gcov::read_gcov(&texts, self.repo).ok())
    }

    /// gcovr over the counters, its Cobertura report read back. The inner `Err` says why
    /// gcovr gave no lines.
    fn gcovr(
        &self,
        sandbox: &Sandbox,
        gcda: Vec<(PathBuf, Vec<u8>)>,
    ) -> Result<Result<Vec<FileLines>, String>, SandboxError> {
        let repo = self.repo;
        let mut spec = self.coverage_view(
            vec![
                OsString::from("gcovr"),
                "--root".into(),
                repo.into(),
                "--cobertura".into(),
                COVERAGE_XML.into(),
                BUILD_DIR.into(),
            ],
            gcda,
        );
        spec.collect = vec![COVERAGE_XML.into()];
        let out = sandbox.run(&spec)?;
        let Some(bytes) = out.file(COVERAGE_XML).and_then(Collected::bytes) else {
            let ended = match (out.limit_hit, out.exit) {
                (Some(l), _) => format!("hit its {l} limit"),
                (None, ExitStatus::Code(c)) => format!("exited with {c}"),
                (None, ExitStatus::Signal(s)) => format!("was killed by signal {s}"),
            };
            return Ok(Err(format!(
                "gcovr wrote no coverage report: it {ended}: {}",
                out.stderr.tail(1000).trim()
            )));
        };
        Ok(match parse_cobertura_lines(bytes, repo) {
            Ok(cov) => Ok(cov),
            Err(e) => Err(format!("gcovr's coverage report is unreadable: {e}")),
        })
    }
}

/// The verdict of a GoogleTest binary's run. A crash (signal, or a non-zero exit with no
/// report: `abort()` in a test writes no XML) is `killed`/`error`, never "0 tests, passed".
pub fn judge(
    exit: ExitStatus,
    limit: Option<LimitHit>,
    tests: Option<&[TestCase]>,
) -> (Outcome, Option<String>) {
    let (code, tests) =
        match clover_report::verdict_of_ending("the test binary", exit, limit, tests) {
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
    fn the_shell_s_times_are_summed() {
        let t = parse_times("0m0.010000s 0m0.004000s\n1m2.500000s 0m0.250000s\n");
        assert_eq!(t, Some(Duration::from_micros(62_764_000)));
        for bad in [
            "",
            "0m0.01s 0m0.00s",
            "0m0.01s 0m0.00s x 0m1s",
            "0m-1s 0s 0s 0s",
        ] {
            assert_eq!(parse_times(bad), None, "{bad}");
        }
    }

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
            inputs: Vec::new(),
        };
        let plan = BuildPlan {
            test_file: run.test_file.clone(),
            pch: None,
            compile_flags: Vec::new(),
            link_flags: Vec::new(),
            narrow: false,
            note: None,
            listener: None,
        };
        let script = run.build_script(&lib, &plan);
        assert!(
            script.contains("'--coverage' '-fprofile-update=atomic' '-o'"),
            "{script}"
        );
        // The object's symbols are listed once, whatever the build asks of them.
        let mut plan = plan;
        for narrow in [false, true] {
            plan.narrow = narrow;
            let script = run.build_script(&lib, &plan);
            assert_eq!(script.matches("readelf ").count(), 1, "{script}");
            assert!(script.contains("__gcov0") == narrow, "{script}");
        }
    }

    /// The listing of a real object's symbols tells a `main` it defines (global or weak) from
    /// one it only calls, and an object with coverage counters from one without.
    #[test]
    fn the_symbol_listing_tells_a_defined_main_and_counters() {
        if clover_testkit::require("g++ and readelf", which("g++").and(which("readelf"))).is_none()
        {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".clover-build")).unwrap();
        for (text, coverage, main, counters) in [
            ("int main() { return 0; }", false, true, false),
            (
                "__attribute__((weak)) int main() { return 0; }",
                false,
                true,
                false,
            ),
            (
                "int main(); int f() { return main(); }",
                false,
                false,
                false,
            ),
            ("int f(int x) { return x ? 1 : 2; }", true, false, true),
            (
                "int f(int x) { return x ? 1 : 2; }\nint main() { return f(0); }",
                true,
                true,
                true,
            ),
        ] {
            std::fs::write(dir.path().join("t.cc"), text).unwrap();
            let cover = if coverage { "--coverage" } else { "" };
            let script = format!(
                "g++ {cover} -c t.cc -o {CANDIDATE_OBJ} && {LIST_SYMBOLS} && \
                 if {DEFINES_MAIN}; then echo main; fi; if {HAS_COUNTERS}; then echo counters; fi"
            );
            let out = std::process::Command::new("/bin/sh")
                .args(["-c", &script])
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{text}: {out:?}");
            let said = String::from_utf8_lossy(&out.stdout);
            assert_eq!(said.contains("main"), main, "{text}: {said}");
            assert_eq!(said.contains("counters"), counters, "{text}: {said}");
        }
    }

    /// The key is the recipe (compiler, every command line, so every flag and object) and the
    /// contents of the files the compiler read; nothing else under the folders counts.
    #[test]
    fn the_cache_key_is_what_goes_into_the_build() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        for f in ["src/a.cc", "src/a.h", "src/tool.cc"] {
            let p = repo.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, f).unwrap();
        }
        let project = CppProject {
            repo: repo.into(),
            cxx: "g++".into(),
            cxxflags: vec!["-O0".into()],
            include_dirs: vec![".".into()],
            source_dirs: vec!["src".into()],
            test_globs: vec![],
            excludes: vec![],
            link: vec![],
            env: vec![],
        };
        let recipe = |p: &CppProject, compiler: &str| {
            p.recipe(repo, compiler, &p.library_objects(repo).unwrap())
        };
        let inputs = [PathBuf::from("src/a.cc"), "src/a.h".into()];
        let key = |p: &CppProject| build_key(&recipe(p, "g++ 12"), repo, &inputs);
        let k1 = key(&project);
        std::fs::write(repo.join("src/stray.tmp"), "x").unwrap();
        std::fs::write(repo.join("notes.h"), "x").unwrap();
        assert_eq!(k1, key(&project), "a file no compile reads is no change");
        std::fs::write(repo.join("src/a.h"), "#define X 1\n").unwrap();
        let k2 = key(&project);
        assert_ne!(k1, k2, "an included header's change is a new key");
        let excluded = CppProject {
            excludes: vec!["tool.cc".into()],
            ..project.clone()
        };
        assert_ne!(k2, key(&excluded), "an exclude changes the objects");
        let flagged = CppProject {
            cxxflags: vec!["-O1".into()],
            ..project.clone()
        };
        assert_ne!(k2, key(&flagged), "a flag is part of the recipe");
        assert_ne!(
            recipe(&project, "g++ 12"),
            recipe(&project, "g++ 13"),
            "so is the compiler"
        );
    }

    #[test]
    fn dependency_files_list_every_input() {
        let d = "src__a.cc.o: src/a.cc src/a.h \\\n  src/sub\\ dir/b.h\n\nsrc/a.h:\n";
        assert_eq!(
            depfile_inputs(d),
            vec![
                PathBuf::from("src/a.cc"),
                "src/a.h".into(),
                "src/sub dir/b.h".into()
            ]
        );
    }
}
