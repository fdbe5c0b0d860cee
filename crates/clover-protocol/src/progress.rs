//! Progress of a stage over its input: a bar on a terminal, a plain line now and then in a
//! batch log.
//!
//! On a terminal (stderr) an `indicatif` bar shows records done of the total, the rate and
//! the time left. Elsewhere (Slurm, CI, `2> log`) a line every `--progress-every` seconds
//! says the same in words, so a long run's log shows that it moves; `0` turns the lines off.
//! The total is the number of non-blank lines of the input file, counted when the stage
//! opens it; on stdin it is unknown and only the count and rate are shown.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Records done of a stage's input, shown as a bar or as periodic lines.
#[derive(Debug)]
pub struct Progress {
    tool: String,
    total: Option<u64>,
    done: u64,
    started: Instant,
    /// When the last plain line was written (or the start).
    said: Instant,
    /// Between two plain lines; `None`: no plain lines.
    every: Option<Duration>,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// Progress of `tool` over `total` records (when known): a bar when stderr is a terminal,
    /// else a line every `every` (none when it is zero).
    pub fn new(tool: &str, total: Option<u64>, every: Duration) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = match total {
                Some(n) => indicatif::ProgressBar::new(n),
                None => indicatif::ProgressBar::new_spinner(),
            };
            let template = match total {
                Some(_) => "{prefix}: [{bar:30}] {pos}/{len} records, {per_sec}, ETA {eta}",
                None => "{prefix}: {spinner} {pos} records, {per_sec}",
            };
            bar.set_style(
                indicatif::ProgressStyle::with_template(template)
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(tool.to_string());
            bar
        });
        let now = Instant::now();
        Progress {
            tool: tool.to_string(),
            total,
            done: 0,
            started: now,
            said: now,
            every: (!every.is_zero()).then_some(every),
            bar,
        }
    }

    /// Counts `n` more records done.
    pub fn advance(&mut self, n: u64) {
        self.done += n;
        if let Some(bar) = &self.bar {
            bar.inc(n);
            return;
        }
        if let Some(every) = self.every {
            if self.said.elapsed() >= every {
                self.said = Instant::now();
                crate::diag!("{}: progress: {}", self.tool, self.line());
            }
        }
    }

    /// What a plain progress line says: done (of total, with percent), rate, time left.
    pub fn line(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        let rate = if secs > 0.0 {
            self.done as f64 / secs
        } else {
            0.0
        };
        match self.total {
            Some(total) if total > 0 => {
                let left = total.saturating_sub(self.done);
                let eta = if rate > 0.0 {
                    format_secs(left as f64 / rate)
                } else {
                    "unknown".into()
                };
                format!(
                    "{}/{} records ({:.0}%), {rate:.1}/s, ETA {eta}",
                    self.done,
                    total,
                    100.0 * self.done as f64 / total as f64
                )
            }
            _ => format!("{} records, {rate:.1}/s", self.done),
        }
    }

    /// Ends the bar (a plain log needs no last line: the stage's summary follows).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// Seconds as `1h02m`, `3m05s` or `42s`.
fn format_secs(s: f64) -> String {
    let s = s.round() as u64;
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// The non-blank lines of the file at `path`: the records a stage will read from it (bad
/// lines included). `None` when it cannot be read as a file.
pub fn count_records(path: &std::path::Path) -> Option<u64> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let (mut n, mut blank) = (0u64, true);
    loop {
        let buf = reader.fill_buf().ok()?;
        if buf.is_empty() {
            break;
        }
        for &b in buf {
            if b == b'\n' {
                n += u64::from(!blank);
                blank = true;
            } else if !b.is_ascii_whitespace() {
                blank = false;
            }
        }
        let len = buf.len();
        reader.consume(len);
    }
    Some(n + u64::from(!blank))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_done_total_rate_and_time_left() {
        let mut p = Progress::new("t", Some(10), Duration::ZERO);
        p.bar = None;
        p.started -= Duration::from_secs(4);
        p.advance(2);
        assert_eq!(p.line(), "2/10 records (20%), 0.5/s, ETA 16s");
        let mut q = Progress::new("t", None, Duration::ZERO);
        q.bar = None;
        q.advance(3);
        assert!(q.line().starts_with("3 records, "), "{}", q.line());
        assert_eq!(format_secs(185.0), "3m05s");
        assert_eq!(format_secs(3725.0), "1h02m");
    }

    #[test]
    fn records_are_the_non_blank_lines() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("in.jsonl");
        std::fs::write(&f, "{}\n\n  \n{}\n{}").unwrap();
        assert_eq!(count_records(&f), Some(3));
        assert_eq!(count_records(dir.path()), None);
    }
}
