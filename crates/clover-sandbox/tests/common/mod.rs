//! The GoogleTest samples that Debian's googletest package ships, as a C++ project: shared by
//! the test crates here and the C++ bench example (`#[path]`).

use std::path::Path;

use clover_sandbox::gtest::CppProject;

/// Where Debian's googletest package puts its samples.
pub const SAMPLES_DIR: &str = "/usr/src/googletest/googletest/samples";

/// The samples in `dir` as a project: each `*_unittest.cc` with its source, linked with
/// `gtest_main`.
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
