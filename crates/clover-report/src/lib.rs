//! Parsers of the reports test runs write: JUnit XML (pytest xunit1/xunit2, GoogleTest,
//! `ctest --output-junit`) and Cobertura XML (coverage.py, gcovr), and the part of a verdict
//! every runner shares ([`verdict_of_ending`]).
//!
//! Both test runners (`clover-pytest`, `clover-gtest`) read their reports here; the sandbox
//! below them never parses a report, and nothing here runs anything. Every text that reaches
//! a [`TestCase`] is capped, head and tail kept, as the sandbox caps a stream.
//!
//! ```
//! let xml = br#"<testsuites><testsuite name="t" tests="1"><testcase classname="tests.test_a" name="test_one" time="0.1"/></testsuite></testsuites>"#;
//! let tests = clover_report::parse_junit(xml).unwrap();
//! assert_eq!(tests[0].name, "test_one");
//! assert_eq!(tests[0].outcome, clover_protocol::TestOutcome::Passed);
//! ```
//!
//! Written here rather than taken from a crate because the dialects differ in ways that
//! matter to a verdict: GoogleTest marks disabled tests `status="notrun" result="suppressed"`
//! and writes one `<failure>` per failed assertion, splitting CDATA at `]]>`; ctest's root is
//! a bare `<testsuite>`; pytest reports a test twice when its call fails and its teardown
//! errors; coverage.py may write an empty `<source>` with repository-relative file names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clover_protocol::{FileCoverage, LineRanges, TestCase, TestOutcome};
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use clover_protocol::{LimitHit, Outcome};
use clover_sandbox::{cap_text, ExitStatus, HeadTail};

/// A report that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("malformed XML at byte {position}: {source}")]
    Xml {
        position: u64,
        #[source]
        source: quick_xml::Error,
    },
    #[error("not a {expected} report: the root element is <{found}>")]
    WrongRoot {
        expected: &'static str,
        found: String,
    },
    #[error("empty report: no root element")]
    Empty,
    #[error("unreadable coverage record: {0}")]
    Unreadable(String),
    #[error("truncated report: it ends inside <{0}>")]
    Truncated(String),
    #[error(
        "the coverage report's file {filename} may be {first} or {second}: write the report with paths from the repository root"
    )]
    AmbiguousFile {
        filename: String,
        first: String,
        second: String,
    },
}

fn xml_err(reader: &Reader<&[u8]>, source: quick_xml::Error) -> ReportError {
    ReportError::Xml {
        position: reader.error_position(),
        source,
    }
}

fn attr(reader: &Reader<&[u8]>, e: &BytesStart, key: &[u8]) -> Result<Option<String>, ReportError> {
    for a in e.attributes().with_checks(false) {
        let a = a.map_err(|err| xml_err(reader, err.into()))?;
        if a.key.as_ref() == key {
            let v = a.unescape_value().map_err(|err| xml_err(reader, err))?;
            return Ok(Some(v.into_owned()));
        }
    }
    Ok(None)
}

/// Bytes kept of one test's message, and of each text it is made of: the head and the tail,
/// with the cut said between them. The test writes these texts (an exception's message can
/// be any size), and each ends up in a result line.
const MESSAGE_BYTES: usize = 16 * 1024;
/// Bytes of messages kept from one report; once they are spent, each further message keeps
/// [`LATE_MESSAGE_BYTES`]. With [`NAME_BYTES`] this bounds a result line at about 1 MiB for
/// a file of a few hundred tests.
const REPORT_MESSAGE_BYTES: usize = 512 * 1024;
const LATE_MESSAGE_BYTES: usize = 512;
/// Bytes kept of a test's name and of its class name (a parametrized test's name holds its
/// parameters).
const NAME_BYTES: usize = 1024;

/// Merges what one `<failure>`, `<error>` or `<skipped>` said.
#[derive(Debug)]
struct Problem {
    message: Option<String>,
    /// The element's text, capped while it is read.
    text: HeadTail,
}

impl Problem {
    fn new(message: Option<String>) -> Problem {
        Problem {
            message: message.map(|m| cap_text(&m, MESSAGE_BYTES)),
            text: HeadTail::new(MESSAGE_BYTES),
        }
    }

    fn render(self) -> String {
        let text = self.text.finish().text();
        let text = text.trim();
        match self.message.as_deref().map(str::trim) {
            Some(m) if !m.is_empty() => {
                // GoogleTest repeats the message as the text; pytest puts the traceback there.
                if text.is_empty() || text == m {
                    m.to_string()
                } else {
                    format!("{m}\n{text}")
                }
            }
            _ => text.to_string(),
        }
    }
}

#[derive(Debug, Default)]
struct Case {
    name: String,
    classname: String,
    time: f64,
    notrun: bool,
    failures: Vec<Problem>,
    errors: Vec<Problem>,
    skipped: Vec<Problem>,
}

impl Case {
    fn outcome(&self) -> TestOutcome {
        if !self.failures.is_empty() {
            TestOutcome::Failed
        } else if !self.errors.is_empty() {
            TestOutcome::Error
        } else if !self.skipped.is_empty() || self.notrun {
            TestOutcome::Skipped
        } else {
            TestOutcome::Passed
        }
    }

    /// The test case, its message capped to what is left of the report's `budget`.
    fn into_test_case(self, budget: &mut usize) -> TestCase {
        let outcome = self.outcome();
        let skipped = if outcome == TestOutcome::Skipped {
            self.skipped
        } else {
            Vec::new()
        };
        let parts: Vec<String> = self
            .failures
            .into_iter()
            .chain(self.errors)
            .chain(skipped)
            .map(Problem::render)
            .filter(|m| !m.is_empty())
            .collect();
        let message = (!parts.is_empty()).then(|| {
            let cap = MESSAGE_BYTES.min(*budget).max(LATE_MESSAGE_BYTES);
            let m = cap_text(&parts.join("\n\n"), cap);
            *budget = budget.saturating_sub(m.len());
            m
        });
        TestCase {
            name: cap_text(&self.name, NAME_BYTES),
            classname: cap_text(&self.classname, NAME_BYTES),
            outcome,
            message,
            duration_secs: self.time,
        }
    }
}

/// Reads the test cases of a JUnit XML report, in report order.
///
/// A test reported twice in a row (pytest: the call failed and the teardown errored) comes
/// out once: failed, with both messages. Disabled GoogleTest tests and ctest's `notrun` tests
/// are skipped ones. A report with no test cases is valid and yields none: whether that means
/// "nothing ran" or "crashed" is the caller's cross-check with the exit status. Every text
/// that comes out is capped, its head and tail kept and the cut said: a message at 16 KiB, all
/// messages of the report at 512 KiB (later ones at 512 bytes each), a name at 1 KiB.
pub fn parse_junit(xml: &[u8]) -> Result<Vec<TestCase>, ReportError> {
    let mut reader = Reader::from_reader(xml);
    reader.config_mut().check_end_names = true;
    let mut cases: Vec<Case> = Vec::new();
    let mut current: Option<Case> = None;
    // Which child of <testcase> text goes to: 0 failure, 1 error, 2 skipped.
    let mut problem: Option<u8> = None;
    let mut seen_root = false;
    let mut open: Vec<Vec<u8>> = Vec::new();
    loop {
        // Events borrow from the report: a huge text is not copied before it is capped.
        let ev = reader.read_event().map_err(|e| xml_err(&reader, e))?;
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                let name = e.name().as_ref().to_vec();
                if !empty {
                    open.push(name.clone());
                }
                if !seen_root {
                    seen_root = true;
                    if name != b"testsuites" && name != b"testsuite" {
                        return Err(ReportError::WrongRoot {
                            expected: "JUnit XML",
                            found: String::from_utf8_lossy(&name).into_owned(),
                        });
                    }
                }
                match name.as_slice() {
                    b"testcase" => {
                        let status = attr(&reader, e, b"status")?;
                        let result = attr(&reader, e, b"result")?;
                        let case = Case {
                            name: attr(&reader, e, b"name")?.unwrap_or_default(),
                            classname: attr(&reader, e, b"classname")?.unwrap_or_default(),
                            time: attr(&reader, e, b"time")?
                                .and_then(|t| t.trim().parse().ok())
                                .unwrap_or(0.0),
                            notrun: status.as_deref() == Some("notrun")
                                || matches!(result.as_deref(), Some("suppressed" | "skipped")),
                            ..Case::default()
                        };
                        if empty {
                            cases.push(case);
                        } else {
                            current = Some(case);
                        }
                    }
                    b"failure" | b"error" | b"skipped" if current.is_some() => {
                        let kind = match name.as_slice() {
                            b"failure" => 0,
                            b"error" => 1,
                            _ => 2,
                        };
                        let p = Problem::new(attr(&reader, e, b"message")?);
                        problems(current.as_mut().expect("checked"), kind).push(p);
                        if !empty {
                            problem = Some(kind);
                        }
                    }
                    _ => {}
                }
            }
            Event::End(ref e) => {
                open.pop();
                match e.name().as_ref() {
                    b"testcase" => {
                        if let Some(c) = current.take() {
                            cases.push(c);
                        }
                        problem = None;
                    }
                    b"failure" | b"error" | b"skipped" => problem = None,
                    _ => {}
                }
            }
            Event::Text(ref t) => {
                if let (Some(k), Some(c)) = (problem, current.as_mut()) {
                    let s = t.unescape().map_err(|e| xml_err(&reader, e))?;
                    push_text(c, k, &s);
                }
            }
            Event::CData(ref t) => {
                if let (Some(k), Some(c)) = (problem, current.as_mut()) {
                    let s = String::from_utf8_lossy(t.as_ref()).into_owned();
                    push_text(c, k, &s);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !seen_root {
        return Err(ReportError::Empty);
    }
    if let Some(name) = open.last() {
        return Err(ReportError::Truncated(
            String::from_utf8_lossy(name).into_owned(),
        ));
    }
    Ok(merge_repeats(cases))
}

fn problems(c: &mut Case, kind: u8) -> &mut Vec<Problem> {
    match kind {
        0 => &mut c.failures,
        1 => &mut c.errors,
        _ => &mut c.skipped,
    }
}

fn push_text(c: &mut Case, kind: u8, s: &str) {
    if let Some(p) = problems(c, kind).last_mut() {
        p.text.push(s.as_bytes());
    }
}

fn merge_repeats(cases: Vec<Case>) -> Vec<TestCase> {
    let mut out: Vec<Case> = Vec::with_capacity(cases.len());
    for c in cases {
        match out.last_mut() {
            Some(prev) if prev.name == c.name && prev.classname == c.classname => {
                prev.time += c.time;
                prev.failures.extend(c.failures);
                prev.errors.extend(c.errors);
                prev.skipped.extend(c.skipped);
                prev.notrun &= c.notrun;
            }
            _ => out.push(c),
        }
    }
    let mut budget = REPORT_MESSAGE_BYTES;
    out.into_iter()
        .map(|c| c.into_test_case(&mut budget))
        .collect()
}

/// Reads the covered lines (hits > 0) per file of a Cobertura XML report, with paths made
/// relative to `repo` (the repository's path as the run saw it, which is its host path).
///
/// A relative file name is resolved against the report's `<source>` elements, an empty or
/// relative source against `repo`, lexically: nothing on the host is looked at (the report
/// is written by the run, and the host's files are not the run's view). A name that lands on
/// two different repository files (coverage.py strips each `source` folder from the names, so
/// `a/util.py` and `b/util.py` both become `util.py`) is an error, never a guess: the runs of
/// clover name files from the repository root (`clover_pytest::coverage_rc`). Files
/// outside the repository (the standard library, site-packages, system headers) are left out.
pub fn parse_cobertura(xml: &[u8], repo: &Path) -> Result<Vec<FileCoverage>, ReportError> {
    Ok(parse_cobertura_lines(xml, repo)?
        .into_iter()
        .map(|f| FileCoverage {
            path: f.path,
            lines: f.covered,
        })
        .collect())
}

/// One file of a Cobertura report: the lines it lists (the executable ones, for coverage.py
/// its statements, for gcovr the instrumented lines) and those of them with hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLines {
    /// Repository-relative.
    pub path: String,
    pub covered: LineRanges,
    pub executable: LineRanges,
}

/// [`parse_cobertura`] with the executable lines too: every `<line>` a file lists, hit or not.
pub fn parse_cobertura_lines(xml: &[u8], repo: &Path) -> Result<Vec<FileLines>, ReportError> {
    let mut reader = Reader::from_reader(xml);
    reader.config_mut().check_end_names = true;
    let mut buf = Vec::new();
    let mut sources: Vec<String> = Vec::new();
    let mut in_source = false;
    let mut source_text = String::new();
    let mut seen_root = false;
    // filename → (covered, listed) lines; resolved once all <source>s are known.
    let mut files: BTreeMap<String, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut open: Vec<Vec<u8>> = Vec::new();
    loop {
        let ev = reader
            .read_event_into(&mut buf)
            .map_err(|e| xml_err(&reader, e))?;
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                let name = e.name().as_ref().to_vec();
                if !empty {
                    open.push(name.clone());
                }
                if !seen_root {
                    seen_root = true;
                    if name != b"coverage" {
                        return Err(ReportError::WrongRoot {
                            expected: "Cobertura",
                            found: String::from_utf8_lossy(&name).into_owned(),
                        });
                    }
                }
                match name.as_slice() {
                    b"source" => {
                        if empty {
                            sources.push(String::new());
                        } else {
                            in_source = true;
                            source_text.clear();
                        }
                    }
                    b"class" => {
                        let f = attr(&reader, e, b"filename")?.unwrap_or_default();
                        files.entry(f.clone()).or_default();
                        if !empty {
                            current = Some(f);
                        }
                    }
                    b"line" => {
                        if let Some(f) = &current {
                            let number = attr(&reader, e, b"number")?.and_then(|n| n.parse().ok());
                            let hits: u64 = attr(&reader, e, b"hits")?
                                .and_then(|h| h.parse().ok())
                                .unwrap_or(0);
                            if let Some(n) = number {
                                let (covered, listed) = files.get_mut(f).expect("entry made");
                                listed.push(n);
                                if hits > 0 {
                                    covered.push(n);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            Event::End(ref e) => {
                open.pop();
                match e.name().as_ref() {
                    b"source" => {
                        in_source = false;
                        sources.push(source_text.trim().to_string());
                    }
                    b"class" => current = None,
                    _ => {}
                }
            }
            Event::Text(ref t) if in_source => {
                let s = t.unescape().map_err(|e| xml_err(&reader, e))?;
                source_text.push_str(&s);
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !seen_root {
        return Err(ReportError::Empty);
    }
    if let Some(name) = open.last() {
        return Err(ReportError::Truncated(
            String::from_utf8_lossy(name).into_owned(),
        ));
    }
    let mut merged: BTreeMap<String, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
    for (filename, (covered, listed)) in files {
        if let Some(rel) = resolve(&filename, &sources, repo)? {
            let entry = merged.entry(rel).or_default();
            entry.0.extend(covered);
            entry.1.extend(listed);
        }
    }
    Ok(merged
        .into_iter()
        .map(|(path, (covered, listed))| FileLines {
            path,
            covered: LineRanges::from_lines(covered),
            executable: LineRanges::from_lines(listed),
        })
        .collect())
}

/// The repository-relative path a report's file name stands for: `None` outside the
/// repository, an error when the sources make it name more than one repository file.
fn resolve(filename: &str, sources: &[String], repo: &Path) -> Result<Option<String>, ReportError> {
    let f = Path::new(filename);
    let candidates: Vec<PathBuf> = if f.is_absolute() || sources.is_empty() {
        vec![repo.join(f)]
    } else {
        sources.iter().map(|s| repo.join(s).join(f)).collect()
    };
    let mut found: Option<String> = None;
    for c in candidates {
        // Lexically: reports are read after the run, when the files they name may be gone.
        let normal = clover_protocol::lexically_normal(&c);
        let Ok(rel) = normal.strip_prefix(repo) else {
            continue;
        };
        let rel = rel.to_string_lossy().into_owned();
        match &found {
            Some(first) if *first != rel => {
                return Err(ReportError::AmbiguousFile {
                    filename: filename.to_string(),
                    first: first.clone(),
                    second: rel,
                })
            }
            Some(_) => {}
            None => found = Some(rel),
        }
    }
    Ok(found)
}

/// An outcome with the reason when the report alone does not say it.
pub type Verdict = (Outcome, Option<String>);

/// The part of a verdict every runner shares: a run a limit ended, one a signal ended, and one
/// that wrote no report are decided here (a crash writes no report and is never a pass).
/// Otherwise the exit code and the report come back for the runner's own cross-check.
pub fn verdict_of_ending<'a>(
    program: &str,
    exit: ExitStatus,
    limit: Option<LimitHit>,
    tests: Option<&'a [TestCase]>,
) -> Result<(i32, &'a [TestCase]), Verdict> {
    match limit {
        Some(LimitHit::WallClock) => return Err((Outcome::Timeout, None)),
        Some(LimitHit::Memory) => return Err((Outcome::Oom, None)),
        Some(l) => return Err((Outcome::Killed, Some(format!("the run hit its {l} limit")))),
        None => {}
    }
    let code = match exit {
        ExitStatus::Signal(s) => {
            return Err((
                Outcome::Killed,
                Some(format!("{program} was killed by signal {s}")),
            ))
        }
        ExitStatus::Code(c) => c,
    };
    match tests {
        Some(tests) => Ok((code, tests)),
        None => Err((
            Outcome::Error,
            Some(format!("{program} exited with {code} and wrote no report")),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_junit_and_wrong_roots() {
        let t =
            parse_junit(br#"<testsuite><testcase name="a" classname="m" time="0.5"/></testsuite>"#)
                .unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].outcome, TestOutcome::Passed);
        assert_eq!(t[0].duration_secs, 0.5);
        assert!(matches!(
            parse_junit(b"<coverage/>"),
            Err(ReportError::WrongRoot { .. })
        ));
        assert!(matches!(parse_junit(b""), Err(ReportError::Empty)));
        assert!(matches!(
            parse_junit(b"<testsuite><testcase>"),
            Err(ReportError::Truncated(_))
        ));
        assert!(matches!(
            parse_junit(b"<testsuite></x>"),
            Err(ReportError::Xml { .. })
        ));
    }

    #[test]
    fn paths_resolve_against_sources_and_repo() {
        let repo = Path::new("/r");
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let r = |f: &str, sources: &[&str]| resolve(f, &s(sources), repo).unwrap();
        assert_eq!(r("a.py", &["/r/src"]).as_deref(), Some("src/a.py"));
        assert_eq!(r("src/a.py", &[""]).as_deref(), Some("src/a.py"));
        assert_eq!(r("src/a.py", &["."]).as_deref(), Some("src/a.py"));
        assert_eq!(r("src/a.py", &[]).as_deref(), Some("src/a.py"));
        assert_eq!(r("/r/src/a.py", &["/r/other"]).as_deref(), Some("src/a.py"));
        assert_eq!(r("/usr/lib/x.py", &[]), None);
        assert_eq!(r("../x.py", &["."]), None);
        // A source outside the repository holds none of its files.
        assert_eq!(
            r("a.py", &["/usr/lib", "/r/src"]).as_deref(),
            Some("src/a.py")
        );
    }

    /// coverage.py with `--cov=src/a --cov=src/b` names both `util.py`s `util.py`; which one a
    /// line belongs to cannot be told, and no file on the host may decide it.
    #[test]
    fn a_name_under_two_sources_is_an_error_whatever_the_host_holds() {
        let host = std::env::temp_dir().join(format!("clover-resolve-{}", std::process::id()));
        std::fs::create_dir_all(host.join("src/b")).unwrap();
        std::fs::write(host.join("src/b/util.py"), "x = 1\n").unwrap();
        let sources = ["src/a".to_string(), "src/b".to_string()];
        // Only the second candidate exists on the host; the answer must not depend on that.
        let err = resolve("util.py", &sources, &host).unwrap_err();
        assert!(
            matches!(&err, ReportError::AmbiguousFile { first, second, .. }
                if first == "src/a/util.py" && second == "src/b/util.py"),
            "{err}"
        );
        let xml = br#"<coverage><sources><source>src/a</source><source>src/b</source></sources>
            <packages><package><classes><class filename="util.py"><lines>
            <line number="1" hits="1"/></lines></class></classes></package></packages></coverage>"#;
        assert!(matches!(
            parse_cobertura(xml, &host),
            Err(ReportError::AmbiguousFile { .. })
        ));
        std::fs::remove_dir_all(&host).unwrap();
    }
}
