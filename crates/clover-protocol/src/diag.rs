//! Diagnostics to stderr that never end the program.
//!
//! `eprintln!` panics when stderr cannot be written, and a panic is exit 101: a stage whose
//! stderr reader went away (`2> >(head -1)`, a closed log pipe) would stop in the middle of
//! its records. The messages are about the work, not the work itself, so a stage whose
//! stderr is gone goes on, writes its records to stdout and ends with the exit code it would
//! have had — as a closed stdout is a clean end ([`crate::finish_main`]), a closed stderr is
//! no end at all. Every line a stage prints to stderr goes through [`diag!`](crate::diag).

use std::io::Write;

/// Writes one line to stderr, like `eprintln!`, but a failed write is ignored instead of
/// panicking: see the [module documentation](self).
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::write_diag(::std::format_args!($($arg)*))
    };
}

/// What [`diag!`](crate::diag) calls: one line, written under the stderr lock so lines of
/// several threads do not interleave. The write's error is dropped on purpose.
pub fn write_diag(line: std::fmt::Arguments<'_>) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Tidy: no program of the suite prints to stderr with `eprint!`/`eprintln!`, which would
    /// panic (exit 101) when stderr is closed; they use `diag!`. Tests, examples and the test
    /// kit may: they do not run in anyone's pipeline.
    #[test]
    fn programs_print_diagnostics_through_diag() {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&crates).unwrap().flatten() {
            let src = entry.path().join("src");
            if src.is_dir() && entry.file_name() != "clover-testkit" {
                rust_files(&src, &mut files);
            }
        }
        assert!(files.len() > 20, "found only {} source files", files.len());
        // Spelled in two halves, so this file does not find itself.
        let needles = [concat!("eprint", "ln!("), concat!("eprint", "!(")];
        let mut found = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if !code.starts_with("//") && needles.iter().any(|needle| code.contains(needle)) {
                    found.push(format!("{}:{}: {code}", file.display(), n + 1));
                }
            }
        }
        assert!(
            found.is_empty(),
            "use clover_protocol::diag! instead:\n{}",
            found.join("\n")
        );
    }
}
