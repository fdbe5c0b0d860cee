//! Reading and writing records as JSON Lines.
//!
//! The reader never holds more than one line (capped at a configurable size) and reports every
//! problem with the input's name, the line number and, when it can be found, the record's id.
//! The writer flushes after every record, so a consumer downstream (or a rerun with `--resume`)
//! sees whole records as soon as they exist; given a path it writes `PATH.partial` and renames
//! it to `PATH` when the stage finishes, so `PATH` is only ever a complete output.

use std::collections::hash_map::Entry;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::records::{Record, RecordKind, SCHEMA_VERSION};

/// Lines longer than this are rejected unless a stage says otherwise.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// Where a record came from: input name, 1-based line number and, if known, the id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub source: String,
    pub line: u64,
    pub id: Option<String>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.source, self.line)?;
        if let Some(id) = &self.id {
            write!(f, " (id {id})")?;
        }
        Ok(())
    }
}

/// A record the reader could not accept.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{source_name}:{line}: cannot read input: {error}")]
    Io {
        source_name: String,
        line: u64,
        #[source]
        error: io::Error,
    },
    #[error("{at}: line is not valid UTF-8 (first bad byte at column {column})")]
    InvalidUtf8 { at: Location, column: usize },
    #[error(
        "{at}: line is longer than {limit} bytes; raise --max-line-bytes if it is meant to be"
    )]
    TooLong { at: Location, limit: usize },
    #[error("{at}: malformed JSON: {message}")]
    Malformed { at: Location, message: String },
    #[error(
        "{at}: expected a `{expected}` record, found kind `{found}`{}",
        pipeline_hint(*.expected, .found)
    )]
    WrongKind {
        at: Location,
        expected: RecordKind,
        found: String,
    },
    #[error("{at}: missing field `{field}`")]
    MissingField { at: Location, field: String },
    #[error("{at}: invalid `{expected}` record: {message}")]
    Invalid {
        at: Location,
        expected: RecordKind,
        message: String,
    },
    #[error(
        "{at}: schema_version {found} is newer than this build reads ({supported}); upgrade clover"
    )]
    NewerSchema {
        at: Location,
        found: u64,
        supported: u32,
    },
    #[error("{at}: duplicate id, first seen on line {first_line}")]
    DuplicateId { at: Location, first_line: u64 },
}

impl RecordError {
    /// The line the error is about.
    pub fn line(&self) -> u64 {
        match self {
            RecordError::Io { line, .. } => *line,
            RecordError::InvalidUtf8 { at, .. }
            | RecordError::TooLong { at, .. }
            | RecordError::Malformed { at, .. }
            | RecordError::WrongKind { at, .. }
            | RecordError::MissingField { at, .. }
            | RecordError::Invalid { at, .. }
            | RecordError::NewerSchema { at, .. }
            | RecordError::DuplicateId { at, .. } => at.line,
        }
    }

    /// The id of the record the error is about, when the line held one.
    pub fn id(&self) -> Option<&str> {
        match self {
            RecordError::Io { .. } => None,
            RecordError::InvalidUtf8 { at, .. }
            | RecordError::TooLong { at, .. }
            | RecordError::Malformed { at, .. }
            | RecordError::WrongKind { at, .. }
            | RecordError::MissingField { at, .. }
            | RecordError::Invalid { at, .. }
            | RecordError::NewerSchema { at, .. }
            | RecordError::DuplicateId { at, .. } => at.id.as_deref(),
        }
    }

    /// Whether reading can go on with the next line. An I/O error ends the input.
    pub fn is_recoverable(&self) -> bool {
        !matches!(self, RecordError::Io { .. })
    }
}

/// A raw line read by [`LineReader`].
enum RawLine {
    Line(Vec<u8>),
    TooLong,
}

/// Splits input into lines of at most `max` bytes without ever buffering more than that.
struct LineReader<R> {
    inner: R,
    max: usize,
}

impl<R: BufRead> LineReader<R> {
    /// The next line without its `\n` (and `\r`), or `None` at the end of input.
    fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<RawLine>> {
        buf.clear();
        let mut too_long = false;
        let mut read_any = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if !read_any {
                    return Ok(None);
                }
                break;
            }
            read_any = true;
            let (chunk, done) = match memchr(b'\n', available) {
                Some(i) => (&available[..i], Some(i + 1)),
                None => (available, None),
            };
            if !too_long {
                if buf.len() + chunk.len() > self.max {
                    too_long = true;
                    buf.clear();
                } else {
                    buf.extend_from_slice(chunk);
                }
            }
            let consumed = done.unwrap_or(available.len());
            self.inner.consume(consumed);
            if done.is_some() {
                break;
            }
        }
        if too_long {
            return Ok(Some(RawLine::TooLong));
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(Some(RawLine::Line(std::mem::take(buf))))
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// Reads records of one type from JSON Lines, checking kind, schema version and id uniqueness.
pub struct RecordReader<R> {
    lines: LineReader<R>,
    source: String,
    line: u64,
    buf: Vec<u8>,
    /// Every id read so far, as [`id_key`], with its line (saturating at `u32::MAX`): 16
    /// bytes an id, not the id's text, so a stage's memory barely grows with its input.
    seen: std::collections::HashMap<[u32; 3], u32>,
    done: bool,
}

/// An id as 96 bits of two independent hashes (FNV-1a's 64 and 32 of SipHash's): two
/// different ids of one input share a key with odds of about n²/2⁹⁷ (10⁻¹⁷ for a million).
fn id_key(id: &str) -> [u32; 3] {
    use std::hash::{Hash, Hasher};
    let mut sip = std::hash::DefaultHasher::new();
    id.hash(&mut sip);
    let fnv = crate::fnv1a64(id.as_bytes());
    [(fnv >> 32) as u32, fnv as u32, sip.finish() as u32]
}

impl<R> std::fmt::Debug for RecordReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordReader")
            .field("source", &self.source)
            .field("line", &self.line)
            .finish()
    }
}

impl RecordReader<Box<dyn BufRead>> {
    /// Opens a file, or stdin for `None` or `-`.
    pub fn open(path: Option<&Path>, max_line_bytes: usize) -> io::Result<Self> {
        match path {
            None => Ok(Self::new(
                Box::new(BufReader::with_capacity(1 << 16, io::stdin())),
                "<stdin>",
                max_line_bytes,
            )),
            Some(p) if p == Path::new("-") => Self::open(None, max_line_bytes),
            Some(p) => {
                let f = File::open(p).map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot open {}: {e}", p.display()))
                })?;
                Ok(Self::new(
                    Box::new(BufReader::with_capacity(1 << 16, f)),
                    &p.display().to_string(),
                    max_line_bytes,
                ))
            }
        }
    }
}

impl<R: BufRead> RecordReader<R> {
    pub fn new(inner: R, source: &str, max_line_bytes: usize) -> Self {
        RecordReader {
            lines: LineReader {
                inner,
                max: max_line_bytes,
            },
            source: source.to_string(),
            line: 0,
            buf: Vec::new(),
            seen: Default::default(),
            done: false,
        }
    }

    /// The number of the line read last.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The name of the input, as errors show it.
    pub fn source_name(&self) -> &str {
        &self.source
    }

    /// The next record, or `None` at the end of input. Blank lines are skipped. After an
    /// error, the next call goes on with the next line (except after an I/O error).
    pub fn next_record<T: Record>(&mut self) -> Option<Result<(u64, T), RecordError>> {
        loop {
            if self.done {
                return None;
            }
            self.line += 1;
            let raw = match self.lines.next_line(&mut self.buf) {
                Ok(Some(raw)) => raw,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(RecordError::Io {
                        source_name: self.source.clone(),
                        line: self.line,
                        error,
                    }));
                }
            };
            let at = |id: Option<String>| Location {
                source: self.source.clone(),
                line: self.line,
                id,
            };
            let bytes = match raw {
                RawLine::TooLong => {
                    return Some(Err(RecordError::TooLong {
                        at: at(None),
                        limit: self.lines.max,
                    }))
                }
                RawLine::Line(bytes) => bytes,
            };
            let text = match std::str::from_utf8(&bytes) {
                Ok(t) => t,
                Err(e) => {
                    return Some(Err(RecordError::InvalidUtf8 {
                        at: at(None),
                        column: e.valid_up_to() + 1,
                    }))
                }
            };
            if text.trim().is_empty() {
                continue;
            }
            let result = parse_line::<T>(text, at);
            let result = result.and_then(|record| {
                let id = record.id();
                match self.seen.entry(id_key(id)) {
                    Entry::Occupied(first) => Err(RecordError::DuplicateId {
                        at: at(Some(id.to_string())),
                        first_line: (*first.get()).into(),
                    }),
                    Entry::Vacant(slot) => {
                        slot.insert(u32::try_from(self.line).unwrap_or(u32::MAX));
                        Ok((self.line, record))
                    }
                }
            });
            return Some(result);
        }
    }
}

/// The stage that writes each kind of record, in pipeline order.
const PIPELINE: &[(RecordKind, &str)] = &[
    (RecordKind::Problem, "extract"),
    (RecordKind::CalibratedProblem, "calibrate"),
    (RecordKind::Instance, "pack-context"),
    (RecordKind::Response, "generate"),
    (RecordKind::RunResult, "sandbox-run"),
    (RecordKind::ScoreRow, "score"),
];

/// What a record of kind `found` given where `expected` was wanted says about the pipeline:
/// whose output it is and which stages come between (`; ` and a sentence), or nothing for a
/// kind outside the pipeline.
pub fn pipeline_hint(expected: RecordKind, found: &str) -> String {
    let at = |k: &str| PIPELINE.iter().position(|(kind, _)| kind.as_str() == k);
    let (Some(f), Some(e)) = (at(found), at(expected.as_str())) else {
        return String::new();
    };
    let producer = PIPELINE[f].1;
    if f < e {
        let between: Vec<&str> = PIPELINE[f + 1..=e].iter().map(|(_, s)| *s).collect();
        format!(
            "; this is {producer}'s output: run {} on it first",
            between.join(", then ")
        )
    } else {
        format!("; this is {producer}'s output, which comes later in the pipeline")
    }
}

/// Parses one line as a `T`, explaining a failure in the record's own terms.
fn parse_line<T: Record>(
    text: &str,
    at: impl Fn(Option<String>) -> Location,
) -> Result<T, RecordError> {
    // The common case parses once; only a failure pays for a second, looser parse that finds
    // the id and kind to explain what went wrong.
    let err = match serde_json::from_str::<T>(text) {
        Ok(record) => {
            if record.kind() != T::KIND {
                return Err(RecordError::WrongKind {
                    at: at(Some(record.id().to_string())),
                    expected: T::KIND,
                    found: record.kind().to_string(),
                });
            }
            if record.schema_version() > SCHEMA_VERSION {
                return Err(RecordError::NewerSchema {
                    at: at(Some(record.id().to_string())),
                    found: record.schema_version().into(),
                    supported: SCHEMA_VERSION,
                });
            }
            return Ok(record);
        }
        Err(e) => e,
    };
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Err(RecordError::Malformed {
                at: at(None),
                message: e.to_string(),
            })
        }
    };
    let id = value.get("id").and_then(|v| v.as_str()).map(str::to_string);
    let Some(object) = value.as_object() else {
        return Err(RecordError::Malformed {
            at: at(None),
            message: "a record must be a JSON object".into(),
        });
    };
    match object.get("kind").and_then(|k| k.as_str()) {
        Some(kind) if kind != T::KIND.as_str() => {
            return Err(RecordError::WrongKind {
                at: at(id),
                expected: T::KIND,
                found: kind.to_string(),
            })
        }
        None => {
            return Err(RecordError::MissingField {
                at: at(id),
                field: "kind".into(),
            })
        }
        Some(_) => {}
    }
    if let Some(v) = object.get("schema_version").and_then(|v| v.as_u64()) {
        if v > u64::from(SCHEMA_VERSION) {
            return Err(RecordError::NewerSchema {
                at: at(id),
                found: v,
                supported: SCHEMA_VERSION,
            });
        }
    }
    let message = err.to_string();
    // serde_json says "missing field `x` at line 1 column N"; keep the field name only.
    if let Some(rest) = message.strip_prefix("missing field `") {
        if let Some(field) = rest.split('`').next() {
            return Err(RecordError::MissingField {
                at: at(id),
                field: field.to_string(),
            });
        }
    }
    Err(RecordError::Invalid {
        at: at(id),
        expected: T::KIND,
        message,
    })
}

/// Writes records as JSON Lines, one flush per record.
pub struct RecordWriter {
    out: Box<dyn Write>,
    /// `(partial, final)` when writing to a file.
    paths: Option<(PathBuf, PathBuf)>,
    file: Option<File>,
    buf: Vec<u8>,
    written: u64,
}

impl std::fmt::Debug for RecordWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordWriter")
            .field("paths", &self.paths)
            .field("written", &self.written)
            .finish()
    }
}

/// Whether `path` exists and is something other than a regular file or a folder: a device such
/// as `/dev/null`, a FIFO, a socket (symlinks are followed). Such an output is written in place,
/// never replaced by a rename.
pub fn is_special_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Writes `bytes` to `path` so that `path` is always whole: through `path.partial` and a
/// rename, or in place when `path` is a device or a FIFO ([`is_special_file`]).
pub fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if is_special_file(path) {
        let mut f = OpenOptions::new().write(true).open(path)?;
        return f.write_all(bytes).and_then(|()| f.flush());
    }
    let partial = partial_path(path);
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, path)
}

/// The partial file a stage writes while it runs.
pub fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

impl RecordWriter {
    /// A writer to stdout.
    pub fn stdout() -> Self {
        RecordWriter {
            out: Box::new(BufWriter::with_capacity(1 << 16, io::stdout())),
            paths: None,
            file: None,
            buf: Vec::new(),
            written: 0,
        }
    }

    /// A writer to any sink (tests, embedding).
    pub fn to_writer(out: Box<dyn Write>) -> Self {
        RecordWriter {
            out,
            paths: None,
            file: None,
            buf: Vec::new(),
            written: 0,
        }
    }

    /// A writer to `path`, through `path.partial`. Without `resume` any earlier output is
    /// replaced; with it, the earlier output (finished or partial) is kept, a half-written last
    /// line is cut off, and the ids it holds are returned so the stage can skip them.
    ///
    /// An output that is not a regular file (`/dev/null`, a FIFO, `/dev/stdout`) is written in
    /// place: it cannot be renamed onto without replacing it, nor read back to resume.
    pub fn create(path: &Path, resume: bool) -> io::Result<(Self, HashSet<String>)> {
        if is_special_file(path) {
            let file = OpenOptions::new().write(true).open(path)?;
            return Ok((
                RecordWriter {
                    out: Box::new(BufWriter::with_capacity(1 << 16, file)),
                    paths: None,
                    file: None,
                    buf: Vec::new(),
                    written: 0,
                },
                HashSet::new(),
            ));
        }
        let partial = partial_path(path);
        let mut done = HashSet::new();
        let file = if resume {
            if !partial.exists() && path.exists() {
                std::fs::rename(path, &partial)?;
            }
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&partial)?;
            done = repair_and_collect_ids(&mut file, &partial)?;
            file.seek(SeekFrom::End(0))?;
            file
        } else {
            File::create(&partial)?
        };
        let out = file.try_clone()?;
        Ok((
            RecordWriter {
                out: Box::new(BufWriter::with_capacity(1 << 16, out)),
                paths: Some((partial, path.to_path_buf())),
                file: Some(file),
                buf: Vec::new(),
                written: 0,
            },
            done,
        ))
    }

    /// Writes one record and flushes it.
    pub fn write<T: Record>(&mut self, record: &T) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, record).map_err(io::Error::other)?;
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)?;
        self.out.flush()?;
        self.written += 1;
        Ok(())
    }

    /// Records written by this writer (not counting resumed ones).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Flushes, and for a file output syncs it and renames the partial file into place.
    pub fn finish(mut self) -> io::Result<()> {
        self.out.flush()?;
        if let (Some(file), Some((partial, path))) = (self.file.take(), self.paths.take()) {
            file.sync_all()?;
            std::fs::rename(&partial, &path)?;
        }
        Ok(())
    }
}

/// Reads an output file left by an earlier run: cuts off a half-written last line, drops lines
/// that do not parse (reporting them), and returns the ids of the whole records.
fn repair_and_collect_ids(file: &mut File, path: &Path) -> io::Result<HashSet<String>> {
    let mut content = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_end(&mut content)?;
    let mut ids = HashSet::new();
    let mut keep = Vec::with_capacity(content.len());
    let mut changed = false;
    let mut rest = &content[..];
    let mut line_no = 0u64;
    while !rest.is_empty() {
        line_no += 1;
        let Some(end) = memchr(b'\n', rest) else {
            crate::diag!(
                "warning: {}:{line_no}: dropped a half-written last line left by an interrupted run",
                path.display()
            );
            changed = true;
            break;
        };
        let line = &rest[..end];
        rest = &rest[end + 1..];
        let id = serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("id").and_then(|i| i.as_str()).map(str::to_string));
        match id {
            Some(id) => {
                keep.extend_from_slice(line);
                keep.push(b'\n');
                ids.insert(id);
            }
            None => {
                crate::diag!(
                    "warning: {}:{line_no}: dropped a line that is not a record; it will be redone",
                    path.display()
                );
                changed = true;
            }
        }
    }
    if changed {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&keep)?;
        file.sync_all()?;
    }
    Ok(ids)
}

#[cfg(test)]
#[path = "jsonl_tests.rs"]
mod tests;
