//! Calibration of the Python problems of one test file (a group of peers).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clover_manifest::RepoConfig;
use clover_protocol::{
    CalibratedProblem, Exclusion, ExclusionReason, FileTier, Outcome, Problem, PythonProblem,
    RecordKind, Target, TestCase, TestOutcome, UniqueBlock, SCHEMA_VERSION,
};
use clover_pytest::{WarmPool, WarmRun};
use clover_sandbox::{ExitStatus, Limits, RunSpec, Sandbox, WriteFile};
use rayon::prelude::*;

use crate::analysis::{self, CoverageMap, Definition};
use crate::coverage_json::{self, ContextCoverage};

/// Where reports are written inside the run's view of the repository.
const REPORT_DIR: &str = ".clover-calibrate";
const EMPTY_TEST: &str = "test_clover_empty";

/// How to calibrate.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// Runs of each ground truth; more than one detects flaky tests.
    pub runs: u32,
    /// One pytest process per problem instead of one per test file.
    pub per_test: bool,
    /// The interpreter of the repository's environment (with pytest and pytest-cov).
    pub python: PathBuf,
    /// Limits of one pytest process.
    pub limits: Limits,
    /// Warm pytest workers to run groups in (`clover_pytest::WarmPool`); `None` runs each
    /// group in a fresh interpreter (`--cold`). The records are the same.
    pub warm: Option<std::sync::Arc<WarmPool>>,
    /// The executable lines of the files runs so far reported, shared by every group of the
    /// run so that each file is parsed once.
    pub statements: std::sync::Arc<coverage_json::KnownStatements>,
}

/// A whole group could not be calibrated (the sandbox could not run at all).
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    #[error("problem {id}: {message}")]
    Problem { id: String, message: String },
    #[error("sandbox: {0}")]
    Sandbox(#[from] clover_sandbox::SandboxError),
}

/// One problem, prepared: its file, its empty variant, and their node ids.
struct Prepared<'a> {
    problem: &'a Problem,
    py: &'a PythonProblem,
    empty: EmptyVariant,
}

/// A problem's empty variant: its problem file with `assert True` in place of the test, so
/// that it runs what any candidate in the test's place runs (importing and collecting the
/// file, the setup of where the test sits) and nothing of the test's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmptyVariant {
    /// Beside the problem file, repository-relative (`tests/tmp_empty_x_1.py`).
    pub path: String,
    pub text: String,
    /// The empty test's node id (`tests/tmp_empty_x_1.py::TestC::test_clover_empty`).
    pub node_id: String,
}

fn prepare(problem: &Problem) -> Result<Prepared<'_>, GroupError> {
    let (py, empty) = python_and_empty_variant(problem)?;
    Ok(Prepared { problem, py, empty })
}

/// The empty variant of a Python problem; an error when the problem is not one, or its text
/// does not hold its test where it says.
pub fn empty_variant(problem: &Problem) -> Result<EmptyVariant, GroupError> {
    python_and_empty_variant(problem).map(|(_, empty)| empty)
}

fn python_and_empty_variant(
    problem: &Problem,
) -> Result<(&PythonProblem, EmptyVariant), GroupError> {
    let err = |message: String| GroupError::Problem {
        id: problem.id.clone(),
        message,
    };
    let py = problem
        .python
        .as_ref()
        .ok_or_else(|| err("not a Python problem".into()))?;
    let text = &py.problem_text;
    let start = line_offset(text, py.problem_declaration_line)
        .ok_or_else(|| err("problem_declaration_line is past the end of problem_text".into()))?;
    let test = format!("{}{}", py.declaration, py.body);
    if !text[start..].starts_with(&test) {
        return Err(err(
            "problem_text does not hold declaration + body at problem_declaration_line".into(),
        ));
    }
    let indent: String = py
        .declaration
        .lines()
        .find(|l| l.trim_start().starts_with("def ") || l.trim_start().starts_with("async def "))
        .map(|l| l[..l.len() - l.trim_start().len()].to_string())
        .unwrap_or_default();
    // `**parameters` takes the arguments of a `parametrize` of the enclosing class or module
    // (a class-level mark parametrizes every method): the plugin shows pytest their names
    // (`_clover_calibrate.py`), so the empty test runs where the test runs, once per
    // parameter set, with the same fixtures set up for them.
    let params = if py.class.is_some() {
        "self, **parameters"
    } else {
        "**parameters"
    };
    let empty_test = format!("{indent}def {EMPTY_TEST}({params}):\n{indent}    assert True\n");
    let empty_text = format!(
        "{}{}{}",
        &text[..start],
        empty_test,
        &text[start + test.len()..]
    );
    let (dir, file) = match py.problem_file.rsplit_once('/') {
        Some((d, f)) => (format!("{d}/"), f),
        None => (String::new(), py.problem_file.as_str()),
    };
    let empty_file = match file.strip_prefix("tmp_test_") {
        Some(rest) => format!("tmp_empty_{rest}"),
        None => format!("tmp_empty_{file}"),
    };
    let path = format!("{dir}{empty_file}");
    let node_id = match &py.class {
        Some(class) => format!("{path}::{class}::{EMPTY_TEST}"),
        None => format!("{path}::{EMPTY_TEST}"),
    };
    Ok((
        py,
        EmptyVariant {
            path,
            text: empty_text,
            node_id,
        },
    ))
}

/// Byte offset of the start of 1-based `line`.
fn line_offset(text: &str, line: u32) -> Option<usize> {
    if line == 0 {
        return None;
    }
    let mut offset = 0;
    for _ in 1..line {
        offset += text[offset..].find('\n')? + 1;
    }
    (offset <= text.len()).then_some(offset)
}

/// What the cases of one test (its parameter sets) said.
#[derive(Debug, Default)]
struct Cases {
    /// A case passed.
    passed: bool,
    /// The first case that failed or erred, with its message.
    failure: Option<(Outcome, Option<String>)>,
}

impl Cases {
    /// The test's outcome: the first failure; else passed if a case passed; a test whose
    /// every case was skipped verifies nothing and cannot be a ground truth.
    fn outcome(&self) -> (Outcome, Option<String>) {
        match (&self.failure, self.passed) {
            (Some(f), _) => f.clone(),
            (None, true) => (Outcome::Passed, None),
            (None, false) => (
                Outcome::NoTestsRun,
                Some("every case of the test was skipped".into()),
            ),
        }
    }
}

/// What one pytest process said about the tests it ran.
struct RunReport {
    /// Per node id (a parametrized test folds its cases).
    outcomes: HashMap<String, Cases>,
    coverage: ContextCoverage,
    /// Test files of the run that pytest could not collect, with its message. pytest goes on
    /// with the other files (`--continue-on-collection-errors`), so one problem file that
    /// does not import costs only the problems whose test or empty test is in it.
    collection_errors: HashMap<String, String>,
    /// The run as a whole: timeout, crash (no report), a collection error of no test file of
    /// the run (a `conftest.py`).
    failure: Option<(ExclusionReason, String)>,
}

/// Runs the test nodes of `files`; when a file does not collect, pytest refuses to run any
/// node (a node id it cannot find is a usage error), so the nodes of the files that did
/// collect run again without it, and the report keeps the collection errors of the first run.
fn run_pytest(
    sandbox: &Sandbox,
    repo: &RepoConfig,
    opts: &CalibrateOptions,
    files: &[(&str, &str)],
    nodes: &[&str],
) -> Result<RunReport, GroupError> {
    let first = run_pytest_once(sandbox, repo, opts, files, nodes)?;
    if first.collection_errors.is_empty() || !first.outcomes.is_empty() {
        return Ok(first);
    }
    let collects = |path: &str| !first.collection_errors.contains_key(path);
    let files: Vec<(&str, &str)> = files.iter().copied().filter(|f| collects(f.0)).collect();
    let nodes: Vec<&str> = nodes
        .iter()
        .copied()
        .filter(|n| collects(n.split("::").next().unwrap_or(n)))
        .collect();
    if nodes.is_empty() {
        return Ok(first);
    }
    let mut report = run_pytest_once(sandbox, repo, opts, &files, &nodes)?;
    report.collection_errors.extend(first.collection_errors);
    // What importing the file that did not collect ran (up to its error) runs in a run of
    // its problems alone too.
    analysis::merge_lines(&mut report.coverage.imported, &first.coverage.imported);
    Ok(report)
}

fn run_pytest_once(
    sandbox: &Sandbox,
    repo: &RepoConfig,
    opts: &CalibrateOptions,
    files: &[(&str, &str)],
    nodes: &[&str],
) -> Result<RunReport, GroupError> {
    // pytest's arguments but pytest-cov's `--cov` (a warm worker starts coverage.py itself,
    // where pytest-cov would) and the targets.
    let args: Vec<String> = [
        "-p",
        "no:cacheprovider",
        "-p",
        coverage_json::PLUGIN_MODULE,
        "-q",
        "--continue-on-collection-errors",
        "--rootdir=.",
    ]
    .into_iter()
    .map(String::from)
    .chain([
        format!("--junitxml={REPORT_DIR}/junit.xml"),
        "--cov-report=".into(),
        // The settings sandbox-run measures with, so that both name and count lines alike.
        format!("--cov-config={REPORT_DIR}/coveragerc"),
    ])
    .collect();
    // `--cov` takes an optional value: an option must follow it, not a node id.
    let mut argv: Vec<OsString> = vec![
        opts.python.clone().into(),
        "-m".into(),
        "pytest".into(),
        "--cov".into(),
    ];
    argv.extend(args.iter().map(OsString::from));
    // Node ids, not files: a test class that inherits tests from another must run only the
    // problem's test (and the empty test), not everything it inherits.
    argv.extend(nodes.iter().map(OsString::from));
    let mut spec = RunSpec::new(&repo.root, argv);
    let sources: Vec<String> = repo
        .source_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    spec.files.push(WriteFile {
        path: PathBuf::from(format!("{REPORT_DIR}/coveragerc")),
        contents: clover_pytest::coverage_rc(&sources).into_bytes(),
    });
    spec.files.push(WriteFile {
        path: PathBuf::from(format!("{REPORT_DIR}/{}.py", coverage_json::PLUGIN_MODULE)),
        contents: coverage_json::PLUGIN.as_bytes().to_vec(),
    });
    // The plugin's folder goes first on the path, before any the repository asks for.
    let python_path = match repo.env.get("PYTHONPATH") {
        Some(theirs) if !theirs.is_empty() => format!("{REPORT_DIR}:{theirs}"),
        _ => REPORT_DIR.to_string(),
    };
    spec.env = vec![
        ("COVERAGE_FILE".into(), "/tmp/clover.coverage".into()),
        (
            "CLOVER_CONTEXTS_OUT".into(),
            format!("{REPORT_DIR}/coverage.json").into(),
        ),
        (
            coverage_json::KNOWN_STATEMENTS_ENV.into(),
            format!("{REPORT_DIR}/known-statements.json").into(),
        ),
    ];
    spec.env.extend(
        repo.env
            .iter()
            .filter(|(k, _)| *k != "PYTHONPATH")
            .map(|(k, v)| (k.into(), v.into())),
    );
    spec.env.push(("PYTHONPATH".into(), python_path.into()));
    spec.binds = clover_pytest::python_binds(&opts.python);
    spec.limits = opts.limits.clone();
    spec.collect = vec![
        PathBuf::from(format!("{REPORT_DIR}/junit.xml")),
        PathBuf::from(format!("{REPORT_DIR}/coverage.json")),
    ];
    // The run's own files: the group's, and the list of the files whose executable lines
    // earlier runs reported (it changes from run to run: a warm worker is kept for what
    // does not).
    let group_files: Vec<WriteFile> = files
        .iter()
        .map(|(path, text)| WriteFile {
            path: PathBuf::from(path),
            contents: text.as_bytes().to_vec(),
        })
        .chain([WriteFile {
            path: PathBuf::from(format!("{REPORT_DIR}/known-statements.json")),
            contents: opts.statements.listing(&repo.root).into_bytes(),
        }])
        .collect();
    // In a fork of a warm worker when there is one (the same report either way); cold when
    // the worker cannot serve the group.
    let warm = opts.warm.as_ref().and_then(|pool| {
        let targets: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
        pool.run_pytest(
            sandbox,
            &WarmRun {
                base: &spec,
                python: &opts.python,
                args: &args,
                coveragerc: Some(format!("{REPORT_DIR}/coveragerc")),
                sources: &sources,
                save_coverage: true,
                coverage_lines: None,
                only: None,
                witness: &[],
                targets: &targets,
                files: &group_files,
                writable: &[PathBuf::from(REPORT_DIR)],
                collect: &spec.collect,
                late: false,
                mutants: &[],
            },
        )
        .ok()
    });
    let out = match warm {
        Some(out) => out,
        None => {
            spec.files.extend(group_files);
            sandbox.run(&spec)?
        }
    };
    let mut report = RunReport {
        outcomes: HashMap::new(),
        coverage: ContextCoverage::default(),
        collection_errors: HashMap::new(),
        failure: None,
    };
    if let Some(limit) = out.limit_hit {
        report.failure = Some((
            ExclusionReason::Timeout,
            format!("the run hit its {limit} limit"),
        ));
        return Ok(report);
    }
    let junit = out.files.first().and_then(|f| f.content.bytes());
    let Some(junit) = junit else {
        report.failure = Some((
            ExclusionReason::Error,
            format!(
                "pytest wrote no JUnit report ({}): {}",
                out.exit,
                out.stderr.tail(400)
            ),
        ));
        return Ok(report);
    };
    let cases = clover_report::parse_junit(junit).map_err(|e| GroupError::Problem {
        id: files.first().map(|f| f.0.to_string()).unwrap_or_default(),
        message: format!("unreadable JUnit report: {e}"),
    })?;
    let paths: Vec<&str> = files.iter().map(|f| f.0).collect();
    for case in &cases {
        let Some(node) = node_of_case(case, &paths) else {
            // A case naming no test function is a collection error of the file it names.
            if case.outcome == TestOutcome::Error || case.outcome == TestOutcome::Failed {
                let message = case
                    .message
                    .clone()
                    .unwrap_or_else(|| "collection error".into());
                match file_of_case(case, &paths) {
                    Some(path) => {
                        report.collection_errors.insert(path.to_string(), message);
                    }
                    None => report.failure = Some((ExclusionReason::CollectionError, message)),
                }
            }
            continue;
        };
        let cases = report.outcomes.entry(node).or_default();
        match case.outcome {
            TestOutcome::Passed => cases.passed = true,
            // A skipped case verifies nothing and counts neither way.
            TestOutcome::Skipped => {}
            TestOutcome::Failed if cases.failure.is_none() => {
                cases.failure = Some((Outcome::Failed, case.message.clone()));
            }
            TestOutcome::Error if cases.failure.is_none() => {
                cases.failure = Some((Outcome::Error, case.message.clone()));
            }
            TestOutcome::Failed | TestOutcome::Error => {}
        }
    }
    if let Some(bytes) = out.files.get(1).and_then(|f| f.content.bytes()) {
        report.coverage = coverage_json::parse(
            bytes,
            |name| source_path(repo, name),
            &opts.statements,
            &repo.root,
        )
        .map_err(|e| GroupError::Problem {
            id: files.first().map(|f| f.0.to_string()).unwrap_or_default(),
            message: e.to_string(),
        })?;
    } else if report.failure.is_none() && matches!(out.exit, ExitStatus::Code(0 | 1)) {
        report.failure = Some((
            ExclusionReason::Error,
            "coverage wrote no JSON report".into(),
        ));
    }
    Ok(report)
}

/// The node id (without parameters) a JUnit case of pytest belongs to, among the test files
/// (repository-relative paths) of the run; `None` for a case of no test function (a
/// collection error names the file alone).
pub fn node_of_case(case: &TestCase, paths: &[&str]) -> Option<String> {
    // pytest writes classname `tests.tmp_test_x_1.TestC` and name `test_y[param]`.
    let name = case.name.split('[').next().unwrap_or(&case.name);
    for path in paths {
        let module = path.trim_end_matches(".py").replace('/', ".");
        let class = match case.classname.strip_prefix(&module) {
            Some("") => None,
            Some(rest) => match rest.strip_prefix('.') {
                Some(c) => Some(c),
                None => continue,
            },
            None => continue,
        };
        if !name.starts_with("test") {
            return None;
        }
        return Some(match class {
            Some(c) => format!("{path}::{}::{name}", c.replace('.', "::")),
            None => format!("{path}::{name}"),
        });
    }
    None
}

/// The test file among `paths` that a JUnit case of no test function names: pytest writes a
/// collection error of `tests/tmp_test_x_1.py` with an empty classname and the name
/// `tests.tmp_test_x_1`, and one of a class in it (a class-level mark that does not fit a
/// method) as classname `tests.tmp_test_x_1`, name `TestC`. Either way the error belongs to
/// that file's problems alone.
fn file_of_case<'p>(case: &TestCase, paths: &[&'p str]) -> Option<&'p str> {
    let dotted = if case.classname.is_empty() {
        case.name.clone()
    } else {
        format!("{}.{}", case.classname, case.name)
    };
    paths
        .iter()
        .copied()
        .filter(|path| {
            let module = path.trim_end_matches(".py").replace('/', ".");
            dotted
                .strip_prefix(&module)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
        .max_by_key(|path| path.len())
}

/// A file of a coverage report as a repository-relative path, if it is one of the
/// repository's own sources (not a test, not a problem file, not outside the repository).
fn source_path(repo: &RepoConfig, name: &str) -> Option<String> {
    let path = Path::new(name);
    let rel = if path.is_absolute() {
        path.strip_prefix(&repo.root).ok()?.to_path_buf()
    } else {
        path.to_path_buf()
    };
    let rel_str = rel.to_str()?.to_string();
    let file = rel.file_name()?.to_str()?;
    if file.starts_with("tmp_test_") || file.starts_with("tmp_empty_") || file == "conftest.py" {
        return None;
    }
    let in_sources = repo
        .source_dirs
        .iter()
        .any(|d| d.as_os_str() == "." || rel.starts_with(d));
    let is_test = file.starts_with("test_") || file.ends_with("_test.py");
    (in_sources && !is_test).then_some(rel_str)
}

/// Every Python source file of the repository, relative to its root, sorted.
fn source_files(repo: &RepoConfig) -> Vec<String> {
    let mut out = Vec::new();
    for dir in &repo.source_dirs {
        let abs = repo.root.join(dir);
        if abs.is_file() {
            out.push(dir.display().to_string());
            continue;
        }
        let mut stack = vec![abs];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if p.is_dir() {
                    if !name.starts_with('.')
                        && !clover_manifest::PRUNED_DIRS.contains(&name.as_str())
                    {
                        stack.push(p);
                    }
                } else if name.ends_with(".py") {
                    if let Some(rel) = source_path(repo, &p.display().to_string()) {
                        out.push(rel);
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// One run's findings for one problem: outcome, message, base and empty lines.
#[derive(Debug, Clone, PartialEq)]
struct Observation {
    outcome: Outcome,
    /// The outcome is an error because the problem's file or its empty variant did not
    /// collect.
    collection_error: bool,
    message: Option<String>,
    base: CoverageMap,
    empty: CoverageMap,
}

/// What `report` says about problem `p`, whose empty test ran as `empty_node`.
fn observe(report: &RunReport, p: &Prepared, empty_node: &str) -> Observation {
    let empty_file = empty_node.split("::").next().unwrap_or(empty_node);
    let collection_error = [p.py.problem_file.as_str(), empty_file]
        .into_iter()
        .find_map(|file| Some((file, report.collection_errors.get(file)?)));
    let ran = report.outcomes.get(&p.py.node_id);
    let (outcome, message) = match (collection_error, ran) {
        (Some((file, m)), _) => (Outcome::Error, Some(format!("{file} did not collect: {m}"))),
        (None, Some(cases)) => cases.outcome(),
        (None, None) => match &report.failure {
            Some((ExclusionReason::Timeout, m)) => (Outcome::Timeout, Some(m.clone())),
            Some((_, m)) => (Outcome::Error, Some(m.clone())),
            None => (Outcome::Error, Some("the test did not run".into())),
        },
    };
    let whole_run_collection =
        ran.is_none() && matches!(report.failure, Some((ExclusionReason::CollectionError, _)));
    Observation {
        outcome,
        collection_error: collection_error.is_some() || whole_run_collection,
        message,
        base: report
            .coverage
            .by_test
            .get(&p.py.node_id)
            .cloned()
            .unwrap_or_default(),
        empty: report
            .coverage
            .by_test
            .get(empty_node)
            .cloned()
            .unwrap_or_default(),
    }
}

/// Calibrates the problems of one original test file, which are each other's peers. Every
/// problem gets a record, kept or excluded with its reason.
pub fn calibrate_group(
    sandbox: &Sandbox,
    repo: &RepoConfig,
    problems: &[Problem],
    opts: &CalibrateOptions,
) -> Result<Vec<CalibratedProblem>, GroupError> {
    calibrate_group_noted(sandbox, repo, problems, opts).map(|g| g.records)
}

/// [`calibrate_group`], with the notes on kept problems.
pub fn calibrate_group_noted(
    sandbox: &Sandbox,
    repo: &RepoConfig,
    problems: &[Problem],
    opts: &CalibrateOptions,
) -> Result<GroupCalibration, GroupError> {
    let prepared: Vec<Prepared> = problems.iter().map(prepare).collect::<Result<_, _>>()?;
    let runs = opts.runs.max(1) as usize;
    // observations[i][r]: problem i in run r.
    let mut observations: Vec<Vec<Observation>> = vec![Vec::new(); prepared.len()];
    let mut executable = CoverageMap::new();
    // Lines run before the first test of any run of the group (conftests, importing and
    // collecting the problem files and empty variants): the same union whether the group ran
    // at once or a problem at a time, since each problem file is collected either way.
    let mut imported = CoverageMap::new();
    let mut per_test = opts.per_test;
    if !per_test {
        // Problems whose setup is the same have the same empty variant: it runs once, under
        // the name of the first of them, and stands for all of them.
        let mut first_with_text: HashMap<&str, usize> = HashMap::new();
        let empty_of: Vec<usize> = prepared
            .iter()
            .enumerate()
            .map(|(i, p)| *first_with_text.entry(p.empty.text.as_str()).or_insert(i))
            .collect();
        let mut files: Vec<(&str, &str)> = Vec::new();
        let mut nodes: Vec<&str> = Vec::new();
        for (i, p) in prepared.iter().enumerate() {
            files.push((p.py.problem_file.as_str(), p.py.problem_text.as_str()));
            nodes.push(p.py.node_id.as_str());
            if empty_of[i] == i {
                files.push((p.empty.path.as_str(), p.empty.text.as_str()));
                nodes.push(p.empty.node_id.as_str());
            }
        }
        // The runs of a group are independent: they run at once where there are cores to
        // spare (a package of one test file, the last and largest file of a package), each in
        // a fork of its own worker, and are read in order.
        let reports: Vec<RunReport> = (0..runs)
            .into_par_iter()
            .map(|_| run_pytest(sandbox, repo, opts, &files, &nodes))
            .collect::<Result<_, _>>()?;
        for report in reports {
            // A shared run that timed out or crashed says nothing about each test: redo the
            // group one problem at a time, so one bad test costs only itself.
            if matches!(
                report.failure,
                Some((ExclusionReason::Timeout | ExclusionReason::Error, _))
            ) && prepared.len() > 1
            {
                per_test = true;
                observations.iter_mut().for_each(Vec::clear);
                imported.clear();
                break;
            }
            analysis::merge_lines(&mut executable, &report.coverage.executable);
            analysis::merge_lines(&mut imported, &report.coverage.imported);
            for (i, p) in prepared.iter().enumerate() {
                observations[i].push(observe(&report, p, &prepared[empty_of[i]].empty.node_id));
            }
        }
    }
    if per_test {
        for (i, p) in prepared.iter().enumerate() {
            let files = [
                (p.py.problem_file.as_str(), p.py.problem_text.as_str()),
                (p.empty.path.as_str(), p.empty.text.as_str()),
            ];
            let nodes = [p.py.node_id.as_str(), p.empty.node_id.as_str()];
            for _ in 0..runs {
                let report = run_pytest(sandbox, repo, opts, &files, &nodes)?;
                analysis::merge_lines(&mut executable, &report.coverage.executable);
                analysis::merge_lines(&mut imported, &report.coverage.imported);
                observations[i].push(observe(&report, p, &p.empty.node_id));
            }
        }
    }

    let sources = source_files(repo);
    let texts: HashMap<String, String> = sources
        .iter()
        .filter_map(|p| Some((p.clone(), std::fs::read_to_string(repo.root.join(p)).ok()?)))
        .collect();
    let definitions: HashMap<&str, Vec<Definition>> = texts
        .iter()
        .map(|(p, text)| (p.as_str(), analysis::definitions(text)))
        .collect();
    // Lines any import runs: a test that imports a module first (inside its body) has them in
    // its lines, but an empty test covers them as soon as it imports the module in a fresh
    // process (as sandbox-run runs a candidate), so they are no block's. Those of the source
    // text, and those the runs measured before their first test: the bodies of functions
    // called while importing (`TABLE = build_table()`), which no reading of the text finds.
    let mut import_time: CoverageMap = texts
        .iter()
        .map(|(p, text)| (p.clone(), analysis::import_time_lines(text)))
        .collect();
    analysis::merge_lines(&mut import_time, &imported);
    // What the benchmark takes from problem `i` as run `r` saw it (with its peers of the same
    // run): its tiers, unique blocks and targets.
    let used = |i: usize, r: usize| -> Used {
        let o = &observations[i][r];
        let peers: Vec<&CoverageMap> = observations
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, obs)| &obs.get(r).unwrap_or(&obs[0]).base)
            .collect();
        // A block is what a candidate must earn: not what importing runs, nor what the empty
        // test runs where t sits (its setup, autouse fixtures), which `assert True` covers too.
        let block_peers: Vec<&CoverageMap> = peers
            .iter()
            .copied()
            .chain([&import_time, &o.empty])
            .collect();
        Used {
            tiers: analysis::tiers(&sources, &o.base, &o.empty, &peers),
            unique_blocks: analysis::unique_blocks(&o.base, &block_peers, &executable, |p| {
                texts.get(p).cloned()
            }),
            targets: analysis::targets(
                &prepared[i].py.repo_refs,
                |path| definitions.get(path).cloned().unwrap_or_default(),
                &o.base,
                &o.empty,
                &import_time,
            ),
        }
    };
    let mut out = GroupCalibration::default();
    for (i, p) in prepared.iter().enumerate() {
        let obs = &observations[i];
        let first = &obs[0];
        let mut exclusion = judge(obs);
        let mut kept = Used::default();
        if exclusion.is_none() {
            kept = used(i, 0);
            // Flaky is what changes the benchmark; lines that vary elsewhere (a background
            // thread that sometimes reaches a file no tier, block or target comes from) are
            // noted, and the problem stays.
            for (r, o) in obs.iter().enumerate().skip(1) {
                let again = used(i, r);
                if let Some(what) = kept.difference(&again) {
                    exclusion = Some(Exclusion {
                        reason: ExclusionReason::Flaky,
                        detail: format!("{what} differ between run 1 and run {}", r + 1),
                    });
                    break;
                }
                if out.notes.iter().all(|n| n.id != p.problem.id) {
                    if let Some(file) = analysis::differing_file(&first.base, &o.base) {
                        out.notes.push(Note {
                            id: p.problem.id.clone(),
                            text: format!(
                                "covered lines of {file} differ between run 1 and run {}, in no file the benchmark uses",
                                r + 1
                            ),
                        });
                    }
                }
            }
            if exclusion.is_some() {
                kept = Used::default();
                out.notes.retain(|n| n.id != p.problem.id);
            }
        }
        out.records.push(CalibratedProblem {
            kind: RecordKind::CalibratedProblem,
            schema_version: SCHEMA_VERSION,
            id: p.problem.id.clone(),
            repo: p.problem.repo.clone(),
            problem: p.problem.clone(),
            exclusion,
            base: analysis::to_records(&first.base),
            empty: analysis::to_records(&first.empty),
            tiers: kept.tiers,
            unique_blocks: kept.unique_blocks,
            targets: kept.targets,
            runs: obs.iter().map(|o| o.outcome).collect(),
        });
    }
    Ok(out)
}

/// Calibrate's findings on a group: a record per problem, and what it noticed about some of
/// them that changes no record.
#[derive(Debug, Default)]
pub struct GroupCalibration {
    pub records: Vec<CalibratedProblem>,
    pub notes: Vec<Note>,
}

/// A remark on a kept problem (its lines vary between runs outside what the benchmark uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: String,
    pub text: String,
}

/// What the task builders take from one problem.
#[derive(Debug, Default, PartialEq)]
struct Used {
    tiers: Vec<FileTier>,
    unique_blocks: Vec<UniqueBlock>,
    targets: Vec<Target>,
}

impl Used {
    /// What differs between two runs' findings, said for a detail; `None` when nothing does.
    fn difference(&self, other: &Used) -> Option<String> {
        if self.tiers != other.tiers {
            let file = self
                .tiers
                .iter()
                .zip(&other.tiers)
                .find(|(a, b)| a != b)
                .map(|(a, _)| a.path.clone())
                .unwrap_or_default();
            return Some(format!("the context tiers (of {file})"));
        }
        if self.unique_blocks != other.unique_blocks {
            return Some("the unique blocks".into());
        }
        (self.targets != other.targets).then(|| "the targets".into())
    }
}

/// The verdict of the outcomes over all runs of one problem: kept (`None`) or excluded with
/// the evidence. Lines are judged by what the benchmark takes from them, in
/// [`calibrate_group`].
fn judge(obs: &[Observation]) -> Option<Exclusion> {
    let first = &obs[0];
    for (r, o) in obs.iter().enumerate().skip(1) {
        if o.outcome != first.outcome {
            return Some(Exclusion {
                reason: ExclusionReason::Flaky,
                detail: format!("run 1 {:?}, run {} {:?}", first.outcome, r + 1, o.outcome)
                    .to_lowercase(),
            });
        }
    }
    let reason = match first.outcome {
        Outcome::Passed => return None,
        Outcome::Failed => ExclusionReason::Failed,
        Outcome::Timeout => ExclusionReason::Timeout,
        Outcome::NoTestsRun => ExclusionReason::NoTests,
        _ if first.collection_error => ExclusionReason::CollectionError,
        _ => ExclusionReason::Error,
    };
    // Steadied before it is cut: a temporary path or an address of another length would
    // move the cut.
    let mut detail = crate::steady_text(first.message.as_deref().unwrap_or_default());
    if detail.len() > 2000 {
        let mut cut = 2000;
        while !detail.is_char_boundary(cut) {
            cut -= 1;
        }
        detail.truncate(cut);
    }
    Some(Exclusion { reason, detail })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_of_lines() {
        let t = "a\nbb\nccc\n";
        assert_eq!(line_offset(t, 1), Some(0));
        assert_eq!(line_offset(t, 3), Some(5));
        assert_eq!(line_offset(t, 4), Some(9));
        assert_eq!(line_offset(t, 5), None);
        assert_eq!(line_offset(t, 0), None);
    }

    #[test]
    fn junit_cases_map_to_node_ids() {
        let files = ["tests/tmp_test_core_2.py", "tests/tmp_empty_core_2.py"];
        let case = |classname: &str, name: &str| TestCase {
            name: name.into(),
            classname: classname.into(),
            outcome: TestOutcome::Passed,
            message: None,
            duration_secs: 0.0,
        };
        assert_eq!(
            node_of_case(
                &case("tests.tmp_test_core_2.TestLedger", "test_add[1-2]"),
                &files
            )
            .as_deref(),
            Some("tests/tmp_test_core_2.py::TestLedger::test_add")
        );
        assert_eq!(
            node_of_case(&case("tests.tmp_empty_core_2", "test_clover_empty"), &files).as_deref(),
            Some("tests/tmp_empty_core_2.py::test_clover_empty")
        );
        assert_eq!(node_of_case(&case("tests.other", "test_x"), &files), None);
        assert_eq!(
            node_of_case(&case("tests.tmp_test_core_2x", "test_x"), &files),
            None
        );
    }

    #[test]
    fn a_collection_error_names_its_file() {
        let files = ["tests/tmp_test_core_2.py", "tests/tmp_empty_core_2.py"];
        let case = |classname: &str, name: &str| TestCase {
            name: name.into(),
            classname: classname.into(),
            outcome: TestOutcome::Error,
            message: Some("collection failure".into()),
            duration_secs: 0.0,
        };
        assert_eq!(
            file_of_case(&case("", "tests.tmp_empty_core_2"), &files),
            Some("tests/tmp_empty_core_2.py")
        );
        assert_eq!(
            file_of_case(&case("tests", "tmp_test_core_2"), &files),
            Some("tests/tmp_test_core_2.py")
        );
        assert_eq!(
            file_of_case(&case("tests.tmp_test_core_2", "TestLedger"), &files),
            Some("tests/tmp_test_core_2.py")
        );
        assert_eq!(file_of_case(&case("", "tests.conftest"), &files), None);
        assert_eq!(file_of_case(&case("", "tests.tmp_test_core"), &files), None);
    }

    #[test]
    fn skipped_cases_count_neither_way() {
        let c = |passed, failure: Option<Outcome>| Cases {
            passed,
            failure: failure.map(|o| (o, None)),
        };
        assert_eq!(c(true, None).outcome().0, Outcome::Passed);
        assert_eq!(c(true, Some(Outcome::Failed)).outcome().0, Outcome::Failed);
        let (o, m) = c(false, None).outcome();
        assert_eq!(
            (o, m.as_deref()),
            (
                Outcome::NoTestsRun,
                Some("every case of the test was skipped")
            )
        );
    }

    #[test]
    fn a_changing_outcome_is_flaky_and_all_skipped_is_no_tests() {
        let o = |outcome, lines: &[u32]| Observation {
            outcome,
            collection_error: false,
            message: None,
            base: [(
                "m.py".to_string(),
                clover_protocol::LineRanges::from_lines(lines.iter().copied()),
            )]
            .into(),
            empty: CoverageMap::new(),
        };
        assert_eq!(
            judge(&[o(Outcome::Passed, &[1]), o(Outcome::Passed, &[1])]),
            None
        );
        let e = judge(&[o(Outcome::Passed, &[1]), o(Outcome::Failed, &[1])]).unwrap();
        assert_eq!(
            (e.reason, e.detail.as_str()),
            (ExclusionReason::Flaky, "run 1 passed, run 2 failed")
        );
        // Lines alone are judged by what the benchmark takes from them (calibrate_group).
        assert_eq!(
            judge(&[o(Outcome::Passed, &[1]), o(Outcome::Passed, &[1, 2])]),
            None
        );
        let e = judge(&[o(Outcome::Passed, &[1]), o(Outcome::NoTestsRun, &[])]).unwrap();
        assert_eq!(e.reason, ExclusionReason::Flaky);
        let e = judge(&[o(Outcome::NoTestsRun, &[]), o(Outcome::NoTestsRun, &[])]).unwrap();
        assert_eq!(e.reason, ExclusionReason::NoTests);
        let e = judge(&[o(Outcome::Failed, &[1])]).unwrap();
        assert_eq!(e.reason, ExclusionReason::Failed);
    }
}
