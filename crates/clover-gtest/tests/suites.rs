//! Whole GoogleTest suites through the sandbox against the same tests built and run bare on
//! the host (inside `unshare -n`, so they have no network either): the same tests must pass
//! and fail. The fixture's GoogleTest files, Debian's GoogleTest samples 1, 2 and 4, and the
//! C++ corpus repositories `cargo xtask test` fetches.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

mod common;

use clover_gtest::{CppProject, GtestRun, LibraryCache};
use clover_manifest::RepoConfig;
use clover_protocol::{Language, Outcome};
use clover_report::parse_junit;
use clover_sandbox::{Limits, Sandbox, WriteFile};
use clover_testkit::bare::{assert_same, copy_of, unshare, verdicts, Verdicts};

fn sandbox() -> Option<Sandbox> {
    clover_testkit::root()?;
    match Sandbox::new() {
        Ok(sb) => Some(sb),
        Err(e) => clover_testkit::require(&format!("the sandbox ({e})"), None),
    }
}

/// The C++ corpus repositories this suite runs: the ones `cargo xtask test` checks
/// (`CPP_FOR_TESTS` in xtask/src/corpus.rs). The others (yaml-cpp, twelve test files) are
/// measured by `cargo xtask bench --corpus`, not on every test run.
const CPP_CORPUS_TESTED: &[&str] = &["googletest-samples", "snappy"];

#[test]
fn cpp_corpus_suites_same_bare_and_sandboxed() {
    if sandbox().is_none() {
        return;
    }
    let Some(manifest) = clover_testkit::corpus_manifest() else {
        return;
    };
    let Some(()) = unshare() else { return };
    for cfg in RepoConfig::resolve(Some(&manifest), None, None).unwrap() {
        if cfg.language == Language::Cpp && CPP_CORPUS_TESTED.contains(&cfg.name.as_str()) {
            let Some(()) = cpp_ready() else { continue };
            let tests = test_files(&cfg);
            let tests: Vec<&str> = tests.iter().map(String::as_str).collect();
            cpp_suite(&cfg.name, &CppProject::from_config(&cfg), &tests);
        }
    }
}

/// The test files of a repository: below its test folders, matching its test globs.
fn test_files(cfg: &RepoConfig) -> Vec<String> {
    let mut b = globset::GlobSetBuilder::new();
    for g in &cfg.test_globs {
        b.add(globset::Glob::new(g).unwrap());
    }
    let globs = b.build().unwrap();
    let mut found = Vec::new();
    for dir in &cfg.test_dirs {
        let mut stack = vec![cfg.root.join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if globs.is_match(e.file_name()) {
                    let rel = p.strip_prefix(&cfg.root).unwrap();
                    found.push(rel.to_string_lossy().into_owned());
                }
            }
        }
    }
    found.sort();
    assert!(!found.is_empty(), "{}: no test files", cfg.name);
    found
}

fn cpp_ready() -> Option<()> {
    for tool in [
        "/usr/bin/g++",
        "/usr/bin/gcovr",
        "/usr/include/gtest/gtest.h",
    ] {
        clover_testkit::require(tool, Path::new(tool).exists().then_some(()))?;
    }
    unshare()
}

/// Compiles `test` with the library's sources on the host and runs it under `unshare -n`.
fn bare_gtest(project: &CppProject, sources: &[PathBuf], test: &Path) -> Verdicts {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("t");
    let xml = dir.path().join("t.xml");
    let mut cc = Command::new(&project.cxx);
    cc.current_dir(&project.repo)
        .envs(project.env.iter().map(|(k, v)| (k, v)))
        .args(&project.cxxflags)
        .args(
            project
                .include_dirs
                .iter()
                .map(|d| format!("-I{}", d.display())),
        )
        .args(sources)
        .arg(test)
        .arg("-o")
        .arg(&bin)
        .args(project.link.iter().map(|l| format!("-l{l}")));
    let out = cc.output().unwrap();
    assert!(
        out.status.success(),
        "bare build of {}: {}",
        test.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Command::new("unshare")
        .envs(project.env.iter().map(|(k, v)| (k, v)))
        .arg("-n")
        .arg(&bin)
        .arg(format!("--gtest_output=xml:{}", xml.display()))
        .current_dir(&project.repo)
        .output()
        .unwrap();
    verdicts(&parse_junit(&std::fs::read(&xml).unwrap()).unwrap())
}

/// A library cache in a fresh folder (kept alive by the returned guard) and generous limits
/// (a cold library build counts against them).
fn cpp_cache() -> (tempfile::TempDir, LibraryCache, Limits) {
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = LibraryCache::new(cache_dir.path()).unwrap();
    let limits = Limits {
        wall: Duration::from_secs(300),
        cpu_secs: 300,
        ..Limits::default()
    };
    (cache_dir, cache, limits)
}

/// The repository's own test file `test`, as a candidate with no filter.
fn gtest_of<'a>(project: &'a CppProject, test: &str, limits: &Limits) -> GtestRun<'a> {
    GtestRun {
        project,
        test_file: WriteFile {
            path: test.into(),
            contents: std::fs::read(project.repo.join(test)).unwrap(),
        },
        filter: Vec::new(),
        limits: limits.clone(),
    }
}

fn cpp_fixture() -> CppProject {
    let cfg = RepoConfig::resolve(None, None, Some(&clover_testkit::fixture("cpp")))
        .unwrap()
        .remove(0);
    CppProject::from_config(&cfg)
}

/// Every test file of a C++ project, bare and sandboxed (each file as a candidate).
fn cpp_suite(name: &str, project: &CppProject, tests: &[&str]) {
    let Some(sb) = sandbox() else { return };
    let (_dir, cache, limits) = cpp_cache();
    let lib = cache.library(&sb, project, &limits).unwrap();
    let sources: Vec<PathBuf> = lib.sources().map(Path::to_path_buf).collect();
    assert!(!sources.is_empty());
    for test in tests {
        let bare = bare_gtest(project, &sources, Path::new(test));
        let r = gtest_of(project, test, &limits).run(&sb, &cache).unwrap();
        // The outcome may be `error` where the binary's exit code disagrees with its report
        // on purpose (sample9 returns 0 after a failing test); the tests must still be there.
        assert!(
            !r.tests.is_empty() && r.outcome != Outcome::CompileError,
            "{name} {test}: {:?} {:?}\n{}",
            r.outcome,
            r.message,
            r.run.stdout.tail(4000)
        );
        assert!(!r.coverage.is_empty(), "{name} {test}: no coverage");
        assert_same(&format!("{name} {test}"), &bare, &verdicts(&r.tests));
    }
}

#[test]
fn cpp_fixture_tests_same_bare_and_sandboxed() {
    let Some(()) = cpp_ready() else { return };
    let project = cpp_fixture();
    cpp_suite(
        "cppfix",
        &project,
        &[
            "tests/ring_buffer_test.cc",
            "tests/tokenizer_test.cc",
            "tests/tokenizer_unittest.cc",
            "tests/histogram_unittest.cc",
            "tests/orphan_test.cc",
            "tests/small_vector_test.cc",
        ],
    );
}

/// `gtest_main` is linked exactly when the test file defines no `main`: a manifest that
/// leaves it out still runs tests without one (they failed with `undefined reference to
/// 'main'`), and a file with its own `main` runs that one (small_vector_test checks it).
#[test]
fn gtest_main_is_linked_when_the_test_file_has_no_main() {
    let Some(()) = cpp_ready() else { return };
    let Some(sb) = sandbox() else { return };
    let project = CppProject {
        link: vec!["gtest".into(), "pthread".into()],
        ..cpp_fixture()
    };
    let (_dir, cache, limits) = cpp_cache();
    for test in ["tests/histogram_unittest.cc", "tests/small_vector_test.cc"] {
        let r = gtest_of(&project, test, &limits).run(&sb, &cache).unwrap();
        assert_eq!(r.outcome, Outcome::Passed, "{test}: {:?}", r.message);
    }
}

/// The library cache is keyed on what goes into the build: a stray file below the sources
/// finds the stored build (in a new process too), a header a source includes builds anew.
/// Built one source at a time or all at once, the library has the same objects.
#[test]
fn the_library_cache_rebuilds_for_what_the_build_reads() {
    let Some(()) = cpp_ready() else { return };
    let Some(sb) = sandbox() else { return };
    let copy = copy_of(&clover_testkit::fixture("cpp"));
    let project = CppProject {
        repo: copy.path().into(),
        ..cpp_fixture()
    };
    let (dir, cache, limits) = cpp_cache();
    let builds = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .count()
    };
    let first = cache.library(&sb, &project, &limits).unwrap();
    assert_eq!(builds(), 1);
    std::fs::write(copy.path().join("src/scratch.tmp"), "x").unwrap();
    let fresh = || LibraryCache::new(dir.path()).unwrap();
    let again = fresh().library(&sb, &project, &limits).unwrap();
    assert_eq!(
        (&first.key, builds()),
        (&again.key, 1),
        "a stray file rebuilt"
    );
    let header = copy.path().join("src/histogram.h");
    let mut text = std::fs::read_to_string(&header).unwrap();
    text.push_str("// changed\n");
    std::fs::write(&header, text).unwrap();
    let changed = fresh().library(&sb, &project, &limits).unwrap();
    assert_ne!(first.key, changed.key, "an included header changed");
    assert_eq!(builds(), 2);

    let serial_dir = tempfile::tempdir().unwrap();
    let serial = LibraryCache::new(serial_dir.path())
        .unwrap()
        .with_jobs(1)
        .library(&sb, &project, &limits)
        .unwrap();
    let sources = |b: &clover_gtest::LibraryBuild| -> Vec<PathBuf> {
        b.sources().map(Path::to_path_buf).collect()
    };
    assert_eq!(sources(&serial), sources(&changed));
    assert_eq!(serial.key, changed.key, "the same recipe and inputs");
}

/// A header-only template is compiled only into the test that instantiates it: the test file
/// is instrumented too, and the header's lines are measured, the test file's own are not.
#[test]
fn a_header_only_source_is_measured_where_the_test_compiles_it() {
    let Some(()) = cpp_ready() else { return };
    let Some(sb) = sandbox() else { return };
    let project = cpp_fixture();
    let (_dir, cache, limits) = cpp_cache();
    let binary = gtest_of(&project, "tests/small_vector_test.cc", &limits)
        .build(&sb, &cache)
        .unwrap()
        .expect("the fixture's test builds");
    let covered = |r: &clover_gtest::GtestResult, path: &str| -> Vec<u32> {
        r.coverage
            .iter()
            .find(|f| f.path == path)
            .map(|f| f.lines.iter().collect())
            .unwrap_or_default()
    };
    let all = binary.run(&sb, &[], &limits).unwrap();
    assert_eq!(
        (all.outcome, &all.coverage_problem),
        (Outcome::Passed, &None),
        "{:?}",
        all.message
    );
    // Grow's body (67-76) and Erase's loop (55-60) run in the whole file.
    let lines = covered(&all, "src/small_vector.h");
    assert!([56, 68, 75].iter().all(|l| lines.contains(l)), "{lines:?}");
    let paths: Vec<&str> = all.coverage.iter().map(|f| f.path.as_str()).collect();
    assert!(
        paths.iter().all(|p| p.starts_with("src/")),
        "only the library's files: {paths:?}"
    );
    // A candidate compiled and run at once is measured the same way, also under a name the
    // repository does not hold (gcov reads the test file's text to find the header's lines).
    let mut candidate = gtest_of(&project, "tests/small_vector_test.cc", &limits);
    candidate.test_file.path = "tests/tmp_cand_0_test.cc".into();
    let once = candidate.run(&sb, &cache).unwrap();
    assert_eq!(
        covered(&once, "src/small_vector.h"),
        covered(&all, "src/small_vector.h"),
        "{:?}",
        once.message
    );
    // A run of one TEST counts its own instantiations only.
    let only = binary
        .run(&sb, &["SmallVectorTest.AtChecksTheIndex".into()], &limits)
        .unwrap();
    let lines = covered(&only, "src/small_vector.h");
    assert!(lines.contains(&39) && !lines.contains(&68), "{lines:?}");
}

/// A test file built once ([`GtestRun::build`]) and run test by test: each run counts only
/// itself (a filtered run after a whole run sees the same lines as before it), and gcovr's
/// executable lines include the ones no run reaches.
#[test]
fn a_test_binary_built_once_runs_with_fresh_counters() {
    let Some(()) = cpp_ready() else { return };
    let Some(sb) = sandbox() else { return };
    let project = cpp_fixture();
    let (_dir, cache, limits) = cpp_cache();
    let binary = gtest_of(&project, "tests/histogram_unittest.cc", &limits)
        .build(&sb, &cache)
        .unwrap()
        .expect("the fixture's test builds");
    let lines = |r: &clover_gtest::GtestResult, which: &str| -> Vec<u32> {
        let files = if which == "covered" {
            &r.coverage
        } else {
            &r.executable
        };
        files
            .iter()
            .find(|f| f.path == "src/histogram.cc")
            .map(|f| f.lines.iter().collect())
            .unwrap_or_default()
    };
    let only = ["HistogramTest.AsciiBarsScaleToPeak".to_string()];
    let before = binary.run(&sb, &only, &limits).unwrap();
    let all = binary.run(&sb, &[], &limits).unwrap();
    let after = binary.run(&sb, &only, &limits).unwrap();
    assert_eq!(before.outcome, Outcome::Passed, "{:?}", before.message);
    assert_eq!((before.tests.len(), all.tests.len()), (1, 9));
    assert_eq!(all.outcome, Outcome::Passed, "{:?}", all.message);
    // ToAscii (52-65) runs in the filtered test; the constructor's throw (13) only in the
    // whole run; `return hi_;` (49) in none, yet it is executable.
    let (b, a) = (lines(&before, "covered"), lines(&all, "covered"));
    assert!(
        b.contains(&53) && !b.contains(&13) && a.contains(&13),
        "{b:?} {a:?}"
    );
    assert_eq!(b, lines(&after, "covered"), "counters leaked between runs");
    let executable = lines(&all, "executable");
    assert!(
        executable.contains(&49) && !a.contains(&49),
        "{executable:?}"
    );
    assert!(a.iter().all(|l| executable.contains(l)));
    assert!(
        !executable.contains(&2) && !executable.contains(&40),
        "{executable:?}"
    );
}

/// A run that ends by itself but leaves no counters (here the test puts a directory where
/// libgcov writes histogram's `.gcda`) has lost its coverage: the result says so rather
/// than report fewer lines as if they had not run.
#[test]
fn a_run_that_loses_its_counters_says_so() {
    let Some(()) = cpp_ready() else { return };
    let Some(sb) = sandbox() else { return };
    let project = cpp_fixture();
    let (_dir, cache, limits) = cpp_cache();
    let mut run = gtest_of(&project, "tests/histogram_unittest.cc", &limits);
    let whole = run.run(&sb, &cache).unwrap();
    assert_eq!(
        (whole.outcome, &whole.coverage_problem),
        (Outcome::Passed, &None)
    );
    run.test_file.contents.extend_from_slice(
        b"\n#include <sys/stat.h>\n\nTEST(Hostile, HidesCounters) {\n  \
          ASSERT_EQ(mkdir(\".clover-build/lib/src__histogram.cc.gcda\", 0700), 0);\n}\n",
    );
    let r = run.run(&sb, &cache).unwrap();
    assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    let why = r.coverage_problem.as_deref().unwrap_or_default();
    assert!(
        why.starts_with("no counters (.gcda) from 1 of 4 instrumented objects: src__histogram.cc"),
        "{why}"
    );
    assert_eq!(r.message.as_deref(), Some(why));
    // Histogram's lines, which the same tests covered before, are not counted.
    let covered = |r: &clover_gtest::GtestResult| {
        r.coverage
            .iter()
            .find(|f| f.path == "src/histogram.cc")
            .map_or(0, |f| f.lines.len())
    };
    assert!(covered(&whole) > 20 && covered(&r) == 0, "{:?}", r.coverage);
}

#[test]
fn googletest_samples_same_bare_and_sandboxed() {
    let Some(()) = cpp_ready() else { return };
    let Some(samples) = common::samples_dir() else {
        return;
    };
    let project = common::samples_project(samples);
    cpp_suite(
        "googletest samples",
        &project,
        &[
            "sample1_unittest.cc",
            "sample2_unittest.cc",
            "sample4_unittest.cc",
        ],
    );
}
