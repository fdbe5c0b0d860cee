//! A static screen for reward hacking: finds the constructs in a model-written test that no
//! honest unit test needs, because they reach the machinery that decides the test's verdict
//! (pytest, its plugins and reports, the coverage tracer, the process's exit) instead of the
//! code under test.
//!
//! [`screen_python`] parses a Python test file with tree-sitter-python and returns one
//! [`Finding`] per screened construct, with its [`Rule`], line, column and source snippet. It
//! catches:
//!
//! - importing or reaching `_pytest`, `pytest_cov` or `coverage` ([`Rule::TestMachinery`]);
//! - a function named `pytest_*` at any level, `pytest_plugins`, `pytest.hookimpl`, `pluggy`,
//!   any `pluginmanager` or `pytest_*` attribute ([`Rule::PytestHook`]);
//! - `atexit` ([`Rule::Atexit`]); `os._exit` and `os.exec*` ([`Rule::ProcessExit`]);
//! - `sys.settrace`/`setprofile`/`gettrace`/`monitoring`, `threading.settrace`/`setprofile`
//!   ([`Rule::Tracing`]);
//! - `sys._getframe`, `inspect.currentframe`/`stack`/`trace`, `.f_back`, `.f_globals`,
//!   `.f_locals`, `tb_frame` ([`Rule::FrameAccess`]); `ctypes` ([`Rule::Ctypes`]);
//!   `gc.get_objects`/`get_referrers`/`get_referents` ([`Rule::GcIntrospection`]);
//! - assigning, deleting or `setattr` on a name of `builtins`/`__builtins__`
//!   ([`Rule::BuiltinsWrite`]);
//! - a string holding the run's report folder [`REPORT_FOLDER`] or the report channel's
//!   variable [`REPORT_CHANNEL_ENV`], and pytest's `xmlpath` ([`Rule::ReportFolder`]);
//!   importing clover's own plugins (`_clover_report`, which holds the channel)
//!   ([`Rule::TestMachinery`]);
//! - `exec`/`eval`/`compile` of anything but a string literal, or passed on as a value
//!   ([`Rule::DynamicCode`]);
//! - a file nested deeper than the screen follows (400 levels of syntax; the corpus needs 26),
//!   reported as one finding instead of overflowing the stack ([`Rule::Unscreenable`]).
//!
//! Names are followed through aliases (`import os as o`, `from os import _exit as e`,
//! `ex = os._exit`, `from os import *`), attribute chains, `getattr` with a literal name,
//! `__import__`/`importlib.import_module` of a literal and `sys.modules["…"]`. The most
//! specific attribute names (`_getframe`, `f_back`, `pluginmanager`, …) are caught on any
//! object and as string literals, so an object passed in as a parameter does not hide them.
//!
//! Legitimate uses pass through an allowlist ([`Allow`], [`ALLOWLIST`]): each entry names
//! the rule, the construct in the exact shape it is allowed in, and why it is harmless.
//! [`Screen::without_allowlist`] shows every hit, for measuring the screen.
//!
//! What it deliberately does not do: run anything, follow values through calls, or decide
//! what happens to a screened candidate (the sandbox-run stage gives it its outcome). It is a
//! screen, not a proof: a determined test can build a name at run time; the sandbox and the
//! report checks remain the containment, and the screen makes the easy forgeries visible.
//!
//! ```
//! use clover_screen::{screen_python, Rule};
//!
//! let found = screen_python("import os as o\n\ndef test_x():\n    o._exit(0)\n");
//! assert_eq!(found.len(), 1);
//! assert_eq!((found[0].rule, found[0].line), (Rule::ProcessExit, 4));
//! assert_eq!(found[0].construct, "os._exit");
//! ```

mod allow;
mod python;
mod rule;

pub use allow::{Allow, ALLOWLIST};
pub use rule::{Finding, Rule, REPORT_CHANNEL_ENV, REPORT_FOLDER};

/// A screen with its allowlist.
#[derive(Debug, Clone)]
pub struct Screen {
    allow: Vec<Allow>,
}

impl Default for Screen {
    /// The screen with [`ALLOWLIST`].
    fn default() -> Self {
        Screen::new(ALLOWLIST.to_vec())
    }
}

impl Screen {
    /// A screen that lets the findings `allow` matches pass.
    pub fn new(allow: Vec<Allow>) -> Self {
        Screen { allow }
    }

    /// A screen that reports every hit.
    pub fn without_allowlist() -> Self {
        Screen::new(Vec::new())
    }

    /// The findings in a Python source that no allowlist entry lets pass, in source order.
    /// A file that does not parse is screened as far as tree-sitter recovers it.
    pub fn python(&self, source: &str) -> Vec<Finding> {
        python::findings(source)
            .into_iter()
            .filter(|f| !self.allow.iter().any(|a| a.matches(f)))
            .collect()
    }
}

/// The findings in a Python source under the default [`ALLOWLIST`]; empty when nothing is
/// screened.
pub fn screen_python(source: &str) -> Vec<Finding> {
    Screen::default().python(source)
}
