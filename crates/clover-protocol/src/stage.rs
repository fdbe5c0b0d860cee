//! What every stage binary shares: the input/output flags, resume, shards, the error policy
//! for bad records, exit codes, and the end of `main`.

use std::collections::HashSet;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::jsonl::{RecordError, RecordReader, RecordWriter, DEFAULT_MAX_LINE_BYTES};
use crate::progress::Progress;
use crate::records::Record;
use crate::shard::Shard;

/// Exit codes every clover tool uses. Documented in `docs/ERRORS.md`.
pub mod exit {
    /// Everything was processed.
    pub const OK: u8 = 0;
    /// A fatal error: unreadable input file, unwritable output, an internal failure.
    pub const FAILURE: u8 = 1;
    /// Bad usage: unknown flag, invalid value, a manifest that does not parse.
    pub const USAGE: u8 = 2;
    /// The stage finished, but some input records were rejected and reported (skip mode).
    pub const BAD_RECORDS: u8 = 3;
    /// The stage stopped at the first bad input record (`--on-error stop`).
    pub const STOPPED: u8 = 4;
}

/// What a stage does with a record it cannot read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OnError {
    /// Report it on stderr, go on with the next record, exit with code 3 at the end.
    #[default]
    Skip,
    /// Report it and stop with exit code 4; the output written so far stays valid.
    Stop,
}

/// A path given on the command line, as the shell means it: a relative one is taken from the
/// current folder now, before the stage changes folder or hands it into a sandbox, whose view
/// has no current folder of the caller's. The folder that holds it is resolved (symlinks,
/// `..`), its last part is kept as given: a virtual environment's `bin/python` is a symlink
/// that must stay one to find its environment. `-` (standard input or output) stays `-`.
/// For clap's `value_parser`.
pub fn resolved_path(arg: &str) -> Result<PathBuf, String> {
    let path = std::path::Path::new(arg);
    if arg == "-" || arg.is_empty() {
        return Ok(path.to_path_buf());
    }
    let absolute = std::path::absolute(path).map_err(|e| format!("{arg}: {e}"))?;
    let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        return Ok(absolute);
    };
    Ok(match parent.canonicalize() {
        Ok(folder) => folder.join(name),
        // A folder that is not there yet (an output's): `..` and `.` taken as written.
        Err(_) => lexically_normal(&absolute),
    })
}

/// `path` without `.` parts, each `..` taking away the part before it (no symlink is read).
pub fn lexically_normal(path: &std::path::Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The flags of a stage that reads records and writes records.
#[derive(Debug, Clone, clap::Args)]
pub struct StageArgs {
    /// Input JSON Lines file; `-` or nothing reads stdin.
    #[arg(value_name = "INPUT", value_parser = resolved_path)]
    pub input: Option<PathBuf>,
    /// Write records to FILE (through FILE.partial, renamed when done) instead of stdout.
    #[arg(short, long, value_name = "FILE", value_parser = resolved_path)]
    pub output: Option<PathBuf>,
    /// Keep the records already in the output file and skip their ids (needs -o).
    #[arg(long, requires = "output")]
    pub resume: bool,
    /// Process only shard K of N (0-based): ids whose FNV-1a 64 hash mod N is K (the chunks
    /// of one C++ source go by the id of their whole file).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// What to do with a bad input record.
    #[arg(long, value_enum, default_value_t = OnError::Skip)]
    pub on_error: OnError,
    /// Reject input lines longer than this many bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES, value_name = "BYTES")]
    pub max_line_bytes: usize,
    /// When stderr is not a terminal, a progress line every SECS seconds (0: none); on a
    /// terminal a progress bar instead.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub progress_every: f64,
}

/// A bad record made the stage stop (`--on-error stop`).
#[derive(Debug, thiserror::Error)]
#[error("stopped at the first bad record (--on-error stop)")]
pub struct Stopped;

/// Bad usage found after the flags parsed: a repository that cannot be opened or described,
/// an interpreter that cannot run the tests. [`finish_main`] exits with [`exit::USAGE`], as
/// for a bad flag, so that one mistake has one code in every stage.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

impl Usage {
    /// `e` (its whole chain, as one message) as bad usage.
    pub fn from_error(e: impl Into<anyhow::Error>) -> anyhow::Error {
        Usage(format!("{:#}", e.into())).into()
    }
}

/// The open input and output of a running stage, with the bookkeeping of bad records.
#[derive(Debug)]
pub struct StageIo {
    tool: String,
    reader: RecordReader<Box<dyn io::BufRead>>,
    pub writer: RecordWriter,
    done: HashSet<String>,
    shard: Option<Shard>,
    on_error: OnError,
    bad: BadRecords,
    progress: Progress,
    /// Whether progress counts records written ([`StageIo::write`]) rather than read.
    progress_on_writes: bool,
}

/// Bad records reported on stderr and counted. A file of the wrong kind (an instances file
/// fed to score) is said once, with what the file is and what to run on it, and not once per
/// line: the repeats are counted and summed up at the end.
#[derive(Debug, Default)]
pub struct BadRecords {
    /// Every bad record, printed or not.
    pub count: u64,
    /// Per wrong kind found: the lines of that kind after the first one printed.
    repeats: std::collections::BTreeMap<String, u64>,
}

impl BadRecords {
    /// Reports `e` as `tool`'s error (unless it repeats a wrong kind already said) and
    /// counts it.
    pub fn report(&mut self, tool: &str, e: &RecordError) {
        self.count += 1;
        if let RecordError::WrongKind { found, .. } = e {
            if let Some(n) = self.repeats.get_mut(found) {
                *n += 1;
                return;
            }
            self.repeats.insert(found.clone(), 0);
        }
        crate::diag!("{tool}: error: {e}");
    }

    /// The repeats not printed, one line per kind.
    pub fn summarize(&self, tool: &str) {
        for (kind, n) in self.repeats.iter().filter(|(_, n)| **n > 0) {
            crate::diag!("{tool}: error: {n} more `{kind}` record(s) skipped for the same reason");
        }
    }
}

impl StageIo {
    /// Opens the input and output that `args` name. `tool` prefixes diagnostics.
    pub fn open(tool: &str, args: &StageArgs) -> io::Result<Self> {
        let reader = RecordReader::open(args.input.as_deref(), args.max_line_bytes)?;
        let total = args
            .input
            .as_deref()
            .and_then(crate::progress::count_records);
        let every = Duration::try_from_secs_f64(args.progress_every).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "--progress-every takes a number of seconds, 0 or more",
            )
        })?;
        let (writer, done) = match &args.output {
            Some(path) => RecordWriter::create(path, args.resume)?,
            None => (RecordWriter::stdout(), HashSet::new()),
        };
        Ok(StageIo {
            tool: tool.to_string(),
            reader,
            writer,
            done,
            shard: args.shard,
            on_error: args.on_error,
            bad: BadRecords::default(),
            progress: Progress::new(tool, total, every),
            progress_on_writes: false,
        })
    }

    /// Counts progress by the records written through [`StageIo::write`] instead of those
    /// read: for a stage that writes one record per input record and reads ahead of its
    /// work (a window of runs in flight), so the count says what is done.
    pub fn progress_on_writes(&mut self) {
        self.progress_on_writes = true;
    }

    /// Writes `record` to the output (and counts it, see [`StageIo::progress_on_writes`]).
    pub fn write<R: Record>(&mut self, record: &R) -> io::Result<()> {
        self.writer.write(record)?;
        if self.progress_on_writes {
            self.progress.advance(1);
        }
        Ok(())
    }

    /// The next record of this shard (by [`Record::shard_key`]), with its line number. Bad records are reported and
    /// skipped, or end the stage with [`Stopped`], as the error policy says.
    pub fn next_record<T: Record>(&mut self) -> anyhow::Result<Option<(u64, T)>> {
        loop {
            let next = self.reader.next_record::<T>();
            if next.is_some() && !self.progress_on_writes {
                self.progress.advance(1);
            }
            match next {
                None => return Ok(None),
                Some(Ok((line, record))) => {
                    if self.shard.is_some_and(|s| !s.contains(&record.shard_key())) {
                        continue;
                    }
                    return Ok(Some((line, record)));
                }
                Some(Err(e)) => {
                    if !e.is_recoverable() {
                        return Err(e.into());
                    }
                    self.report(&e);
                    if self.on_error == OnError::Stop {
                        return Err(Stopped.into());
                    }
                }
            }
        }
    }

    /// Reports a bad record on stderr and counts it.
    pub fn report(&mut self, e: &RecordError) {
        self.bad.report(&self.tool, e);
    }

    /// Reports a record that could not be processed (not an input error) and counts it.
    pub fn report_failed(&mut self, line: u64, id: &str, why: &dyn std::fmt::Display) {
        self.bad.count += 1;
        crate::diag!(
            "{}: error: {}:{line} (id {id}): {why}",
            self.tool,
            self.reader.source_name()
        );
    }

    /// Rejects a record that was read but cannot be used (it names an unknown repository,
    /// say): reports it like a bad line and, under `--on-error stop`, ends the stage with
    /// [`Stopped`].
    pub fn reject(
        &mut self,
        line: u64,
        id: &str,
        why: &dyn std::fmt::Display,
    ) -> anyhow::Result<()> {
        self.report_failed(line, id, why);
        if self.on_error == OnError::Stop {
            return Err(Stopped.into());
        }
        Ok(())
    }

    /// Whether an earlier run (`--resume`) already wrote a record with this id.
    pub fn is_done(&self, id: &str) -> bool {
        self.done.contains(id)
    }

    /// Ids an earlier run already wrote.
    pub fn done_ids(&self) -> &HashSet<String> {
        &self.done
    }

    /// Whether this shard holds `id` (always, without `--shard`).
    pub fn in_shard(&self, id: &str) -> bool {
        self.shard.is_none_or(|s| s.contains(id))
    }

    /// Finishes the output and returns the exit code the stage ends with.
    pub fn finish(mut self) -> io::Result<u8> {
        self.progress.finish();
        self.writer.finish()?;
        self.bad.summarize(&self.tool);
        Ok(if self.bad.count > 0 {
            crate::diag!(
                "{}: {} bad record(s) reported above",
                self.tool,
                self.bad.count
            );
            exit::BAD_RECORDS
        } else {
            exit::OK
        })
    }
}

/// The end of every clover `main`: prints the error chain, maps it to an exit code, and exits 0
/// when the reader of our stdout went away (a broken pipe is how `| head` says "enough").
pub fn finish_main(tool: &str, result: anyhow::Result<u8>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::from(exit::OK);
            }
            if e.downcast_ref::<Stopped>().is_some() {
                crate::diag!("{tool}: {e}");
                return ExitCode::from(exit::STOPPED);
            }
            if e.chain().any(|c| c.is::<Usage>()) {
                crate::diag!("{tool}: error: {e:#}");
                return ExitCode::from(exit::USAGE);
            }
            crate::diag!("{tool}: error: {e:#}");
            ExitCode::from(exit::FAILURE)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{RecordKind, ScoreRow, Task, SCHEMA_VERSION};
    use clap::Parser;

    /// A relative path is taken from the current folder, through `..` and symlinked folders,
    /// its last part kept (a venv's `bin/python` symlink stays one); `-` stays standard input;
    /// a folder not made yet is taken as written.
    #[test]
    fn a_relative_path_means_what_it_means_in_the_shell() {
        let cwd = std::env::current_dir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(real.join("venv/bin")).unwrap();
        std::fs::write(real.join("python3.11"), "").unwrap();
        std::os::unix::fs::symlink(real.join("python3.11"), real.join("venv/bin/python")).unwrap();
        std::os::unix::fs::symlink(real.join("venv"), real.join("env")).unwrap();
        // The same place, spelt from the current folder: up to the root, then down.
        let up = "../".repeat(cwd.components().count() - 1);
        let rel = format!(
            "{up}{}/env/bin/../bin/python",
            real.display().to_string().trim_start_matches('/')
        );
        assert_eq!(resolved_path(&rel).unwrap(), real.join("venv/bin/python"));
        assert_eq!(resolved_path("-").unwrap(), PathBuf::from("-"));
        assert_eq!(
            resolved_path("not-made/a/../out.jsonl").unwrap(),
            cwd.join("not-made/out.jsonl")
        );
        assert_eq!(resolved_path("/abs/x").unwrap(), PathBuf::from("/abs/x"));
    }

    /// A wrong kind says whose output the file is and what comes between, once per kind.
    #[test]
    fn a_file_of_the_wrong_kind_is_said_once_with_the_stages_between() {
        use crate::jsonl::{pipeline_hint, Location};
        assert_eq!(
            pipeline_hint(RecordKind::RunResult, "instance"),
            "; this is pack-context's output: run generate, then sandbox-run on it first"
        );
        assert_eq!(
            pipeline_hint(RecordKind::Instance, "run_result"),
            "; this is sandbox-run's output, which comes later in the pipeline"
        );
        assert_eq!(pipeline_hint(RecordKind::Instance, "sft_example"), "");
        let wrong = |line: u64, found: &str| RecordError::WrongKind {
            at: Location {
                source: "in.jsonl".into(),
                line,
                id: None,
            },
            expected: RecordKind::RunResult,
            found: found.into(),
        };
        let mut bad = BadRecords::default();
        for line in 1..=84 {
            bad.report("t", &wrong(line, "instance"));
        }
        bad.report("t", &wrong(85, "problem"));
        assert_eq!(bad.count, 85);
        assert_eq!(
            bad.repeats
                .iter()
                .map(|(k, n)| (k.as_str(), *n))
                .collect::<Vec<_>>(),
            [("instance", 83), ("problem", 0)],
            "one line said per kind, the rest counted"
        );
    }

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        stage: StageArgs,
    }

    fn row(id: &str) -> String {
        serde_json::to_string(&ScoreRow {
            kind: RecordKind::ScoreRow,
            schema_version: SCHEMA_VERSION,
            id: id.into(),
            model: "m".into(),
            task: Task::CoverageTest,
            answer_format: String::new(),
            setting: "po".into(),
            repo: "*".into(),
            n: 1,
            metrics: Default::default(),
        })
        .unwrap()
    }

    /// Copies every record of `input` through a stage with `flags`; returns the ids written
    /// and the exit code (or the error).
    fn copy_through(input: &str, flags: &[&str]) -> (Vec<String>, Result<u8, String>) {
        let dir = tempfile::tempdir().unwrap();
        let inp = dir.path().join("in.jsonl");
        let out = dir.path().join("out.jsonl");
        std::fs::write(&inp, input).unwrap();
        let mut argv = vec![
            "stage".to_string(),
            inp.display().to_string(),
            "-o".into(),
            out.display().to_string(),
        ];
        argv.extend(flags.iter().map(|s| s.to_string()));
        let cli = Cli::try_parse_from(argv).unwrap();
        let mut io = StageIo::open("stage", &cli.stage).unwrap();
        let result = (|| -> anyhow::Result<u8> {
            while let Some((_, r)) = io.next_record::<ScoreRow>()? {
                io.writer.write(&r)?;
            }
            Ok(io.finish()?)
        })();
        let written = std::fs::read_to_string(&out)
            .or_else(|_| std::fs::read_to_string(crate::partial_path(&out)))
            .unwrap_or_default();
        let ids = written
            .lines()
            .map(|l| serde_json::from_str::<ScoreRow>(l).unwrap().id)
            .collect();
        (ids, result.map_err(|e| format!("{e:#}")))
    }

    #[test]
    fn skip_reports_and_goes_on_stop_stops_with_valid_output() {
        let input = format!("{}\nnot json\n{}\n", row("a"), row("b"));
        let (ids, code) = copy_through(&input, &[]);
        assert_eq!(ids, vec!["a", "b"]);
        assert_eq!(code, Ok(exit::BAD_RECORDS));
        let (ids, code) = copy_through(&input, &["--on-error", "stop"]);
        assert_eq!(ids, vec!["a"], "what was written before the stop stays");
        assert!(code
            .unwrap_err()
            .contains("stopped at the first bad record"));
        let (ids, code) = copy_through(&format!("{}\n", row("a")), &[]);
        assert_eq!((ids, code), (vec!["a".to_string()], Ok(exit::OK)));
    }

    #[test]
    fn shards_select_by_id_and_join_to_the_whole() {
        let ids: Vec<String> = (0..200).map(|i| format!("r/t.py::test_{i}")).collect();
        let input: String = ids.iter().map(|i| row(i) + "\n").collect();
        let mut joined = Vec::new();
        for k in 0..3 {
            let (got, code) = copy_through(&input, &["--shard", &format!("{k}/3")]);
            assert_eq!(code, Ok(exit::OK));
            assert!(got.iter().all(|id| Shard::of(id, 3) == k));
            joined.extend(got);
        }
        joined.sort();
        let mut all = ids.clone();
        all.sort();
        assert_eq!(joined, all);
    }

    #[test]
    fn flags_are_checked() {
        assert!(
            Cli::try_parse_from(["stage", "--resume"]).is_err(),
            "--resume needs -o"
        );
        assert!(Cli::try_parse_from(["stage", "--shard", "3/3"]).is_err());
        assert!(Cli::try_parse_from(["stage", "--on-error", "maybe"]).is_err());
    }

    #[test]
    fn a_broken_pipe_is_a_clean_exit() {
        let e = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe)).context("writing");
        assert_eq!(finish_main("t", Err(e)), ExitCode::from(exit::OK));
        assert_eq!(
            finish_main("t", Err(Stopped.into())),
            ExitCode::from(exit::STOPPED)
        );
        assert_eq!(
            finish_main("t", Err(anyhow::anyhow!("boom"))),
            ExitCode::from(exit::FAILURE)
        );
        assert_eq!(
            finish_main("t", Ok(exit::BAD_RECORDS)),
            ExitCode::from(exit::BAD_RECORDS)
        );
    }
}
