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
