//! Test support shared by clover's crates (a dev-dependency only).
//!
//! `cargo xtask setup` installs what tests need and `cargo xtask test` tells them where, through
//! environment variables. A test that needs a tool asks here: when the tool is missing it is
//! skipped with a printed reason — unless `CLOVER_REQUIRE_TOOLS=1` (set by `cargo xtask test`
//! and so by CI), where a missing tool fails the test, so no check can quietly stop running.
//!
//! It deliberately holds no test logic: only where things are, the comparison of a suite run
//! bare with the same suite sandboxed ([`bare`]), a throwaway repository with
//! the checks that a hostile run was contained ([`contained`]), a fake chat-completions
//! server ([`fake_chat`]) that the tests of several crates talk to, and a pipe nobody reads
//! ([`closed_pipe`]) for the stages' closed-stderr tests.

use std::path::{Path, PathBuf};

pub mod bare;
pub mod calc;
pub mod contained;
pub mod counter;
pub mod fake_chat;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("clover-testkit lives in crates/")
        .to_path_buf()
}

/// Writes a small GoogleTest repository to `dir/name` — its manifest (library sources and
/// headers in `src`, tests in `tests`) and `files` (repository-relative path, text) — and
/// returns that folder.
fn write_cpp_repo(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = dir.join(name);
    let manifest = format!(
        "[[repo]]\nname = \"{name}\"\npath = \".\"\nlanguage = \"cpp\"\n\
         source_dirs = [\"src\"]\ntest_dirs = [\"tests\"]\ninclude_dirs = [\"src\"]\n\
         cxxflags = [\"-std=c++17\", \"-O0\"]\nlink = [\"gtest_main\", \"gtest\", \"pthread\"]\n"
    );
    for (path, text) in
        std::iter::once(("clover.toml", manifest.as_str())).chain(files.iter().copied())
    {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    root
}

/// A fixture repository, e.g. `fixture("python")`.
pub fn fixture(name: &str) -> PathBuf {
    workspace_root().join("fixtures").join(name)
}

/// A copy of the fixture repository `name` as `to` (which must not exist), for a test that
/// changes it.
pub fn copy_fixture(name: &str, to: &Path) -> PathBuf {
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(fixture(name))
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success(), "cannot copy the fixture {name}");
    to.to_path_buf()
}

/// Whether a missing tool must fail the test instead of skipping it.
pub fn tools_required() -> bool {
    std::env::var_os("CLOVER_REQUIRE_TOOLS").is_some_and(|v| v == "1")
}

/// `Some(value)`, or a skip (`None`, with the reason printed) or a failure when tools are
/// required.
pub fn require<T>(what: &str, value: Option<T>) -> Option<T> {
    if value.is_none() {
        if tools_required() {
            panic!("{what} is missing, and CLOVER_REQUIRE_TOOLS=1: run `cargo xtask setup`");
        }
        eprintln!("skipped: {what} is missing (run `cargo xtask setup`)");
    }
    value
}

fn from_env_or(var: &str, default: PathBuf) -> Option<PathBuf> {
    let p = std::env::var_os(var).map(PathBuf::from).unwrap_or(default);
    p.exists().then_some(p)
}

/// The Python of the test environment (pytest, pytest-cov, coverage, sentencepiece).
pub fn python() -> Option<PathBuf> {
    require(
        "the test Python environment",
        from_env_or(
            "CLOVER_PYTHON",
            workspace_root().join("target/clover-venv/bin/python"),
        ),
    )
}

/// uv, the installer `clover env` uses (`cargo xtask setup` puts it in target/clover-uv-venv).
pub fn uv() -> Option<PathBuf> {
    require(
        "uv (target/clover-uv-venv)",
        from_env_or(
            "CLOVER_UV",
            workspace_root().join("target/clover-uv-venv/bin/uv"),
        ),
    )
}

/// The Python 3.12 or later of the `sys.monitoring` test environment (pytest, pytest-cov,
/// coverage), which `cargo xtask setup` makes where the machine has such a Python.
pub fn sysmon_python() -> Option<PathBuf> {
    require(
        "a Python 3.12 or later with pytest (target/clover-sysmon-venv)",
        from_env_or(
            "CLOVER_SYSMON_PYTHON",
            workspace_root().join("target/clover-sysmon-venv/bin/python"),
        ),
    )
}

/// The Mistral-7B tokenizer model.
pub fn tokenizer_model() -> Option<PathBuf> {
    require(
        "the tokenizer model",
        from_env_or(
            "CLOVER_TOKENIZER",
            workspace_root().join("target/clover-data/tokenizer.model.v1"),
        ),
    )
}

/// The manifest of the corpus packages made ready by `cargo xtask corpus`.
pub fn corpus_manifest() -> Option<PathBuf> {
    require(
        "the corpus (cargo xtask corpus)",
        from_env_or(
            "CLOVER_CORPUS",
            workspace_root().join("target/corpus/clover.toml"),
        ),
    )
}

/// Whether we run as root (the sandbox needs it).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// `Some(())` when running as root; a skip or failure otherwise.
pub fn root() -> Option<()> {
    require("root (the sandbox needs it)", is_root().then_some(()))
}

/// `Some(())` when the C++ toolchain `cargo xtask setup` installs is there (g++, gcovr and
/// GoogleTest's headers); a skip or failure otherwise.
pub fn cpp_toolchain() -> Option<()> {
    for tool in [
        "/usr/bin/g++",
        "/usr/bin/gcovr",
        "/usr/include/gtest/gtest.h",
    ] {
        require(tool, Path::new(tool).exists().then_some(()))?;
    }
    Some(())
}

/// The write end of a pipe whose reader is already gone, for a child's stderr or stdout: every
/// write to it fails with EPIPE, from the first one on (`2> >(head -0)` without the race).
/// The reader is a `true` that exits without reading; std alone has no `pipe()` at the
/// workspace's MSRV.
pub fn closed_pipe() -> std::process::Stdio {
    let mut reader = std::process::Command::new("true")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("true runs");
    let writer = reader.stdin.take().expect("a piped stdin");
    reader.wait().expect("true ends");
    writer.into()
}
