//! Runs of one test file against mutants of the library under test, for the mutation score.
//!
//! A mutant of a translation unit changes that one object, so only it is compiled again:
//! [`GtestRun::mutant_harness`] compiles the test file once into an object (as a candidate is
//! compiled: precompiled header, narrow instrumentation) and fixes the link line — or
//! [`GtestRun::run_keeping_object`] keeps the object its own run compiled, so a passing
//! candidate is compiled once for its run and its mutants; then each [`MutantHarness::run`]
//! writes the cached library objects but the mutated source's, the test object and the
//! mutated source into a fresh view, compiles that source with the library's own command
//! line into the object's place, links, and `exec`s the binary with `--gtest_fail_fast`: the
//! first failing test ends the run, as `-x` does for pytest. The cached objects on the host
//! are only read.
//!
//! A mutant of a header (a header-only class) changes every object that includes it: the
//! test file's, compiled again whole (without the precompiled header, which may hold the
//! header's original text), and each library object whose compile read the header. Those
//! are found from the dependency files the library's build writes anyway (`-MMD`, kept per
//! object in the cache), not by compiling every translation unit again: a header included by
//! one source of a large library then costs one compile, not all of them, and the list is the
//! compiler's own, so it is exact. A build cached before the lists were kept has none, and
//! there every library object is compiled again.
//!
//! A mutant that does not compile or link is outcome `compile_error` (its diagnostics the
//! message), never a test failure: the caller counts it neither killed nor survived. No
//! coverage is read: a mutant run asks for a verdict only.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clover_protocol::Outcome;

use clover_report::{parse_junit, verdict_of_ending};
use clover_sandbox::{Collected, Limits, RunSpec, Sandbox, SandboxError, WriteFile};

use crate::compile::{first_errors, sh_quote, sh_words};
use crate::gcov::repo_relative;
use crate::pch::{self, PchCache, PchRecipe};
use crate::record;
use crate::run::{
    binary_cpu_time, compile_error, is_translation_unit, run_args, unmeasured, BuildPlan,
    CppProject, GtestResult, GtestRun, LibraryBuild, LibraryCache, LibraryError, TestObject,
    BUILD_DIR, CANDIDATE_OBJ, COMPILE_FAILED, COMPILE_LOG, DEFINES_MAIN, GTEST_XML, LIB_DIR,
    LISTENER_OBJ, LIST_SYMBOLS, OUT_DIR, OWN_MAIN, TEST_BINARY, TIMES_BEFORE_EXEC,
};

/// The mutant's compile and link diagnostics, and the mark of their failure.
const MUTANT_LOG: &str = ".clover-out/mutant-build.txt";
const MUTANT_FAILED: &str = ".clover-out/mutant-build.failed";
/// Stops the binary at its first failing test (GoogleTest 1.10 and later).
const FAIL_FAST: &str = "--gtest_fail_fast";

/// One library source replaced by other text for a run.
#[derive(Debug, Clone, Copy)]
pub struct Replacement<'a> {
    /// Repository-relative: one of the library's translation units, or a header (any file
    /// that is not a translation unit) the test file or library sources may include.
    pub source: &'a Path,
    pub text: &'a [u8],
}

/// A test file compiled once, to be linked against mutants of the library
/// ([`GtestRun::mutant_harness`]).
#[derive(Debug)]
pub struct MutantHarness {
    project: CppProject,
    repo: PathBuf,
    lib: Arc<LibraryBuild>,
    test_object: Vec<u8>,
    /// The line that links the test object and every library object into the binary.
    link: String,
    /// GoogleTest filters of every run; none runs every test.
    filter: Vec<String>,
    /// The test file whole and the line that compiles it into the test object without the
    /// precompiled header: a run against a mutated header compiles it again.
    test_file: WriteFile,
    test_compile: String,
    /// The CPU time of the test binary's run on the original code (the candidate's own run,
    /// or [`MutantHarness::control`]), when it was measured: a mutant's binary may spend
    /// [`mutant_cpu_secs`] of it.
    control_cpu: Option<Duration>,
    /// Where a mutated source's include prefix is precompiled, when the cache's builds may
    /// use precompiled headers.
    pch: Option<SourcePch>,
    /// clover's listener, linked into every mutant's binary as into the candidate's.
    listener: Option<Arc<Vec<u8>>>,
}

/// What a mutated translation unit's precompiled include prefix needs: the cache's headers,
/// its folder and the compiler's identity (part of every header's key).
#[derive(Debug)]
struct SourcePch {
    cache: Arc<PchCache>,
    dir: PathBuf,
    compiler: String,
}

impl GtestRun<'_> {
    /// [`GtestRun::run`], and a [`MutantHarness`] of the test object the run compiled, for
    /// runs against mutants without compiling the test file again (`self.filter` is the
    /// harness's too). The harness is `None` when the run compiled no object, or one larger
    /// than a run collects ([`RunSpec::collect_max_bytes`]): the caller then asks
    /// [`GtestRun::mutant_harness`] for one.
    pub fn run_keeping_object(
        &self,
        sandbox: &Sandbox,
        cache: &LibraryCache,
    ) -> Result<(GtestResult, Option<MutantHarness>), LibraryError> {
        let (result, kept) = self.run_measured(sandbox, cache, true)?;
        let harness = kept.map(|k| self.harness_of(cache, k.repo, k.lib, &k.plan, k.object));
        Ok((result, harness))
    }

    /// Compiles the test file into an object for runs against mutants of the library
    /// ([`MutantHarness::run`]). `Ok(Err(_))` is a test file that does not compile (outcome
    /// `compile_error`) or a build that ended without an object. The runs take
    /// `self.filter`.
    pub fn mutant_harness(
        &self,
        sandbox: &Sandbox,
        cache: &LibraryCache,
    ) -> Result<Result<MutantHarness, GtestResult>, LibraryError> {
        let (lib, repo) = self.library(sandbox, cache)?;
        let plan = self.plan(sandbox, cache, &repo);
        let script = format!(
            "if ! {} > {COMPILE_LOG} 2>&1; then : > {COMPILE_FAILED}; exit 1; fi\n\
             {LIST_SYMBOLS}\n\
             if {DEFINES_MAIN}; then : > {OWN_MAIN}; fi\n",
            self.compile_line(&plan)
        );
        let mut spec = self.build_spec(&repo, &lib, &plan, script);
        // Compiling the test file reads none of the library's objects.
        spec.files = vec![plan.test_file.clone()];
        spec.collect
            .extend([CANDIDATE_OBJ, OWN_MAIN].map(PathBuf::from));
        let run = sandbox.run(&spec)?;
        if let Some(failed) = compile_error(&run) {
            return Ok(Err(failed));
        }
        let test_object = match run.file(CANDIDATE_OBJ) {
            Some(Collected::Read {
                bytes,
                truncated: false,
            }) if run.exit.success() => bytes.clone(),
            _ => {
                let message =
                    verdict_of_ending("the test file's compile", run.exit, run.limit_hit, None)
                        .err()
                        .and_then(|(_, m)| m)
                        .unwrap_or_else(|| {
                            format!(
                                "the test file's compile ended ({:?}) without a whole object",
                                run.exit
                            )
                        });
                return Ok(Err(unmeasured(Outcome::Error, Some(message), run)));
            }
        };
        let object = TestObject {
            bytes: test_object,
            own_main: matches!(run.file(OWN_MAIN), Some(Collected::Read { .. })),
            binary_cpu: None,
        };
        Ok(Ok(self.harness_of(cache, repo, lib, &plan, object)))
    }

    /// The harness of a test object compiled by `plan`, its link line fixed.
    pub(super) fn harness_of(
        &self,
        cache: &LibraryCache,
        repo: PathBuf,
        lib: Arc<LibraryBuild>,
        plan: &BuildPlan,
        object: TestObject,
    ) -> MutantHarness {
        let objs: Vec<String> = lib
            .objects
            .iter()
            .map(|o| o.path("o").to_string_lossy().into_owned())
            .collect();
        let whole = self.plan_without_pch(cache, &repo);
        MutantHarness {
            link: self.link_line(plan, &objs, !object.own_main),
            project: self.project.clone(),
            repo,
            lib,
            test_object: object.bytes,
            filter: self.filter.clone(),
            test_file: self.test_file.clone(),
            test_compile: self.compile_line(&whole),
            control_cpu: object.binary_cpu,
            listener: plan.listener.clone(),
            pch: cache.fast.precompiled_headers.then(|| SourcePch {
                cache: cache.pch.clone(),
                dir: cache.dir.clone(),
                compiler: cache.compiler_identity(&self.project.cxx),
            }),
        }
    }
}

impl MutantHarness {
    /// The control run: the test object linked against the library as built, run until its
    /// first failing test. Its binary's CPU time becomes the measure of the mutants' runs
    /// ([`mutant_cpu_secs`]) when it passed.
    pub fn control(
        &mut self,
        sandbox: &Sandbox,
        limits: &Limits,
    ) -> Result<GtestResult, LibraryError> {
        let (result, cpu) = self.run_measuring(sandbox, None, limits)?;
        if result.outcome == Outcome::Passed {
            self.control_cpu = cpu;
        }
        Ok(result)
    }

    /// The CPU time of the test binary's run on the original code, when it was measured.
    pub fn control_cpu(&self) -> Option<Duration> {
        self.control_cpu
    }

    /// Links the test object against the library with `replaced`'s source compiled from its
    /// text instead of the cached object (against the library as built for `None`, a
    /// control run), in a fresh view, and runs the binary until its first failing test.
    /// A replacement that does not compile or link is outcome `compile_error`; `Err` is a
    /// run that could not be carried out, or a source that is not the library's.
    ///
    /// A mutant's binary (its build aside) may spend [`mutant_cpu_secs`] of the control run's
    /// CPU time when that was measured: a mutant that loops forever is stopped at that, not at
    /// the wall clock of `limits`, whatever else the machine runs.
    pub fn run(
        &self,
        sandbox: &Sandbox,
        replaced: Option<Replacement<'_>>,
        limits: &Limits,
    ) -> Result<GtestResult, LibraryError> {
        Ok(self.run_measuring(sandbox, replaced, limits)?.0)
    }

    /// How a mutated translation unit is compiled into `obj`: the text the view gets, the
    /// shell line, and the folder of the precompiled header to bind. The source's leading
    /// `#include` lines (no mutant is ever in them) are precompiled once per repository,
    /// compiler, flags and prefix, as a candidate's are (`pch`): the source is then compiled
    /// with those lines blanked and the header included first, the same token stream, so
    /// each mutant parses only its own file's code. Without a header (none yet, none
    /// wanted, or none that builds) the text is compiled whole with the library's own line.
    fn compile_source(
        &self,
        sandbox: &Sandbox,
        r: Replacement<'_>,
        obj: &str,
        limits: &Limits,
    ) -> (Vec<u8>, String, Option<PathBuf>) {
        let whole = || {
            (
                r.text.to_vec(),
                self.project.compile_library_object(r.source, obj),
                None,
            )
        };
        let (Some(cached), Some(prefix)) = (&self.pch, pch::leading_includes(r.text)) else {
            return whole();
        };
        let quote_dir = pch::quote_dir(r.source);
        let words = self.project.compile_words();
        let recipe = PchRecipe {
            repo: &self.repo,
            compiler: &cached.compiler,
            env: &self.project.env,
            command: words
                .iter()
                .cloned()
                .chain(["-iquote".into(), quote_dir.clone()])
                .collect(),
            limits,
        };
        let Ok(Some(Ok(header))) = cached.cache.get(&cached.dir, sandbox, &recipe, &prefix) else {
            return whole();
        };
        let src = r.source.to_string_lossy();
        let line = sh_words(
            words
                .iter()
                .chain(&header.flags(quote_dir, &self.project.cxxflags))
                .map(String::as_str)
                .chain(["-c", &src, "-o", obj]),
        );
        (prefix.blanked, line, Some(header.dir.clone()))
    }

    /// [`MutantHarness::run`], and the CPU time of the run's test binary when a control run
    /// (`replaced` is `None`) measured it.
    fn run_measuring(
        &self,
        sandbox: &Sandbox,
        replaced: Option<Replacement<'_>>,
        limits: &Limits,
    ) -> Result<(GtestResult, Option<Duration>), LibraryError> {
        let control = replaced.is_none();
        let mut files = Vec::new();
        // Shell lines run before the link: the objects the replacement changes, compiled.
        let mut compile = Vec::new();
        let mut recompiled: Vec<&str> = Vec::new();
        let mut test_recompiled = false;
        let mut binds = Vec::new();
        if let Some(r) = replaced {
            if is_translation_unit(r.source) {
                let Some(object) = self.lib.objects.iter().find(|o| o.source == r.source) else {
                    return Err(SandboxError::InvalidSpec(format!(
                        "{} is not a translation unit of the library under test; its sources are {}",
                        r.source.display(),
                        self.lib
                            .sources()
                            .map(|s| s.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                    .into());
                };
                let obj = object.path("o");
                let (text, line, pch) =
                    self.compile_source(sandbox, r, &obj.to_string_lossy(), limits);
                files.push(WriteFile {
                    path: r.source.into(),
                    contents: text,
                });
                compile.push(line);
                binds.extend(pch);
                recompiled.push(&object.stem);
            } else {
                files.push(WriteFile {
                    path: r.source.into(),
                    contents: r.text.to_vec(),
                });
                if repo_relative(&r.source.to_string_lossy(), &self.repo).is_none() {
                    return Err(SandboxError::InvalidSpec(format!(
                        "{} is not a file of the repository {}",
                        r.source.display(),
                        self.repo.display()
                    ))
                    .into());
                }
                // The test file includes the header (or may, through another): its object
                // is compiled again from the whole file, beside every library object whose
                // compile read the header.
                files.push(self.test_file.clone());
                compile.push(self.test_compile.clone());
                test_recompiled = true;
                recompiled.extend(self.lib.objects_reading(r.source).map(|o| o.stem.as_str()));
            }
        }
        if !test_recompiled {
            files.push(WriteFile {
                path: CANDIDATE_OBJ.into(),
                contents: self.test_object.clone(),
            });
        }
        for o in &self.lib.objects {
            let obj = o.path("o");
            if !recompiled.contains(&o.stem.as_str()) {
                files.push(WriteFile {
                    path: obj,
                    contents: o.object.clone(),
                });
            } else if test_recompiled {
                // A header's objects, compiled whole (the header may be in a prefix); a
                // mutated translation unit's line was made above.
                compile.push(
                    self.project
                        .compile_library_object(&o.source, &obj.to_string_lossy()),
                );
            }
        }
        let compile: String = compile.iter().map(|c| format!("{c} && ")).collect();
        // Before the binary runs: a control run notes what the build cost (the binary's own
        // CPU time is the rest); a mutant's binary gets its CPU budget (the shell's soft
        // limit, which the binary keeps; SIGXCPU when spent). A budget above the run's hard
        // limit is refused by the shell, and the run's own limit stays.
        let before_exec = match (control, self.control_cpu) {
            (true, _) => format!("times > {TIMES_BEFORE_EXEC}\n"),
            (false, Some(cpu)) => format!("ulimit -S -t {} 2>/dev/null\n", mutant_cpu_secs(cpu)),
            (false, None) => String::new(),
        };
        // The binary replaces the shell, so the run's exit status is its own.
        let script = format!(
            "if ! {{ {compile}{}; }} > {log} 2>&1; then : > {failed}; exit 1; fi\n\
             {before_exec}exec ./{TEST_BINARY} \"$@\"\n",
            self.link,
            log = sh_quote(MUTANT_LOG),
            failed = sh_quote(MUTANT_FAILED),
        );
        let mut spec = RunSpec::new(&self.repo, ["/bin/sh", "-c", &script, "gtest"]);
        spec.argv.extend(run_args(&self.filter));
        spec.argv.push(FAIL_FAST.into());
        spec.env = self.project.env.clone();
        if let Some(object) = &self.listener {
            files.push(WriteFile {
                path: LISTENER_OBJ.into(),
                contents: object.to_vec(),
            });
            spec.report_channel = true;
        }
        spec.files = files;
        // A precompiled prefix is read where the cache keeps it, read-only.
        spec.binds = binds;
        spec.writable_dirs = vec![BUILD_DIR.into(), LIB_DIR.into(), OUT_DIR.into()];
        spec.collect = [GTEST_XML, MUTANT_LOG, MUTANT_FAILED, TIMES_BEFORE_EXEC]
            .map(PathBuf::from)
            .to_vec();
        spec.limits = limits.clone();
        let run = sandbox.run(&spec)?;
        let cpu = binary_cpu_time(&run).filter(|_| control);
        if matches!(run.file(MUTANT_FAILED), Some(Collected::Read { .. }))
            && run.limit_hit.is_none()
        {
            let log = run
                .file(MUTANT_LOG)
                .and_then(Collected::bytes)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            return Ok((
                unmeasured(Outcome::CompileError, Some(first_errors(&log)), run),
                None,
            ));
        }
        let (tests, problem) = match run.file(GTEST_XML) {
            Some(Collected::Read { bytes, .. }) => match parse_junit(bytes) {
                Ok(t) => (Some(t), None),
                Err(e) => (
                    None,
                    Some(format!("the GoogleTest report is unreadable: {e}")),
                ),
            },
            _ => (None, None),
        };
        let (outcome, message) = crate::run::judge(run.exit, run.limit_hit, tests.as_deref());
        if let Some(why) = record::forged(self.listener.is_some(), &run, outcome, tests.as_deref())
        {
            return Ok((unmeasured(Outcome::Forged, Some(why), run), cpu));
        }
        let mut result = unmeasured(outcome, problem.or(message), run);
        result.tests = tests.unwrap_or_default();
        Ok((result, cpu))
    }
}

/// The CPU seconds a mutant's test binary may spend: three times the control run's binary
/// and a quarter of a second more (as a mutant batch of a pytest worker bounds its runs),
/// rounded up to the whole seconds a CPU limit counts in.
pub fn mutant_cpu_secs(control: Duration) -> u64 {
    (3.0 * control.as_secs_f64() + 0.25).ceil().max(1.0) as u64
}

/// The limits of a mutant run: `limits`, with the wall clock and CPU time cut to three times
/// the original's run (`plain`: for a candidate its whole run, compile, link, run and
/// coverage; for calibrate the ground truth's compile and control run, more than a mutant run
/// of one source's compile, link and run takes) and 5 s more. A mutant that loops forever (a
/// loop condition turned around) is killed by its limit either way; so it costs seconds, not
/// the repository's whole timeout. Mutation tools bound a mutant's run by the original's the
/// same way.
pub fn mutant_limits(limits: &Limits, plain: Duration) -> Limits {
    let wall = (plain * 3 + Duration::from_secs(5)).min(limits.wall);
    Limits {
        wall,
        cpu_secs: limits.cpu_secs.min(wall.as_secs().max(1) * 2),
        ..limits.clone()
    }
}

/// A result without tests or coverage.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutant_runs_within_three_times_the_original_run() {
        let repo = Limits {
            wall: Duration::from_secs(60),
            cpu_secs: 60,
            ..Limits::default()
        };
        let l = mutant_limits(&repo, Duration::from_millis(1500));
        assert_eq!((l.wall, l.cpu_secs), (Duration::from_millis(9500), 18));
        assert_eq!(l.memory_bytes, repo.memory_bytes);
        // Never more than the repository allows.
        let l = mutant_limits(&repo, Duration::from_secs(20));
        assert_eq!((l.wall, l.cpu_secs), (Duration::from_secs(60), 60));
    }
}
