//! Runs of a test file against mutants of one library source ([`MutantHarness`]): only the
//! mutated translation unit is compiled again and linked in place of its cached object; the
//! run stops at the first failing test; a mutant that does not compile is `compile_error`,
//! not a failure; the cached objects are left as they were; a test without assertions kills
//! nothing. A mutated header is compiled into the test object and every library object that
//! includes it (and into all of them for a build cached without the lists). The harness a
//! candidate's run keeps judges as one compiled anew. Prints the seconds of a mutant run
//! against a plain candidate run (never asserted).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod common;

use common::{limits, ready};

use clover_gtest::{
    mutant_cpu_secs, CppProject, FastBuild, GtestResult, GtestRun, LibraryCache, MutantHarness,
    Replacement,
};
use clover_protocol::{LimitHit, Outcome, TestOutcome};
use clover_sandbox::{Sandbox, WriteFile};
use clover_testkit::counter;
use tempfile::TempDir;

const CALC: &str = "#include \"calc.h\"\n\n\
int Clamp(int v, int lo, int hi) {\n  if (v < lo) return lo;\n  if (v > hi) return hi;\n  return v;\n}\n\n\
int Twice(int v) { return v * 2; }\n";

const TEST: &str = "#include \"calc.h\"\n#include <gtest/gtest.h>\n\n\
TEST(Calc, Clamps) {\n  EXPECT_EQ(Clamp(5, 0, 3), 3);\n  EXPECT_EQ(Clamp(-1, 0, 3), 0);\n}\n\n\
TEST(Calc, Twice) { EXPECT_EQ(Twice(2), 4); }\n";

/// A library of two sources (the mutated one and another) and the test file.
fn project(dir: &Path) -> CppProject {
    for (path, text) in [
        (
            "src/calc.h",
            "int Clamp(int v, int lo, int hi);\nint Twice(int v);\nint Other();\n",
        ),
        ("src/calc.cc", CALC),
        (
            "src/other.cc",
            "#include \"calc.h\"\nint Other() { return 7; }\n",
        ),
        ("tests/calc_test.cc", TEST),
    ] {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    CppProject {
        repo: dir.into(),
        cxx: "g++".into(),
        cxxflags: vec!["-std=c++17".into(), "-O0".into()],
        include_dirs: vec!["src".into()],
        source_dirs: vec!["src".into()],
        test_globs: vec!["*_test.cc".into()],
        excludes: Vec::new(),
        link: vec!["gtest_main".into(), "gtest".into(), "pthread".into()],
        env: Vec::new(),
    }
}

/// The calc project in a folder of its own, and an empty library cache (the folders are kept
/// as long as the caller holds them).
fn calc() -> (TempDir, CppProject, TempDir, LibraryCache) {
    let repo = tempfile::tempdir().unwrap();
    let project = project(repo.path());
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = LibraryCache::new(cache_dir.path()).unwrap();
    (repo, project, cache_dir, cache)
}

fn run_of<'a>(project: &'a CppProject, path: &str, text: &str) -> GtestRun<'a> {
    GtestRun {
        project,
        test_file: WriteFile {
            path: path.into(),
            contents: text.as_bytes().to_vec(),
        },
        filter: Vec::new(),
        limits: limits(),
    }
}

fn harness(sb: &Sandbox, cache: &LibraryCache, run: &GtestRun) -> MutantHarness {
    match run.mutant_harness(sb, cache).unwrap() {
        Ok(h) => h,
        Err(r) => panic!("the test file did not build: {:?}", r.message),
    }
}

/// `h`'s run with `src/calc.cc` replaced by `text`.
fn on_calc(sb: &Sandbox, h: &MutantHarness, text: &str) -> GtestResult {
    let replaced = Replacement {
        source: Path::new("src/calc.cc"),
        text: text.as_bytes(),
    };
    h.run(sb, Some(replaced), &limits()).unwrap()
}

/// Every file below `dir`, by path, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn a_mutant_is_killed_survived_or_does_not_compile() {
    let Some(sb) = ready() else { return };
    let (repo, project, cache_dir, cache) = calc();
    let truth = run_of(&project, "tests/calc_test.cc", TEST);
    let plain = truth.run(&sb, &cache).unwrap();
    assert_eq!(plain.outcome, Outcome::Passed, "{:?}", plain.message);
    let cached = snapshot(cache_dir.path());
    let h = harness(&sb, &cache, &truth);
    let mutant = |text: &str| on_calc(&sb, &h, text);

    let control = h.run(&sb, None, &limits()).unwrap();
    assert_eq!(control.outcome, Outcome::Passed, "{:?}", control.message);

    // `>` to `<`: Clamp(5, 0, 3) is 5. The first test fails and the run stops there: the
    // second is reported as not run.
    let killed = mutant(&CALC.replace("v > hi", "v < hi"));
    assert_eq!(killed.outcome, Outcome::Failed, "{:?}", killed.message);
    let verdicts: Vec<(String, TestOutcome)> = killed
        .tests
        .iter()
        .map(|t| (format!("{}.{}", t.classname, t.name), t.outcome))
        .collect();
    assert!(
        verdicts.contains(&("Calc.Clamps".into(), TestOutcome::Failed)),
        "{verdicts:?}"
    );
    assert!(
        !verdicts.contains(&("Calc.Twice".into(), TestOutcome::Passed)),
        "the run goes on after the first failure: {verdicts:?}"
    );

    // `v * 2` to `v + 2` is the same at 2: the ground truth cannot tell.
    let survived = mutant(&CALC.replace("v * 2", "v + 2"));
    assert_eq!(survived.outcome, Outcome::Passed, "{:?}", survived.message);

    // A mutant that does not compile is said so, with the compiler's words.
    let broken = mutant(&CALC.replace("return v;", "return v"));
    assert_eq!(broken.outcome, Outcome::CompileError);
    let why = broken.message.unwrap_or_default();
    assert!(why.contains("error"), "{why}");
    assert!(broken.tests.is_empty());

    // A translation unit can be replaced only when it is the library's.
    let test_file = h.run(
        &sb,
        Some(Replacement {
            source: Path::new("tests/calc_test.cc"),
            text: b"",
        }),
        &limits(),
    );
    let e = test_file.unwrap_err().to_string();
    assert!(
        e.contains("tests/calc_test.cc is not a translation unit of the library"),
        "{e}"
    );

    // The cached library is only read: the original code passes again, and the cache's files
    // are byte for byte what they were (the precompiled header the harness added aside).
    let after = snapshot(cache_dir.path());
    let changed: Vec<&PathBuf> = cached
        .iter()
        .filter(|(p, bytes)| after.get(*p) != Some(*bytes))
        .map(|(p, _)| p)
        .collect();
    assert!(!cached.is_empty() && changed.is_empty(), "{changed:?}");
    assert_eq!(
        h.run(&sb, None, &limits()).unwrap().outcome,
        Outcome::Passed
    );
    assert_eq!(truth.run(&sb, &cache).unwrap().outcome, Outcome::Passed);
    // The repository is never written.
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/calc.cc")).unwrap(),
        CALC
    );
}

#[test]
fn a_test_without_assertions_kills_no_mutant() {
    let Some(sb) = ready() else { return };
    let (_repo, project, _cache_dir, cache) = calc();
    let hollow = "#include \"calc.h\"\n#include <gtest/gtest.h>\n\n\
                  TEST(Calc, Runs) { Clamp(5, 0, 3); Twice(2); }\n";
    let run = run_of(&project, "tests/hollow_test.cc", hollow);
    // The first run builds the library (and the second the precompiled header): the third is
    // what a candidate costs.
    let mut plain_secs = 0.0;
    for _ in 0..3 {
        let started = Instant::now();
        let plain = run.run(&sb, &cache).unwrap();
        plain_secs = started.elapsed().as_secs_f64();
        assert_eq!(plain.outcome, Outcome::Passed, "{:?}", plain.message);
    }
    let h = harness(&sb, &cache, &run);
    let mut secs = Vec::new();
    for (from, to) in [
        ("v > hi", "v < hi"),
        ("v < lo", "v <= lo"),
        ("v * 2", "v - 2"),
    ] {
        let started = Instant::now();
        let r = h
            .run(
                &sb,
                Some(Replacement {
                    source: Path::new("src/calc.cc"),
                    text: CALC.replace(from, to).as_bytes(),
                }),
                &limits(),
            )
            .unwrap();
        secs.push(started.elapsed().as_secs_f64());
        assert_eq!(
            r.outcome,
            Outcome::Passed,
            "{from} -> {to}: {:?}",
            r.message
        );
    }
    // The cost of a mutant run against a candidate's run (compile, link, run, coverage),
    // for the report; timings are never asserted.
    eprintln!(
        "a C++ mutant run: {:.2} s (median of {}), a plain candidate run: {plain_secs:.2} s",
        median(&mut secs),
        secs.len()
    );
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The header-only repository of the test kit, as a project.
fn counter_project(dir: &Path) -> CppProject {
    let root = counter::write_repo(dir);
    let cfg = clover_manifest::RepoConfig::resolve(None, None, Some(&root))
        .unwrap()
        .remove(0);
    CppProject::from_config(&cfg)
}

/// The outcome of a run and the tests that failed in it.
fn verdict(r: &GtestResult) -> (Outcome, Vec<String>) {
    let failed = r
        .tests
        .iter()
        .filter(|t| t.outcome == TestOutcome::Failed)
        .map(|t| format!("{}.{}", t.classname, t.name))
        .collect();
    (r.outcome, failed)
}

/// The header's mutants the tests below run: one in the class the test object compiles,
/// one of a constant only `src/headroom.cc` reads, one that does not compile.
fn header_mutants() -> [String; 3] {
    [
        counter::HEADER.replace("count_ + n > limit_", "count_ + n >= limit_"),
        counter::HEADER.replace("kReserve = 1", "kReserve = 0"),
        counter::HEADER.replace("return true;", "return true"),
    ]
}

fn on_header<'a>(text: &'a str) -> Option<Replacement<'a>> {
    Some(Replacement {
        source: Path::new(counter::HEADER_PATH),
        text: text.as_bytes(),
    })
}

#[test]
fn a_header_mutant_reaches_every_object_that_includes_it() {
    let Some(sb) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let project = counter_project(dir.path());
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = LibraryCache::new(cache_dir.path()).unwrap();
    // The build's dependency files say which library sources include the header.
    let lib = cache.library(&sb, &project, &limits()).unwrap();
    assert_eq!(
        lib.sources_reading(Path::new(counter::HEADER_PATH)),
        [Path::new("src/headroom.cc")]
    );
    assert_eq!(
        lib.sources_reading(Path::new("src/./counter.h")),
        [Path::new("src/headroom.cc")]
    );
    assert!(lib.sources_reading(Path::new("src/nothing.h")).is_empty());

    let truth = run_of(&project, counter::TEST_PATH, counter::TEST);
    let h = harness(&sb, &cache, &truth);
    assert_eq!(
        h.run(&sb, None, &limits()).unwrap().outcome,
        Outcome::Passed
    );
    let [in_class, in_library, broken] = header_mutants();
    // The test object is compiled again with the mutated class: Add(1) at 2 of 3 fails.
    let r = h.run(&sb, on_header(&in_class), &limits()).unwrap();
    assert_eq!(
        verdict(&r),
        (Outcome::Failed, vec!["Counter.Adds".into()]),
        "{:?}",
        r.message
    );
    // `kReserve` is compiled into headroom.cc's object only: the mutant is killed because
    // that object is compiled again.
    let r = h.run(&sb, on_header(&in_library), &limits()).unwrap();
    assert_eq!(
        verdict(&r),
        (Outcome::Failed, vec!["Counter.Headroom".into()]),
        "{:?}",
        r.message
    );
    let r = h.run(&sb, on_header(&broken), &limits()).unwrap();
    assert_eq!(r.outcome, Outcome::CompileError, "{:?}", r.message);
    assert!(r.message.unwrap_or_default().contains("error"));

    // A test without assertions kills none of the header's mutants that compile.
    let hollow = run_of(&project, "tests/hollow_test.cc", counter::HOLLOW);
    let hh = harness(&sb, &cache, &hollow);
    for m in [&in_class, &in_library] {
        let r = hh.run(&sb, on_header(m), &limits()).unwrap();
        assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    }

    // A build cached before the lists were kept has none: every library object counts as
    // reading the header and is compiled again, with the same verdicts.
    let mut lists = 0;
    for e in walkdir(cache_dir.path()) {
        if e.extension().is_some_and(|x| x == "reads") {
            std::fs::remove_file(&e).unwrap();
            lists += 1;
        }
    }
    assert_eq!(lists, 2, "one list per library object");
    let old = LibraryCache::new(cache_dir.path()).unwrap();
    let lib = old.library(&sb, &project, &limits()).unwrap();
    assert_eq!(
        lib.sources_reading(Path::new(counter::HEADER_PATH)),
        [Path::new("src/headroom.cc"), Path::new("src/other.cc")]
    );
    let h = harness(&sb, &old, &truth);
    let r = h.run(&sb, on_header(&in_library), &limits()).unwrap();
    assert_eq!(
        verdict(&r),
        (Outcome::Failed, vec!["Counter.Headroom".into()])
    );
    assert_eq!(
        std::fs::read_to_string(project.repo.join(counter::HEADER_PATH)).unwrap(),
        counter::HEADER
    );
}

#[test]
fn the_harness_a_run_keeps_judges_as_one_compiled_anew() {
    let Some(sb) = ready() else { return };
    let dir = tempfile::tempdir().unwrap();
    let project = counter_project(dir.path());
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = LibraryCache::new(cache_dir.path()).unwrap();
    let truth = run_of(&project, counter::TEST_PATH, counter::TEST);
    // Twice: the second run compiles against the precompiled header, as candidates do.
    for _ in 0..2 {
        let (plain, kept) = truth.run_keeping_object(&sb, &cache).unwrap();
        assert_eq!(plain.outcome, Outcome::Passed, "{:?}", plain.message);
        let kept = kept.expect("a run that compiled keeps its object");
        let anew = harness(&sb, &cache, &truth);
        let headroom = counter::HEADROOM.replace("- kReserve", "+ kReserve");
        let [in_class, in_library, broken] = header_mutants();
        let mutants = [
            None,
            on_header(&in_class),
            on_header(&in_library),
            on_header(&broken),
            Some(Replacement {
                source: Path::new("src/headroom.cc"),
                text: headroom.as_bytes(),
            }),
        ];
        for m in mutants {
            let (a, b) = (
                kept.run(&sb, m, &limits()).unwrap(),
                anew.run(&sb, m, &limits()).unwrap(),
            );
            assert_eq!(verdict(&a), verdict(&b), "{m:?}: {:?}", a.message);
        }
    }
    // A test file that does not compile keeps no object.
    let broken = run_of(&project, "tests/broken_test.cc", "TEST(\n");
    let (r, kept) = broken.run_keeping_object(&sb, &cache).unwrap();
    assert_eq!(r.outcome, Outcome::CompileError);
    assert!(kept.is_none());
}

/// A mutant's binary may spend three times the CPU time of the control run's and a quarter of
/// a second more (in whole seconds): a mutant that loops forever is stopped there, not at the
/// wall clock of its limits (here five minutes); one that waits spends no CPU time and runs to
/// its end. The measure is the candidate's own run (the harness it keeps) or the harness's
/// control run; a harness with neither has no budget.
#[test]
fn a_mutant_s_binary_is_stopped_at_its_cpu_budget_not_while_it_waits() {
    let Some(sb) = ready() else { return };
    let (_repo, project, _cache_dir, cache) = calc();
    let truth = run_of(&project, "tests/calc_test.cc", TEST);
    let (plain, kept) = truth.run_keeping_object(&sb, &cache).unwrap();
    assert_eq!(plain.outcome, Outcome::Passed, "{:?}", plain.message);
    let kept = kept.expect("a run that compiled keeps its object");
    let mut anew = harness(&sb, &cache, &truth);
    assert_eq!(anew.control_cpu(), None);
    let control = anew.control(&sb, &limits()).unwrap();
    assert_eq!(control.outcome, Outcome::Passed, "{:?}", control.message);
    let spins = CALC.replace(
        "return v * 2;",
        "volatile int x = v; while (x) {} return v * 2;",
    );
    // 1.5 s asleep: more than the budget of a binary that takes milliseconds (1 s).
    let waits = format!(
        "#include <unistd.h>\n{}",
        CALC.replace("return v * 2;", "usleep(1500000); return v * 2;")
    );
    for h in [&kept, &anew] {
        let cpu = h.control_cpu().expect("the control run is measured");
        assert_eq!(mutant_cpu_secs(cpu), 1, "{cpu:?}");
        let run = |text: &str| on_calc(&sb, h, text);
        let r = run(&spins);
        assert_eq!(r.outcome, Outcome::Killed, "{:?}", r.message);
        assert_eq!(r.run.limit_hit, Some(LimitHit::CpuTime), "{:?}", r.message);
        // The binary's second of CPU time and the build's, not the run's 300 s.
        assert!(
            r.run.cpu_time < Duration::from_secs(30),
            "{:?}",
            r.run.cpu_time
        );
        let r = run(&waits);
        assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
    }
}

/// A mutated translation unit's leading `#include` lines are precompiled the second time
/// they are seen, and the mutants compiled against the header judge as the source compiled
/// whole does: the same token stream, on the same lines (a mutant that reads its own
/// `__LINE__` survives only if the line is the source's).
#[test]
fn a_mutated_source_s_includes_are_precompiled_and_judge_alike() {
    let Some(sb) = ready() else { return };
    let (_repo, project, cache_dir, cache) = calc();
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = LibraryCache::new(plain_dir.path())
        .unwrap()
        .with_fast_build(FastBuild::NONE);
    let truth = run_of(&project, "tests/calc_test.cc", TEST);
    let fast = harness(&sb, &cache, &truth);
    let whole = harness(&sb, &plain, &truth);
    let mutants = [
        (CALC.replace("v > hi", "v < hi"), Outcome::Failed),
        // Line 9 is Twice's: `+ 0` where the line is kept.
        (
            CALC.replace("return v * 2;", "return v * 2 + (__LINE__ - 9);"),
            Outcome::Passed,
        ),
        (CALC.replace("v * 2", "v - 2"), Outcome::Failed),
        (CALC.replace("return v;", "return v"), Outcome::CompileError),
    ];
    for (i, (text, expected)) in mutants.iter().enumerate() {
        let (a, b) = (on_calc(&sb, &fast, text), on_calc(&sb, &whole, text));
        assert_eq!(a.outcome, *expected, "mutant {i}: {:?}", a.message);
        assert_eq!(b.outcome, *expected, "mutant {i} whole: {:?}", b.message);
        // Seen once, the prefix is not worth a header; the second mutant builds it.
        let built = cache.precompiled_header_builds();
        assert_eq!(built, usize::from(i >= 1), "after mutant {i}");
        if i == 1 {
            // From here on the header's text says it was read: a compile that uses the
            // `.gch` never reads it.
            let headers: Vec<PathBuf> = walkdir(&cache_dir.path().join("pch"))
                .into_iter()
                .filter(|p| p.file_name().is_some_and(|n| n == "clover-pch.h"))
                .collect();
            assert_eq!(headers.len(), 1, "{headers:?}");
            std::fs::write(&headers[0], "#error the header was read as text\n").unwrap();
        }
    }
    assert_eq!(plain.precompiled_header_builds(), 0);
}

/// Every file below `dir`.
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    snapshot(dir).into_keys().collect()
}
