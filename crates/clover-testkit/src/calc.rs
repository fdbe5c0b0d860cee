//! A small GoogleTest repository of its own for the C++ mutation tests (calibrate's
//! `--mutants`, sandbox-run's `--mutation`): one source, its header, its test and the
//! manifest, written below a folder.

use std::path::{Path, PathBuf};

/// The focal source. `Clamp`'s `v > hi` and `v >= hi` are the same function (at `v == hi`
/// both give `hi`); `Greet` joins strings, where `+` → `-` does not compile.
pub const SOURCE: &str = "#include \"calc.h\"\n\n\
int Clamp(int v, int hi) {\n  if (v > hi) return hi;\n  return v;\n}\n\n\
std::string Greet(const std::string& name) { return \"hi \" + name; }\n";

/// Where the ground-truth test is, relative to the repository.
pub const TEST_PATH: &str = "tests/calc_test.cc";

/// The ground-truth test, which kills every mutant of `SOURCE` but the equivalent one.
pub const TEST: &str = "#include <gtest/gtest.h>\n\n#include \"calc.h\"\n\n\
TEST(Calc, Clamps) { EXPECT_EQ(Clamp(5, 3), 3); EXPECT_EQ(Clamp(1, 3), 1); }\n\n\
TEST(Calc, Greets) { EXPECT_EQ(Greet(\"bo\"), \"hi bo\"); }\n";

/// Writes the repository to `dir/calc` and returns that folder.
pub fn write_repo(dir: &Path) -> PathBuf {
    super::write_cpp_repo(
        dir,
        "calc",
        &[
            (
                "src/calc.h",
                "#include <string>\n\nint Clamp(int v, int hi);\n\
                 std::string Greet(const std::string& name);\n",
            ),
            ("src/calc.cc", SOURCE),
            (TEST_PATH, TEST),
        ],
    )
}
