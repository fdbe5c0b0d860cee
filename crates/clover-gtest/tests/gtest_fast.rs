//! The C++ runner's faster builds ([`FastBuild`]: precompiled include prefixes, coverage
//! instrumentation of the repository's files only, `mold`) against builds without them: the
//! same verdicts and the same covered and executable lines, on the fixture's test files,
//! candidates of our own and Debian's GoogleTest samples; a precompiled header built once
//! per prefix and flags; a header the compiler rejects, or one that does not build, and the
//! candidate compiled without it.

mod common;

use common::{limits, ready};

use clover_gtest::{CppProject, FastBuild, GtestResult, GtestRun, LibraryCache};
use clover_manifest::RepoConfig;
use clover_protocol::Outcome;
use clover_sandbox::{Sandbox, WriteFile};

fn fixture() -> CppProject {
    let cfg = RepoConfig::resolve(None, None, Some(&clover_testkit::fixture("cpp")))
        .unwrap()
        .remove(0);
    CppProject::from_config(&cfg)
}

fn candidate<'a>(project: &'a CppProject, path: &str, text: Vec<u8>) -> GtestRun<'a> {
    GtestRun {
        project,
        test_file: WriteFile {
            path: path.into(),
            contents: text,
        },
        filter: Vec::new(),
        limits: limits(),
    }
}

fn own_test<'a>(project: &'a CppProject, path: &str) -> GtestRun<'a> {
    candidate(
        project,
        path,
        std::fs::read(project.repo.join(path)).unwrap(),
    )
}

/// What scoring reads of a result: outcome, each test's verdict, covered and executable
/// lines per file.
fn reading(r: &GtestResult) -> String {
    let tests: Vec<String> = r
        .tests
        .iter()
        .map(|t| format!("{}.{}={:?}", t.classname, t.name, t.outcome))
        .collect();
    format!(
        "{:?} {tests:?}\ncovered {:?}\nexecutable {:?}",
        r.outcome, r.coverage, r.executable
    )
}

/// Runs each candidate through a cache without speed-ups and twice through one with them
/// (the second time against a precompiled header where the file has an include prefix):
/// the three readings must be equal.
fn same_with_and_without(sb: &Sandbox, runs: &[GtestRun], with_prefix: &[bool]) {
    let (plain_dir, fast_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let plain = LibraryCache::new(plain_dir.path())
        .unwrap()
        .with_fast_build(FastBuild::NONE);
    let fast = LibraryCache::new(fast_dir.path()).unwrap();
    for (run, &prefix) in runs.iter().zip(with_prefix) {
        let name = run.test_file.path.display();
        let before = run.run(sb, &plain).unwrap();
        let first = run.run(sb, &fast).unwrap();
        let second = run.run(sb, &fast).unwrap();
        // (The first fast run may use a header already: the prefix of an earlier file.)
        assert!(!before.precompiled_header);
        assert_eq!(
            second.precompiled_header, prefix,
            "{name}: {:?}",
            second.message
        );
        let measured = second.outcome != Outcome::CompileError;
        assert!(
            !before.gcov_read && second.gcov_read == measured,
            "{name}: gcov's output read here"
        );
        assert_eq!(reading(&before), reading(&first), "{name}: first fast run");
        assert_eq!(
            reading(&before),
            reading(&second),
            "{name}: with its header"
        );
        if before.outcome != Outcome::CompileError {
            assert_eq!(before.message, second.message, "{name}");
        }
    }
}

#[test]
fn fast_builds_read_the_same_on_the_fixture() {
    let Some(sb) = ready() else { return };
    let project = fixture();
    let mut runs: Vec<GtestRun> = [
        "tests/ring_buffer_test.cc",
        "tests/tokenizer_test.cc",
        "tests/tokenizer_unittest.cc",
        "tests/histogram_unittest.cc",
        "tests/orphan_test.cc",
        "tests/small_vector_test.cc",
    ]
    .iter()
    .map(|t| own_test(&project, t))
    .collect();
    // A failing test, and one that does not compile (in its body, after the prefix).
    let histogram =
        std::fs::read_to_string(project.repo.join("tests/histogram_unittest.cc")).unwrap();
    runs.push(candidate(
        &project,
        "tests/tmp_cand_failing_test.cc",
        format!("{histogram}\nnamespace {{\nTEST(Extra, Fails) {{ EXPECT_EQ(1, 2); }}\n}}\n")
            .into_bytes(),
    ));
    runs.push(candidate(
        &project,
        "tests/tmp_cand_broken_test.cc",
        format!("{histogram}\nTEST(Extra, Broken) {{ undeclared(); }}\n").into_bytes(),
    ));
    // A header-only template instantiated by a candidate whose prefix holds its header, and
    // a candidate that uses a name before GoogleTest's include (no prefix with it, then).
    runs.push(candidate(
        &project,
        "tests/tmp_cand_vector_test.cc",
        b"// A candidate of our own.\n#include <string>\n#include \"small_vector.h\"\n\
          #include \"gtest/gtest.h\"\n\nTEST(Mine, Grows) {\n  textkit::SmallVector<int, 2> v;\n  \
          for (int i = 0; i < 5; ++i) v.push_back(i);\n  EXPECT_EQ(v.size(), 5u);\n}\n"
            .to_vec(),
    ));
    runs.push(candidate(
        &project,
        "tests/tmp_cand_macro_test.cc",
        b"#define GTEST_DONT_DEFINE_FAIL 1\n#include \"gtest/gtest.h\"\n#include \"histogram.h\"\n\
          TEST(Mine, Counts) {\n  textkit::Histogram h(0.0, 1.0, 2);\n  h.Add(0.2);\n  \
          EXPECT_EQ(h.count(), 1u);\n}\n"
            .to_vec(),
    ));
    let prefix = [true, true, true, true, true, true, true, true, true, false];
    same_with_and_without(&sb, &runs, &prefix);
}

#[test]
fn fast_builds_read_the_same_on_the_googletest_samples() {
    let Some(sb) = ready() else { return };
    let Some(samples) = common::samples_dir() else {
        return;
    };
    let project = common::samples_project(samples);
    let tests = [
        "sample1_unittest.cc",
        "sample2_unittest.cc",
        "sample4_unittest.cc",
    ];
    let runs: Vec<GtestRun> = tests.iter().map(|t| own_test(&project, t)).collect();
    same_with_and_without(&sb, &runs, &[true; 3]);
}

/// One header per prefix and flags, whatever the number of candidates and threads; a new
/// process finds it on disk; another flag or another prefix is another header.
#[test]
fn a_precompiled_header_is_built_once_per_prefix_and_flags() {
    let Some(sb) = ready() else { return };
    let project = fixture();
    let dir = tempfile::tempdir().unwrap();
    let cache = LibraryCache::new(dir.path()).unwrap();
    let run = own_test(&project, "tests/ring_buffer_test.cc");
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                let r = run.run(&sb, &cache).unwrap();
                assert_eq!(r.outcome, Outcome::Passed, "{:?}", r.message);
            });
        }
    });
    let r = run.run(&sb, &cache).unwrap();
    assert!(r.precompiled_header, "{:?}", r.message);
    assert_eq!(cache.precompiled_header_builds(), 1);
    // Another name in the same folder, the same prefix: the same header.
    let mut renamed = run.clone();
    renamed.test_file.path = "tests/tmp_cand_ring_test.cc".into();
    assert!(renamed.run(&sb, &cache).unwrap().precompiled_header);
    assert_eq!(cache.precompiled_header_builds(), 1);

    let again = LibraryCache::new(dir.path()).unwrap();
    let r = run.run(&sb, &again).unwrap();
    assert!(r.precompiled_header, "found on disk: {:?}", r.message);
    assert_eq!(again.precompiled_header_builds(), 0);

    let flagged = CppProject {
        cxxflags: vec!["-std=c++17".into(), "-O0".into(), "-DCLOVER_TEST=1".into()],
        ..project.clone()
    };
    let other = own_test(&flagged, "tests/ring_buffer_test.cc");
    other.run(&sb, &again).unwrap();
    assert!(other.run(&sb, &again).unwrap().precompiled_header);
    assert_eq!(
        again.precompiled_header_builds(),
        1,
        "a flag is another header"
    );
    let histogram = own_test(&project, "tests/histogram_unittest.cc");
    histogram.run(&sb, &again).unwrap();
    assert!(histogram.run(&sb, &again).unwrap().precompiled_header);
    assert_eq!(
        again.precompiled_header_builds(),
        2,
        "a prefix is another header"
    );
}

/// A `.gch` the compiler will not use is read as text, with the same result, and the result
/// says so; a prefix that does not build is no header, and the candidate fails to compile as
/// it would without one.
#[test]
fn an_unusable_precompiled_header_is_compiled_without() {
    let Some(sb) = ready() else { return };
    let project = fixture();
    let dir = tempfile::tempdir().unwrap();
    let cache = LibraryCache::new(dir.path()).unwrap();
    let run = own_test(&project, "tests/histogram_unittest.cc");
    let plain = run.run(&sb, &cache).unwrap();
    assert!(run.run(&sb, &cache).unwrap().precompiled_header);
    // Every stored header, spoiled.
    let spoil = || {
        let mut spoiled = 0;
        for e in std::fs::read_dir(dir.path().join("pch")).unwrap().flatten() {
            let gch = e.path().join("clover-pch.h.gch");
            if gch.is_file() {
                std::fs::write(&gch, "not a header").unwrap();
                spoiled += 1;
            }
        }
        spoiled
    };
    assert_eq!(spoil(), 1);
    let again = LibraryCache::new(dir.path()).unwrap();
    let r = run.run(&sb, &again).unwrap();
    assert!(!r.precompiled_header);
    let why = r.message.as_deref().unwrap_or_default();
    assert!(
        why.starts_with("compiled without a precompiled header: the compiler rejected it:")
            && why.contains("PCH file"),
        "{why}"
    );
    assert_eq!(reading(&r), reading(&plain));

    // Under -Werror, GCC's word on a header it will not use would fail the compile: it is
    // not asked for, and the candidate passes as without the header.
    let strict = CppProject {
        cxxflags: vec!["-std=c++17".into(), "-O0".into(), "-Werror".into()],
        ..project.clone()
    };
    let run = own_test(&strict, "tests/histogram_unittest.cc");
    run.run(&sb, &again).unwrap();
    assert!(run.run(&sb, &again).unwrap().precompiled_header);
    assert_eq!(spoil(), 2);
    let r = run
        .run(&sb, &LibraryCache::new(dir.path()).unwrap())
        .unwrap();
    assert_eq!(reading(&r), reading(&plain), "{:?}", r.message);

    let missing = candidate(
        &project,
        "tests/tmp_cand_missing_test.cc",
        b"#include \"no_such_header.h\"\n#include \"gtest/gtest.h\"\nTEST(A, B) {}\n".to_vec(),
    );
    let first = missing.run(&sb, &cache).unwrap();
    let second = missing.run(&sb, &cache).unwrap();
    assert_eq!(first.outcome, Outcome::CompileError);
    assert_eq!(
        (second.outcome, &second.message),
        (first.outcome, &first.message)
    );
    assert!(!second.precompiled_header);
}
