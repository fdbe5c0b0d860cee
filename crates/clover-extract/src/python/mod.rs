//! Python: test files → one [`Problem`] per test function, each with its isolated problem file.

mod assertions;
mod collect_ignore;
mod isolate;
mod refs;
mod units;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Arc;

use clover_protocol::{
    AssertionSite, Language, Operand, Problem, PythonProblem, RecordKind, Span, SCHEMA_VERSION,
};
use rayon::prelude::*;
use tree_sitter::{Node, Parser, Tree};

pub use assertions::{is_constant_operand, is_constant_operand_as, ConstantReading};

use crate::error::{ExtractError, FileIssue, IssueKind};
use crate::options::ExtractOptions;
use crate::walk::{find_files, read_source, Globs};
use crate::Extraction;
use isolate::{isolate, Target};
use refs::{Bindings, Resolver};
use units::{last_line, Block, Builder, Role, Src, Unit};

/// The identifiers Python `code` uses (names and attribute names), from a parse of the code
/// as it is (dedent it first). The one rule for "the code names X": pack-context asks Task II
/// only for targets the ground truth's body names, and score requires an answer to name its
/// target, both by this.
pub fn identifiers(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(tree) = parse(code) else {
        return out;
    };
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.kind() == "identifier" {
            if let Ok(t) = node.utf8_text(code.as_bytes()) {
                out.insert(t.to_string());
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    out
}

/// Problem files are named with this prefix; files that start with it are never tests.
const PROBLEM_FILE_PREFIX: &str = "tmp_test_";

pub(crate) fn extract(opts: &ExtractOptions) -> Result<Extraction, ExtractError> {
    let globs = Globs::new(&opts.test_globs)?;
    let excludes = Globs::new(&opts.excludes)?;
    let files = find_files(&opts.root, &opts.test_dirs, &excludes, &|p| {
        let name = p.rsplit('/').next().unwrap_or(p);
        name.ends_with(".py")
            && name != "conftest.py"
            && !name.starts_with(PROBLEM_FILE_PREFIX)
            && globs.matches(p)
    })?;
    let ignored = collect_ignore::collect_ignored(&opts.root, &files);
    let mut out = Extraction::default();
    out.summary.test_files = files.len() as u64;
    out.summary.collect_ignored = ignored.len() as u64;
    out.test_files = files.clone();
    let files: Vec<String> = files
        .into_iter()
        .filter(|f| match ignored.get(f) {
            Some(conftest) => {
                out.issues.push(FileIssue {
                    path: f.clone(),
                    kind: IssueKind::CollectIgnored,
                    detail: format!("{conftest} lists it in collect_ignore or collect_ignore_glob"),
                });
                false
            }
            None => true,
        })
        .collect();
    let resolver = Resolver::new(&opts.root, &opts.source_dirs, globs);
    let results: Vec<(u64, Result<Vec<Problem>, FileIssue>)> = files
        .par_iter()
        .map(
            |rel| match read_source(&opts.root, rel, opts.max_file_bytes) {
                Ok(text) => (
                    text.len() as u64,
                    file_problems(&opts.repo, rel, &text, Some(&resolver)),
                ),
                Err(issue) => (0, Err(issue)),
            },
        )
        .collect();
    for (bytes, r) in results {
        out.summary.bytes += bytes;
        match r {
            Ok(problems) => {
                if !problems.is_empty() {
                    out.summary.used_files += 1;
                }
                out.problems.extend(problems);
            }
            Err(issue) => out.issues.push(issue),
        }
    }
    out.issues.sort();
    out.summary.problems = out.problems.len() as u64;
    out.summary.issues = out.issues.len() as u64;
    Ok(out)
}

/// The problems of one Python test file given as text, without resolving repository
/// references (there is no repository to resolve them in). `test_file` is the path relative
/// to the repository root; problem files are named next to it.
pub fn python_problems(repo: &str, test_file: &str, text: &str) -> Result<Vec<Problem>, FileIssue> {
    file_problems(repo, test_file, text, None)
}

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn parse(text: &str) -> Option<Tree> {
    PARSER.with(|p| {
        let mut p = p.borrow_mut();
        let parser = p.get_or_insert_with(|| {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_python::LANGUAGE.into())
                .expect("tree-sitter-python matches the tree-sitter version");
            parser
        });
        parser.parse(text, None)
    })
}

/// The first syntax error in a tree, as "line L, column C: ...".
fn first_error(src: &Src, root: Node) -> String {
    let mut stack = vec![root];
    let mut best: Option<Node> = None;
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            if best.is_none_or(|b| n.start_byte() < b.start_byte()) {
                best = Some(n);
            }
            continue;
        }
        if n.has_error() {
            let mut c = n.walk();
            for child in n.children(&mut c) {
                stack.push(child);
            }
        }
    }
    let Some(n) = best else {
        return "unparsable".into();
    };
    let p = n.start_position();
    let what = if n.is_missing() {
        format!("missing `{}`", n.kind())
    } else {
        let text: String = src.node_text(n).chars().take(30).collect();
        format!("unexpected `{}`", text.lines().next().unwrap_or(""))
    };
    format!("line {}, column {}: {what}", p.row + 1, p.column + 1)
}

fn file_problems(
    repo: &str,
    rel: &str,
    text: &str,
    resolver: Option<&Resolver>,
) -> Result<Vec<Problem>, FileIssue> {
    let issue = |kind, detail| FileIssue {
        path: rel.to_string(),
        kind,
        detail,
    };
    let tree = parse(text).ok_or_else(|| issue(IssueKind::SyntaxError, "parser gave up".into()))?;
    let root = tree.root_node();
    let src = Src::new(text);
    if root.has_error() {
        return Err(issue(IssueKind::SyntaxError, first_error(&src, root)));
    }
    let module = Builder::new(&src).module(root);
    let targets = targets(&module);
    let (dir, stem) = match rel.rsplit_once('/') {
        Some((d, f)) => (format!("{d}/"), f.trim_end_matches(".py").to_string()),
        None => (String::new(), rel.trim_end_matches(".py").to_string()),
    };
    let context = resolver.map(|r| (r, r.bindings(&src, rel, root), r.conftest_requests(rel)));
    let mut problems = Vec::with_capacity(targets.len());
    for (n, target) in targets.iter().enumerate() {
        let problem_file = format!("{dir}{PROBLEM_FILE_PREFIX}{stem}_{n}.py");
        problems.push(build(
            repo,
            rel,
            &problem_file,
            &src,
            &module,
            target,
            context.as_ref(),
        ));
    }
    Ok(problems)
}

/// Every test of the module, in source order, one per distinct class path and name.
fn targets<'u, 't>(module: &'u Block<'t>) -> Vec<Target<'u, 't>> {
    struct Occ<'u, 't> {
        chain: Vec<&'u Unit<'t>>,
        unit: &'u Unit<'t>,
        block: (usize, usize),
    }
    fn collect<'u, 't>(
        block: &'u Block<'t>,
        key: (usize, usize),
        chain: &mut Vec<&'u Unit<'t>>,
        out: &mut Vec<Occ<'u, 't>>,
    ) {
        for u in &block.units {
            match u.role {
                Role::Test => out.push(Occ {
                    chain: chain.clone(),
                    unit: u,
                    block: key,
                }),
                Role::TestClass | Role::Compound => {
                    chain.push(u);
                    for (i, b) in u.blocks.iter().enumerate() {
                        collect(b, (u.id, i), chain, out);
                    }
                    chain.pop();
                }
                Role::Plain { .. } => {}
            }
        }
    }
    let mut occs = Vec::new();
    collect(module, (0, 0), &mut Vec::new(), &mut occs);
    let classes_of = |chain: &[&Unit]| -> Vec<String> {
        chain
            .iter()
            .filter(|u| u.role == Role::TestClass)
            .map(|u| u.name().to_string())
            .collect()
    };
    let mut out: Vec<Target> = Vec::new();
    for (i, occ) in occs.iter().enumerate() {
        let classes = classes_of(&occ.chain);
        let name = occ.unit.name().to_string();
        if out.iter().any(|t| t.classes == classes && t.name == name) {
            continue;
        }
        // All definitions of this test; a later one in the same body replaces an earlier one,
        // as it does when Python runs the module.
        let same: Vec<&Occ> = occs[i..]
            .iter()
            .filter(|o| o.unit.name() == name && classes_of(&o.chain) == classes)
            .collect();
        let live: Vec<&Occ> = same
            .iter()
            .enumerate()
            .filter(|(j, o)| !same[j + 1..].iter().any(|later| later.block == o.block))
            .map(|(_, o)| *o)
            .collect();
        out.push(Target {
            chain: live[0].chain.clone(),
            defs: live.iter().map(|o| o.unit).collect(),
            classes,
            name,
        });
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn build(
    repo: &str,
    rel: &str,
    problem_file: &str,
    src: &Src,
    module: &Block,
    target: &Target,
    context: Option<&(&Resolver, Bindings, Arc<BTreeSet<String>>)>,
) -> Problem {
    let no_requests = BTreeSet::new();
    let requests = context.map_or(&no_requests, |c| &*c.2);
    let iso = isolate(src, module, target, requests);
    let out = Src::new(&iso.text);
    let primary = target.defs[0];
    let func = if primary.node.kind() == "decorated_definition" {
        primary
            .node
            .child_by_field_name("definition")
            .unwrap_or(primary.node)
    } else {
        primary.node
    };
    // Maps a position in the original file (inside the test) to the problem file.
    let map_line = |line: usize| iso.test_first_line + (line - primary.first);
    let map_byte =
        |line: usize, byte: usize| out.line_start(map_line(line)) + (byte - src.line_start(line));
    let span = |n: Node| Span {
        start_line: n.start_position().row as u32 + 1,
        end_line: last_line(n) as u32 + 1,
        start_byte: n.start_byte() as u32,
        end_byte: n.end_byte() as u32,
    };
    let problem_span = |n: Node| Span {
        start_line: map_line(n.start_position().row) as u32 + 1,
        end_line: map_line(last_line(n)) as u32 + 1,
        start_byte: map_byte(n.start_position().row, n.start_byte()) as u32,
        end_byte: map_byte(n.end_position().row, n.end_byte()) as u32,
    };

    let decl_line = map_line(primary.decl_first);
    let setup_code = iso.text[..out.line_start(decl_line)].to_string();
    let mut c = func.walk();
    let body_node = func.child_by_field_name("body");
    let colon_end = func
        .children(&mut c)
        .filter(|n| n.kind() == ":" && body_node.is_none_or(|b| n.end_byte() <= b.start_byte()))
        .last()
        .map_or(func.end_byte(), |n| n.end_byte());
    // The declaration runs through the end of the colon's line and the body is the lines after
    // it, so that the two are contiguous in the problem file (calibrate swaps them out).
    let colon_line = src.text[..colon_end].matches('\n').count();
    let mut declaration =
        src.text[src.line_start(primary.decl_first)..src.line_end(colon_line)].to_string();
    if !declaration.ends_with('\n') {
        declaration.push('\n');
    }
    let body_start = src.line_end(colon_line).min(src.line_end(primary.last));
    let mut body = src.text[body_start..src.line_end(primary.last)].to_string();
    if !body.is_empty() && !body.ends_with('\n') {
        body.push('\n');
    }

    let assertions = body_node
        .map(assertions::find)
        .unwrap_or_default()
        .into_iter()
        .map(|a| AssertionSite {
            span: span(a.node),
            problem_span: problem_span(a.node),
            text: src.node_text(a.node).to_string(),
            form: a.form,
            operator: a.operator,
            operands: a
                .operands
                .iter()
                .map(|o| Operand {
                    text: src.node_text(*o).to_string(),
                    problem_span: problem_span(*o),
                    is_constant: assertions::is_constant(*o, src.text, ConstantReading::Ast),
                })
                .collect(),
        })
        .collect();
    let repo_refs = context
        .map(|(r, bindings, _)| r.refs(src, bindings, primary.node))
        .unwrap_or_default();

    let mut path = target.classes.clone();
    path.push(target.name.clone());
    let qualified = path.join("::");
    Problem {
        kind: RecordKind::Problem,
        schema_version: SCHEMA_VERSION,
        id: format!("{repo}/{rel}::{qualified}"),
        repo: repo.to_string(),
        language: Language::Python,
        python: Some(PythonProblem {
            test_file: rel.to_string(),
            class: (!target.classes.is_empty()).then(|| target.classes.join("::")),
            name: target.name.clone(),
            span: span(primary.node),
            problem_file: problem_file.to_string(),
            node_id: format!("{problem_file}::{qualified}"),
            problem_text: iso.text.clone(),
            setup_code,
            declaration,
            body,
            problem_declaration_line: decl_line as u32 + 1,
            assertions,
            repo_refs,
        }),
        cpp: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clover_protocol::AssertionForm;

    fn problems(text: &str) -> Vec<Problem> {
        python_problems("r", "tests/test_m.py", text).unwrap()
    }

    fn py(p: &Problem) -> &PythonProblem {
        p.python.as_ref().unwrap()
    }

    fn by_name<'a>(ps: &'a [Problem], name: &str) -> &'a PythonProblem {
        ps.iter().map(py).find(|p| p.name == name).unwrap()
    }

    const MODULE: &str = r#"import os
import pytest
from pkg import thing

LIMIT = 3
UNUSED = 4


def helper_b(x):
    return x + LIMIT


def helper_a(x):
    # calls helper_b
    return helper_b(x) * 2


def unrelated():
    return UNUSED


@pytest.fixture
def value():
    return 1


@pytest.fixture(autouse=True)
def env(monkeypatch):
    monkeypatch.setenv("X", "1")


def test_uses_helpers(value):
    assert helper_a(value) == 8


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n in (1, 2), "message"


class TestThing:
    factor = 2

    def setup_method(self, method):
        self.base = thing(self.factor)

    def scale(self, x):
        return x * self.factor

    def unused_helper(self):
        return os.getcwd()

    def test_scaled(self):
        assert self.scale(self.base) > 0

    def test_other(self):
        assert True


test_uses_helpers.extra = True
"#;

    #[test]
    fn keeps_transitive_helpers_and_drops_unrelated_code() {
        let ps = problems(MODULE);
        let names: Vec<&str> = ps.iter().map(|p| py(p).name.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "test_uses_helpers",
                "test_param",
                "test_scaled",
                "test_other"
            ]
        );
        let p = by_name(&ps, "test_uses_helpers");
        let t = &p.problem_text;
        for kept in [
            "def helper_a",
            "def helper_b",
            "LIMIT = 3",
            "def value",
            "def env",
            "import pytest",
            "# calls helper_b",
        ] {
            assert!(t.contains(kept), "missing {kept}:\n{t}");
        }
        for dropped in [
            "def unrelated",
            "UNUSED = 4",
            "class TestThing",
            "def test_param",
            "import os",
            "from pkg",
        ] {
            assert!(!t.contains(dropped), "kept {dropped}:\n{t}");
        }
        // A statement naming the test follows it; the test is otherwise last.
        assert!(
            t.ends_with("    assert helper_a(value) == 8\n\n\ntest_uses_helpers.extra = True\n"),
            "{t}"
        );
        assert_eq!(p.problem_file, "tests/tmp_test_test_m_0.py");
        assert_eq!(p.node_id, "tests/tmp_test_test_m_0.py::test_uses_helpers");
        assert_eq!(ps[0].id, "r/tests/test_m.py::test_uses_helpers");
    }

    #[test]
    fn declaration_and_body_sit_together_in_the_problem_file() {
        for p in problems(MODULE).iter().map(py) {
            let t = &p.problem_text;
            let start: usize = t
                .lines()
                .take(p.problem_declaration_line as usize - 1)
                .map(|l| l.len() + 1)
                .sum();
            assert_eq!(&t[..start], p.setup_code);
            assert!(
                t[start..].starts_with(&format!("{}{}", p.declaration, p.body)),
                "{}",
                p.name
            );
            for a in &p.assertions {
                let s = &a.problem_span;
                assert_eq!(&t[s.start_byte as usize..s.end_byte as usize], a.text);
                for o in &a.operands {
                    let s = &o.problem_span;
                    assert_eq!(&t[s.start_byte as usize..s.end_byte as usize], o.text);
                }
            }
        }
    }

    #[test]
    fn a_method_keeps_its_class_setup_and_the_helpers_it_calls() {
        let ps = problems(MODULE);
        let p = by_name(&ps, "test_scaled");
        assert_eq!(p.class.as_deref(), Some("TestThing"));
        assert_eq!(
            p.node_id,
            "tests/tmp_test_test_m_2.py::TestThing::test_scaled"
        );
        let t = &p.problem_text;
        for kept in [
            "class TestThing:",
            "factor = 2",
            "def setup_method",
            "def scale",
            "from pkg import thing",
            "def env",
        ] {
            assert!(t.contains(kept), "missing {kept}:\n{t}");
        }
        for dropped in [
            "def unused_helper",
            "def test_other",
            "import os",
            "def helper_a",
            "test_uses_helpers.extra",
        ] {
            assert!(!t.contains(dropped), "kept {dropped}:\n{t}");
        }
        assert_eq!(p.declaration, "    def test_scaled(self):\n");
        assert_eq!(p.body, "        assert self.scale(self.base) > 0\n");
    }

    #[test]
    fn assertions_carry_form_operator_and_constness() {
        let ps = problems(MODULE);
        let a = &by_name(&ps, "test_param").assertions[0];
        assert_eq!(a.form, AssertionForm::Binary);
        assert_eq!(a.operator.as_deref(), Some("in"));
        assert_eq!(a.text, "assert n in (1, 2), \"message\"");
        let consts: Vec<(&str, bool)> = a
            .operands
            .iter()
            .map(|o| (o.text.as_str(), o.is_constant))
            .collect();
        // A tuple is an `ast.Tuple`, no `ast.Constant`.
        assert_eq!(consts, vec![("n", false), ("(1, 2)", false)]);
        let u = &by_name(&ps, "test_other").assertions[0];
        assert_eq!(
            (u.form, u.operator.as_deref()),
            (AssertionForm::Unary, None)
        );
        assert!(u.operands[0].is_constant);
        let src = "def test_x():\n    assert a is not None\n    assert x not in y\n    assert 1 < x < 3\n    assert not f()\n";
        let p = problems(src);
        let ops: Vec<(AssertionForm, Option<&str>)> = py(&p[0])
            .assertions
            .iter()
            .map(|a| (a.form, a.operator.as_deref()))
            .collect();
        assert_eq!(
            ops,
            vec![
                (AssertionForm::Binary, Some("is not")),
                (AssertionForm::Binary, Some("not in")),
                (AssertionForm::Unary, None),
                (AssertionForm::Unary, None),
            ]
        );
    }

    #[test]
    fn collects_unittest_classes_and_skips_non_tests() {
        let src = r#"import unittest
import pytest


class Base(unittest.TestCase):
    def setUp(self):
        self.x = 1


class Derived(Base):
    def test_x(self):
        self.assertEqual(self.x, 1)


class TestWithInit:
    def __init__(self):
        pass

    def test_never(self):
        pass


class Helper:
    def test_not_collected(self):
        pass


@pytest.fixture
def test_data():
    return 1


@pytest.mark.usefixtures("test_data")
def test_with_usefixtures():
    pass


def test_uses_data(test_data):
    assert test_data == 1
"#;
        let ps = problems(src);
        let ids: Vec<&str> = ps.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "r/tests/test_m.py::Derived::test_x",
                "r/tests/test_m.py::test_with_usefixtures",
                "r/tests/test_m.py::test_uses_data"
            ]
        );
        assert!(
            py(&ps[1]).problem_text.contains("def test_data"),
            "a usefixtures string keeps the fixture"
        );
        let t = &py(&ps[0]).problem_text;
        assert!(
            t.contains("class Base(unittest.TestCase):") && t.contains("def setUp"),
            "{t}"
        );
        assert!(py(&ps[2]).problem_text.contains("def test_data"));
    }

    /// A fixture registered under another name (`@pytest.fixture(name="client")`) is requested
    /// by that name; dropping it leaves "fixture 'client' not found".
    #[test]
    fn fixtures_are_found_by_their_registered_name() {
        let src = r#"import pytest


@pytest.fixture(scope="module", name="client")
def client_fixture():
    return 1


@pytest.fixture(name='db')
def _db():
    return 2


@pytest.fixture
def unrelated():
    return 3


def test_param(client):
    assert client == 1


@pytest.mark.usefixtures("db")
def test_usefixtures():
    pass


class TestMarked:
    pytestmark = pytest.mark.usefixtures("db")

    def test_in_class(self):
        pass
"#;
        let ps = problems(src);
        let t = &by_name(&ps, "test_param").problem_text;
        assert!(t.contains("def client_fixture"), "{t}");
        assert!(
            !t.contains("def _db") && !t.contains("def unrelated"),
            "{t}"
        );
        for name in ["test_usefixtures", "test_in_class"] {
            let t = &by_name(&ps, name).problem_text;
            assert!(t.contains("def _db"), "{name}:\n{t}");
            assert!(!t.contains("def client_fixture"), "{name}:\n{t}");
        }
    }

    #[test]
    fn conditional_tests_keep_every_branch_and_other_tests_go() {
        let src = r#"import sys

PY3 = sys.version_info[0] == 3

if PY3:

    def test_b():
        assert b"x" == bytes([120])

    def test_other():
        pass

else:

    def test_b():
        assert "x" == "x"


def test_c():
    pass
"#;
        let ps = problems(src);
        let names: Vec<&str> = ps.iter().map(|p| py(p).name.as_str()).collect();
        assert_eq!(names, vec!["test_b", "test_other", "test_c"]);
        let t = &py(&ps[0]).problem_text;
        assert!(
            t.contains("if PY3:") && t.contains("else:") && t.contains("PY3 = sys"),
            "{t}"
        );
        assert_eq!(t.matches("def test_b").count(), 2, "{t}");
        assert!(!t.contains("test_other") && !t.contains("test_c"), "{t}");
        let t = &py(&ps[2]).problem_text;
        assert!(!t.contains("if PY3"), "{t}");
    }

    #[test]
    fn a_base_test_class_is_kept_without_its_tests() {
        let src = r#"class TestBase:
    value = 1

    def test_base(self):
        pass


class TestChild(TestBase):
    def test_child(self):
        assert self.value == 1
"#;
        let ps = problems(src);
        let t = &by_name(&ps, "test_child").problem_text;
        assert!(
            t.contains("class TestBase:") && t.contains("value = 1"),
            "{t}"
        );
        assert!(!t.contains("def test_base"), "{t}");
    }

    #[test]
    fn star_imports_and_side_effects_stay() {
        let src = "from mod import *\nimport warnings\nwarnings.simplefilter('error')\nsys_path = 1\n\n\ndef test_a():\n    assert f(1)\n";
        let ps = problems(src);
        let t = &py(&ps[0]).problem_text;
        assert!(
            t.contains("from mod import *") && t.contains("warnings.simplefilter"),
            "{t}"
        );
        assert!(!t.contains("sys_path"), "{t}");
    }

    /// click's test_sentinel_duplication_preserves_identity names `Sentinel()` only in its
    /// docstring: that is not using it.
    #[test]
    fn identifiers_are_whole_names_outside_strings_and_comments() {
        let ids = identifiers(
            "\"\"\"``Sentinel()`` rejects it.\"\"\"\ns = TimestampSigner(key)  # Signer\nx = mod.f(1)\n",
        );
        for n in ["s", "TimestampSigner", "key", "x", "mod", "f"] {
            assert!(ids.contains(n), "{n}: {ids:?}");
        }
        for n in ["Sentinel", "Signer", "rejects", ""] {
            assert!(!ids.contains(n), "{n}: {ids:?}");
        }
    }

    #[test]
    fn syntax_errors_are_reported_with_a_position() {
        let err =
            python_problems("r", "tests/test_bad.py", "def test_a(:\n    pass\n").unwrap_err();
        assert_eq!(err.kind, IssueKind::SyntaxError);
        assert!(err.detail.starts_with("line 1"), "{}", err.detail);
    }
}
