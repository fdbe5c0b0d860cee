//! A small GoogleTest repository whose focal source is a header-only class, for the C++
//! mutation tests of a header (calibrate's `--mutants`, sandbox-run's `--mutation`, the
//! runner's mutant harness): the header, one library source that includes it, another that
//! does not, the header's test and the manifest, written below a folder.
//!
//! A mutant of the header must reach every object that includes it: `kReserve` is read only
//! by `src/headroom.cc`, so a mutant of it is killed only when that library object is compiled
//! again with the mutated header.

use std::path::{Path, PathBuf};

/// Where the header is, relative to the repository.
pub const HEADER_PATH: &str = "src/counter.h";

/// The focal source: a counter up to a limit, header-only. `Add`'s `>` → `>=` refuses
/// `Add(1)` at 2 of 3, which the test checks; `full`'s `>=` → `>` is the same at the one
/// count the test asks (2 of 3), so it survives; `Label`'s `"n=" - ...` does not compile.
pub const HEADER: &str = "#pragma once\n\n#include <string>\n\n\
// What a counter keeps back from its limit, read by Headroom only.\n\
constexpr int kReserve = 1;\n\n\
class Counter {\n public:\n  explicit Counter(int limit) : limit_(limit) {}\n\
  bool Add(int n) {\n    if (count_ + n > limit_) return false;\n    count_ += n;\n    return true;\n  }\n\
  int count() const { return count_; }\n  int limit() const { return limit_; }\n\
  bool full() const { return count_ >= limit_; }\n\
  std::string Label() const { return \"n=\" + std::to_string(count_); }\n\n\
 private:\n  int limit_;\n  int count_ = 0;\n};\n\n\
int Headroom(const Counter& c);\n";

/// The library source that includes the header.
pub const HEADROOM: &str = "#include \"counter.h\"\n\n\
int Headroom(const Counter& c) { return c.limit() - c.count() - kReserve; }\n";

/// A library source that does not include the header.
pub const OTHER: &str = "int Seven() { return 7; }\n";

/// Where the ground-truth test is, relative to the repository.
pub const TEST_PATH: &str = "tests/counter_test.cc";

/// The ground-truth test.
pub const TEST: &str = "#include <gtest/gtest.h>\n\n#include \"counter.h\"\n\n\
TEST(Counter, Adds) {\n  Counter c(3);\n  EXPECT_TRUE(c.Add(2));\n  EXPECT_FALSE(c.Add(2));\n\
  EXPECT_FALSE(c.full());\n  EXPECT_TRUE(c.Add(1));\n  EXPECT_EQ(c.Label(), \"n=3\");\n}\n\n\
TEST(Counter, Headroom) {\n  Counter c(5);\n  c.Add(1);\n  EXPECT_EQ(Headroom(c), 3);\n}\n";

/// A test that runs every line of the header and checks nothing.
pub const HOLLOW: &str = "#include <gtest/gtest.h>\n\n#include \"counter.h\"\n\n\
TEST(Counter, Runs) {\n  Counter c(3);\n  c.Add(2);\n  c.Add(2);\n  c.full();\n  c.Add(1);\n  c.Label();\n\
  Headroom(c);\n}\n";

/// Writes the repository to `dir/counter` and returns that folder.
pub fn write_repo(dir: &Path) -> PathBuf {
    super::write_cpp_repo(
        dir,
        "counter",
        &[
            (HEADER_PATH, HEADER),
            ("src/headroom.cc", HEADROOM),
            ("src/other.cc", OTHER),
            (TEST_PATH, TEST),
        ],
    )
}
