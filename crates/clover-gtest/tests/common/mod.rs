//! The GoogleTest samples that Debian's googletest package ships, as a C++ project: shared by
//! the test crates here and the C++ bench example (`#[path]`).

use std::path::Path;
use std::time::Duration;

use clover_gtest::CppProject;
use clover_sandbox::{Limits, Sandbox};

/// Where Debian's googletest package puts its samples.
pub const SAMPLES_DIR: &str = "/usr/src/googletest/googletest/samples";

/// The samples in `dir` as a project: each `*_unittest.cc` with its source, linked with
/// `gtest_main`.
#[allow(dead_code)] // the mutant suite builds its own project
pub fn samples_project(dir: &Path) -> CppProject {
    CppProject {
        repo: dir.into(),
        cxx: "g++".into(),
        cxxflags: vec!["-std=c++17".into()],
        include_dirs: vec![".".into()],
        source_dirs: vec![".".into()],
        test_globs: vec!["*_unittest.cc".into()],
        excludes: Vec::new(),
        link: vec!["gtest_main".into(), "gtest".into(), "pthread".into()],
        env: Vec::new(),
    }
}

/// The samples' folder, when the package is installed (required with CLOVER_REQUIRE_TOOLS).
#[allow(dead_code)] // the bench example passes its own folder
pub fn samples_dir() -> Option<&'static Path> {
    let samples = Path::new(SAMPLES_DIR);
    clover_testkit::require(
        "the GoogleTest samples (Debian googletest)",
        samples
            .join("sample1_unittest.cc")
            .exists()
            .then_some(samples),
    )
}

/// A sandbox for the GoogleTest suites, when root and a C++ toolchain are there (required with
/// CLOVER_REQUIRE_TOOLS).
#[allow(dead_code)] // the bench example starts its own
pub fn ready() -> Option<Sandbox> {
    clover_testkit::root()?;
    clover_testkit::cpp_toolchain()?;
    match Sandbox::new() {
        Ok(sb) => Some(sb),
        Err(e) => clover_testkit::require(&format!("the sandbox ({e})"), None),
    }
}

/// Limits roomy enough for a loaded machine to build and run a test file.
#[allow(dead_code)] // the bench example sets its own
pub fn limits() -> Limits {
    Limits {
        wall: Duration::from_secs(300),
        cpu_secs: 300,
        ..Limits::default()
    }
}
