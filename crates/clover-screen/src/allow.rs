//! The allowlist: legitimate uses of screened constructs, each in one exact shape, each with
//! its reason.

use crate::rule::{Finding, Rule};

/// One legitimate use of a screened construct, in one exact shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allow {
    pub rule: Rule,
    /// The construct, exactly as [`Finding::construct`] names it.
    pub construct: &'static str,
    /// The statement it is allowed in, exactly as [`Finding::snippet`] shows it: the same
    /// construct in any other statement is still reported.
    pub statement: &'static str,
    /// Where the use was found (package and file), so that an entry can be checked and
    /// dropped when its package changes.
    pub seen_in: &'static str,
    /// Why this use cannot touch a verdict, and what it leaves open.
    pub reason: &'static str,
}

impl Allow {
    /// Whether this entry lets `finding` pass.
    pub fn matches(&self, finding: &Finding) -> bool {
        self.rule == finding.rule
            && self.construct == finding.construct
            && self.statement == finding.snippet
    }
}

/// The legitimate uses found in the ground truths of the corpus. `cargo xtask screen-corpus`
/// lists every hit with the entry that lets it pass; an entry no hit uses any more should go.
pub const ALLOWLIST: &[Allow] = &[
    Allow {
        rule: Rule::PytestHook,
        construct: ".pluginmanager",
        statement: r#"logging_plugin = pytestconfig.pluginmanager.unregister(name="logging-plugin")"#,
        seen_in: "flask tests/test_logging.py (autouse fixture reset_logging)",
        reason: "takes pytest's own logging plugin out for one test so the test sees the root \
                 logger's handlers; unregistering adds no hook",
    },
    Allow {
        rule: Rule::PytestHook,
        construct: ".pluginmanager",
        statement: r#"pytestconfig.pluginmanager.register(logging_plugin, "logging-plugin")"#,
        seen_in: "flask tests/test_logging.py (autouse fixture reset_logging)",
        reason: "puts back the plugin the same fixture took out; a forged plugin in its place \
                 would need hook methods, which the pytest-hook rule reports where they are \
                 defined (def pytest_*, hookimpl)",
    },
    Allow {
        rule: Rule::TestMachinery,
        construct: "from _pytest.monkeypatch import",
        statement: "from _pytest.monkeypatch import notset",
        seen_in: "flask tests/test_cli.py",
        reason: "`notset` is monkeypatch's marker for a variable that was not set, a constant; \
                 no other name of _pytest is allowed",
    },
    Allow {
        rule: Rule::TestMachinery,
        construct: "_pytest.monkeypatch.notset",
        statement: "monkeypatch._setitem.append((os.environ, item, notset))",
        seen_in: "flask tests/test_cli.py (test_load_dotenv, test_dotenv_path)",
        reason: "asks monkeypatch to delete an environment variable at teardown",
    },
    Allow {
        rule: Rule::FrameAccess,
        construct: "sys._getframe",
        statement: r#"click.echo( f"{sys._getframe(1).f_code.co_name}" f"={'|'.join(click.get_current_context().args)}" )"#,
        seen_in: "click tests/test_chain.py (helper debug)",
        reason: "prints the calling command's name (its code object's co_name); no frame \
                 variable is read",
    },
    Allow {
        rule: Rule::GcIntrospection,
        construct: "gc.get_objects",
        statement: "counts.add(len(gc.get_objects()))",
        seen_in: "markupsafe tests/test_leak.py (test_markup_leaks)",
        reason: "a leak test that keeps only the number of live objects, never an object",
    },
    Allow {
        rule: Rule::DynamicCode,
        construct: "exec of a non-literal",
        statement: r"exec(f'def func{param_string}:\n    {body}', globals(), d)",
        seen_in: "toolz toolz/tests/test_inspect_args.py (helper make_func)",
        reason: "builds a function from a signature string to test signature inspection; the \
                 strings are the tests' literals. Open: code a candidate passes through \
                 make_func's argument is not screened (the sandbox still contains it)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_allows_its_statement_and_nothing_else() {
        let allowed = "import gc\ncounts.add(len(gc.get_objects()))\n";
        assert_eq!(crate::screen_python(allowed), Vec::new());
        let other = "import gc\nfor o in gc.get_objects():\n    pass\n";
        let found = crate::screen_python(other);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].rule, Rule::GcIntrospection);
    }

    #[test]
    fn every_entry_has_a_reason_and_a_place() {
        for a in ALLOWLIST {
            assert!(!a.reason.is_empty() && !a.seen_in.is_empty(), "{a:?}");
        }
    }
}
