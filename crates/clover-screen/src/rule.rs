//! The rules of the screen and the names each one watches.

use std::fmt;

/// Why a construct is screened: each rule is one way a test can reach the machinery that
/// decides its verdict instead of the code under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// Imports or reaches `_pytest`, `pytest_cov` or `coverage` (the runner and the tracer
    /// that write the verdict and the coverage a test is scored by), or writes to pytest's
    /// classes (`pytest.TestReport.x = …`, `monkeypatch.setattr(pytest.TestReport, …)`, a
    /// `"_pytest.…"` path for `mock.patch`).
    TestMachinery,
    /// Defines a `pytest_*` hook, lists `pytest_plugins`, marks a `hookimpl`, or reaches
    /// `pluginmanager`: a plugin sees and can rewrite every report.
    PytestHook,
    /// Reaches `atexit`: code that runs after the session, when the report is written.
    Atexit,
    /// `os._exit`, an `os.exec*` or `pytest.exit`: the process ends (or becomes another
    /// program) without the test's own outcome.
    ProcessExit,
    /// `sys.settrace`/`setprofile`/`monitoring`, `threading.settrace`/`setprofile`: the hooks
    /// the coverage tracer itself sits on.
    Tracing,
    /// `sys._getframe`, `inspect.currentframe`/`stack`, `.f_back`, `.f_globals`, `.f_locals`,
    /// `tb_frame`: reaching the runner's frames and their variables from the test.
    FrameAccess,
    /// `ctypes`: raw memory, where any object can be rewritten.
    Ctypes,
    /// `gc.get_objects`/`get_referrers`/`get_referents`: finding the runner's live objects.
    GcIntrospection,
    /// Assigning, deleting or `setattr` on a name of `builtins`/`__builtins__`, which every
    /// module (the reporters included) looks names up in.
    BuiltinsWrite,
    /// A path under the run's report folder (`.clover-out`), pytest's report path option, or
    /// the variable that names the run's report channel (`CLOVER_REPORT_FD`).
    ReportFolder,
    /// `exec`/`eval`/`compile` of anything but a string literal: code the screen cannot see.
    DynamicCode,
    /// Nested deeper than the screen follows: a file it cannot vouch for.
    Unscreenable,
}

impl Rule {
    /// Every rule, in a stable order.
    pub const ALL: [Rule; 12] = [
        Rule::TestMachinery,
        Rule::PytestHook,
        Rule::Atexit,
        Rule::ProcessExit,
        Rule::Tracing,
        Rule::FrameAccess,
        Rule::Ctypes,
        Rule::GcIntrospection,
        Rule::BuiltinsWrite,
        Rule::ReportFolder,
        Rule::DynamicCode,
        Rule::Unscreenable,
    ];

    /// The rule's stable id, as reports and allowlists name it.
    pub fn id(self) -> &'static str {
        match self {
            Rule::TestMachinery => "test-machinery",
            Rule::PytestHook => "pytest-hook",
            Rule::Atexit => "atexit",
            Rule::ProcessExit => "process-exit",
            Rule::Tracing => "tracing",
            Rule::FrameAccess => "frame-access",
            Rule::Ctypes => "ctypes",
            Rule::GcIntrospection => "gc-introspection",
            Rule::BuiltinsWrite => "builtins-write",
            Rule::ReportFolder => "report-folder",
            Rule::DynamicCode => "dynamic-code",
            Rule::Unscreenable => "unscreenable",
        }
    }

    /// The rule of an id, the inverse of [`Rule::id`].
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.id() == id)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The run's report folder, relative to the repository: the sandbox's pytest runner writes
/// its JUnit and coverage reports there (`OUT_DIR` in `clover-sandbox`'s `pytest.rs`; a test
/// of this crate checks that the two agree).
pub const REPORT_FOLDER: &str = ".clover-out";

/// The variable that names the descriptor of the run's report channel until clover's plugin
/// takes it over (`REPORT_CHANNEL_ENV` in `clover-sandbox`'s `spec.rs`; a test of this crate
/// checks that the two agree).
pub const REPORT_CHANNEL_ENV: &str = "CLOVER_REPORT_FD";

/// What in a string reaches the run's reports: the folder or the channel's variable.
pub(crate) fn report_marker(s: &str) -> Option<&'static str> {
    [REPORT_FOLDER, REPORT_CHANNEL_ENV]
        .into_iter()
        .find(|m| s.contains(m))
}

/// Dotted paths (after aliases are resolved) that are screened, with everything below them:
/// `"sys.monitoring"` also covers `sys.monitoring.use_tool_id`.
pub(crate) const PATHS: &[(&str, Rule)] = &[
    ("_pytest", Rule::TestMachinery),
    ("pytest_cov", Rule::TestMachinery),
    ("coverage", Rule::TestMachinery),
    // clover's own plugins in the run: the session record's writer holds the report
    // channel.
    ("_clover_report", Rule::TestMachinery),
    ("_clover_worker", Rule::TestMachinery),
    ("_clover_calibrate", Rule::TestMachinery),
    ("pytest.hookimpl", Rule::PytestHook),
    ("pytest.hookspec", Rule::PytestHook),
    ("pluggy", Rule::PytestHook),
    ("atexit", Rule::Atexit),
    // Ends the session with the exit code it is given, whatever the test's outcome.
    ("pytest.exit", Rule::ProcessExit),
    ("os._exit", Rule::ProcessExit),
    ("posix._exit", Rule::ProcessExit),
    ("os.execv", Rule::ProcessExit),
    ("os.execve", Rule::ProcessExit),
    ("os.execl", Rule::ProcessExit),
    ("os.execle", Rule::ProcessExit),
    ("os.execlp", Rule::ProcessExit),
    ("os.execlpe", Rule::ProcessExit),
    ("os.execvp", Rule::ProcessExit),
    ("os.execvpe", Rule::ProcessExit),
    ("posix.execv", Rule::ProcessExit),
    ("posix.execve", Rule::ProcessExit),
    ("sys.settrace", Rule::Tracing),
    ("sys.setprofile", Rule::Tracing),
    ("sys.gettrace", Rule::Tracing),
    ("sys.monitoring", Rule::Tracing),
    ("threading.settrace", Rule::Tracing),
    ("threading.setprofile", Rule::Tracing),
    ("threading.settrace_all_threads", Rule::Tracing),
    ("threading.setprofile_all_threads", Rule::Tracing),
    ("sys._getframe", Rule::FrameAccess),
    ("sys._current_frames", Rule::FrameAccess),
    ("inspect.currentframe", Rule::FrameAccess),
    ("inspect.stack", Rule::FrameAccess),
    ("inspect.trace", Rule::FrameAccess),
    ("inspect.getouterframes", Rule::FrameAccess),
    ("ctypes", Rule::Ctypes),
    ("_ctypes", Rule::Ctypes),
    ("gc.get_objects", Rule::GcIntrospection),
    ("gc.get_referrers", Rule::GcIntrospection),
    ("gc.get_referents", Rule::GcIntrospection),
];

/// Attribute names screened whatever object they are taken from (and string literals equal
/// to them, as `getattr` would take them): each is specific enough that no honest test reaches
/// it by accident, and checking the name also catches an object that came in through a
/// parameter, where no alias can be followed.
pub(crate) const ATTRIBUTES: &[(&str, Rule)] = &[
    ("pluginmanager", Rule::PytestHook),
    ("_exit", Rule::ProcessExit),
    ("settrace", Rule::Tracing),
    ("setprofile", Rule::Tracing),
    ("_getframe", Rule::FrameAccess),
    ("_current_frames", Rule::FrameAccess),
    ("f_back", Rule::FrameAccess),
    ("f_globals", Rule::FrameAccess),
    ("f_locals", Rule::FrameAccess),
    ("f_builtins", Rule::FrameAccess),
    ("tb_frame", Rule::FrameAccess),
    ("get_referrers", Rule::GcIntrospection),
    ("get_referents", Rule::GcIntrospection),
    // pytest's `--junitxml` path lives in `config.option.xmlpath`.
    ("xmlpath", Rule::ReportFolder),
];

/// The rule that screens a dotted path, if any.
pub(crate) fn path_rule(path: &str) -> Option<Rule> {
    PATHS.iter().find_map(|(p, rule)| {
        let below = path
            .strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'));
        below.then_some(*rule)
    })
}

/// The rule that screens an attribute name, if any. Every `pytest_*` attribute is a hook
/// (`config.hook.pytest_runtest_logreport`).
pub(crate) fn attribute_rule(name: &str) -> Option<Rule> {
    if name.starts_with("pytest_") {
        return Some(Rule::PytestHook);
    }
    literal_attribute_rule(name)
}

/// The beginnings of pytest's hook names. A string literal is screened as a hook name only
/// when it starts with one of these: `"pytest_fixture"` is a parameter's name in click's
/// tests, `"pytest_runtest_makereport"` is a method name for `setattr` or `type()`.
const HOOK_PREFIXES: &[&str] = &[
    "pytest_runtest_",
    "pytest_report_",
    "pytest_session",
    "pytest_terminal_",
    "pytest_configure",
    "pytest_unconfigure",
    "pytest_collect",
    "pytest_make",
    "pytest_pyfunc_call",
    "pytest_exception_interact",
    "pytest_internalerror",
    "pytest_keyboard_interrupt",
    "pytest_plugin_registered",
    "pytest_cmdline_",
    "pytest_load_initial_conftests",
    "pytest_addoption",
    "pytest_addhooks",
    "pytest_warning_recorded",
    "pytest_assertrepr_compare",
    "pytest_assertion_pass",
    "pytest_fixture_",
    "pytest_itemcollected",
    "pytest_deselected",
    "pytest_ignore_collect",
    "pytest_generate_tests",
];

/// The rule that screens a string literal naming an attribute (`getattr(x, "f_back")`,
/// `setattr(cls, "pytest_runtest_makereport", f)`).
pub(crate) fn literal_attribute_rule(name: &str) -> Option<Rule> {
    if HOOK_PREFIXES.iter().any(|p| name.starts_with(p)) {
        return Some(Rule::PytestHook);
    }
    ATTRIBUTES
        .iter()
        .find_map(|(n, rule)| (*n == name).then_some(*rule))
}

/// One screened construct in a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    /// What was found, with aliases resolved: `os._exit`, `import coverage`,
    /// `def pytest_runtest_makereport`, `.f_back`, `exec of a non-literal`.
    pub construct: String,
    /// 1-based line of the construct's start.
    pub line: u32,
    /// 1-based column of the construct's start, in bytes.
    pub column: u32,
    /// The construct's source text: its first line, cut at 120 characters.
    pub snippet: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}:{}: {}: {} (`{}`)",
            self.line, self.column, self.rule, self.construct, self.snippet
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_cover_what_lies_below_them_and_nothing_beside() {
        assert_eq!(path_rule("os._exit"), Some(Rule::ProcessExit));
        assert_eq!(path_rule("sys.monitoring.use_tool_id"), Some(Rule::Tracing));
        assert_eq!(
            path_rule("coverage.Coverage.current"),
            Some(Rule::TestMachinery)
        );
        assert_eq!(path_rule("coverage_tools"), None);
        assert_eq!(path_rule("os._exited"), None);
        assert_eq!(path_rule("os.path.join"), None);
    }

    #[test]
    fn ids_round_trip() {
        for rule in Rule::ALL {
            assert_eq!(Rule::from_id(rule.id()), Some(rule));
        }
        assert_eq!(Rule::from_id("nope"), None);
    }
}
