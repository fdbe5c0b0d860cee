//! A Python module as a tree of statement units: what each top-level (or class-level)
//! statement binds and uses, and which statements are tests or hold tests.
//!
//! Setup isolation works on these units rather than on the raw syntax tree: a unit is kept or
//! dropped whole, by lines, so the problem file is the original text with statements left out,
//! never re-printed code.

use std::collections::BTreeSet;

use tree_sitter::Node;

/// The text of a file with its line starts, for line-based copying and span arithmetic.
#[derive(Debug)]
pub(crate) struct Src<'a> {
    pub text: &'a str,
    /// Byte offset of each line's start, plus the text's length at the end.
    starts: Vec<usize>,
}

impl<'a> Src<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' && i + 1 < text.len() {
                starts.push(i + 1);
            }
        }
        starts.push(text.len());
        Src { text, starts }
    }

    /// Number of lines.
    pub fn lines(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn line_start(&self, line: usize) -> usize {
        self.starts[line.min(self.lines())]
    }

    /// The byte just past the line's newline (or the end of the text).
    pub fn line_end(&self, line: usize) -> usize {
        self.starts[(line + 1).min(self.lines())]
    }

    /// The line's text including its newline, if it has one.
    pub fn line(&self, line: usize) -> &'a str {
        &self.text[self.line_start(line)..self.line_end(line)]
    }

    pub fn is_blank(&self, line: usize) -> bool {
        self.line(line).trim().is_empty()
    }

    pub fn node_text(&self, node: Node) -> &'a str {
        &self.text[node.byte_range()]
    }
}

/// The last line a node really occupies: a node that ends at column 0 ended on the line before.
pub(crate) fn last_line(node: Node) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row - 1
    } else {
        end.row
    }
}

/// What part a unit plays in test collection and isolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A test function or method pytest collects.
    Test,
    /// A collectable class holding tests; its members are in `blocks[0]`.
    TestClass,
    /// An `if`/`try`/`with`/`for`/`while` at module level holding tests; its bodies are blocks.
    Compound,
    /// Any other statement. `always` marks statements kept in every problem file: imports that
    /// cannot be traced (`*`, `__future__`), side effects, autouse fixtures, setup hooks.
    Plain { always: bool },
}

/// One statement (with its decorators and the comment lines right above it).
#[derive(Debug)]
pub(crate) struct Unit<'t> {
    pub id: usize,
    /// The statement (a `decorated_definition` when decorated).
    pub node: Node<'t>,
    /// First and last line (0-based, inclusive), counting attached comments.
    pub first: usize,
    pub last: usize,
    /// First line of the statement itself (its first decorator).
    pub decl_first: usize,
    pub defines: Vec<String>,
    /// Identifiers used; for containers only those outside the blocks (the header).
    pub names: BTreeSet<String>,
    /// Attribute names used (`self.helper` uses `helper`), for class-level isolation.
    pub attrs: BTreeSet<String>,
    pub role: Role,
    /// A pytest fixture definition.
    pub fixture: bool,
    pub blocks: Vec<Block<'t>>,
}

impl Unit<'_> {
    pub fn name(&self) -> &str {
        self.defines.first().map(String::as_str).unwrap_or("")
    }

    pub fn is_container(&self) -> bool {
        matches!(self.role, Role::TestClass | Role::Compound)
    }
}

/// The statements of one body (module, class body, branch of an `if`).
#[derive(Debug)]
pub(crate) struct Block<'t> {
    pub units: Vec<Unit<'t>>,
    /// Lines spanned by the units (0-based, inclusive); meaningless when `units` is empty.
    pub first: usize,
    pub last: usize,
}

/// Where a block sits, which decides what its statements mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Module,
    /// A class body; `collectable` when pytest collects the class's tests.
    Class {
        collectable: bool,
    },
}

/// Builds unit trees, numbering units in source order.
pub(crate) struct Builder<'s> {
    src: &'s Src<'s>,
    next_id: usize,
    /// Module-level classes known to derive from `unittest.TestCase`.
    testcase_classes: BTreeSet<String>,
}

const MODULE_HOOKS: &[&str] = &[
    "setup_module",
    "teardown_module",
    "setup_function",
    "teardown_function",
    "setUpModule",
    "tearDownModule",
    "setup",
    "teardown",
];

const CLASS_HOOKS: &[&str] = &[
    "setup_method",
    "teardown_method",
    "setup_class",
    "teardown_class",
    "setup",
    "teardown",
    "setUp",
    "tearDown",
    "setUpClass",
    "tearDownClass",
    "asyncSetUp",
    "asyncTearDown",
];

/// Module-level assignments pytest reads by name.
const SPECIAL_NAMES: &[&str] = &["pytestmark", "pytest_plugins", "__test__", "collect_ignore"];

impl<'s> Builder<'s> {
    pub fn new(src: &'s Src<'s>) -> Self {
        Builder {
            src,
            next_id: 0,
            testcase_classes: BTreeSet::new(),
        }
    }

    /// The module's units.
    pub fn module<'t>(&mut self, root: Node<'t>) -> Block<'t> {
        self.block(root, Scope::Module)
    }

    fn block<'t>(&mut self, parent: Node<'t>, scope: Scope) -> Block<'t> {
        let mut units: Vec<Unit<'t>> = Vec::new();
        // Comment lines waiting to be attached to the next statement: (first, last).
        let mut pending: Option<(usize, usize)> = None;
        let mut cursor = parent.walk();
        for child in parent.named_children(&mut cursor) {
            let start = child.start_position().row;
            if child.kind() == "comment" {
                let trailing = units.last().is_some_and(|u| u.last == start);
                if trailing {
                    continue;
                }
                pending = match pending {
                    Some((f, l)) if l + 1 == start => Some((f, start)),
                    _ => Some((start, start)),
                };
                continue;
            }
            let mut unit = self.unit(child, scope);
            if let Some((f, l)) = pending.take() {
                if l + 1 == unit.decl_first {
                    unit.first = f;
                }
            }
            // Statements sharing a line (`import a; import b`) are kept or dropped together.
            if let Some(prev) = units.last_mut() {
                if unit.first <= prev.last {
                    merge(prev, unit);
                    continue;
                }
            }
            units.push(unit);
        }
        let first = units.first().map_or(0, |u| u.first);
        let last = units.last().map_or(0, |u| u.last);
        Block { units, first, last }
    }

    fn id(&mut self) -> usize {
        self.next_id += 1;
        self.next_id
    }

    fn unit<'t>(&mut self, node: Node<'t>, scope: Scope) -> Unit<'t> {
        let id = self.id();
        let first = node.start_position().row;
        let mut unit = Unit {
            id,
            node,
            first,
            last: last_line(node),
            decl_first: first,
            defines: Vec::new(),
            names: BTreeSet::new(),
            attrs: BTreeSet::new(),
            role: Role::Plain { always: false },
            fixture: false,
            blocks: Vec::new(),
        };
        let def = if node.kind() == "decorated_definition" {
            node.child_by_field_name("definition")
        } else {
            Some(node)
        };
        match def.map(|d| d.kind()) {
            Some("function_definition") => self.function(&mut unit, def.unwrap(), scope),
            Some("class_definition") => self.class(&mut unit, def.unwrap(), scope),
            _ => self.statement(&mut unit, scope),
        }
        unit
    }

    fn function(&mut self, unit: &mut Unit, def: Node, scope: Scope) {
        let name = field_text(self.src, def, "name");
        uses(self.src, unit.node, &[], &mut unit.names, &mut unit.attrs);
        // `@pytest.fixture`, `@fixture(scope=...)`, `@pytest_asyncio.fixture`; not
        // `@pytest.mark.usefixtures(...)`.
        let fixture_decorator = decorators(self.src, unit.node).into_iter().find(|d| {
            let callee = d
                .trim_start_matches('@')
                .split('(')
                .next()
                .unwrap_or("")
                .trim();
            callee == "fixture" || callee.ends_with(".fixture")
        });
        let is_fixture = fixture_decorator.is_some();
        unit.fixture = is_fixture;
        // `@pytest.fixture(name="db")` is requested as `db`, not by the function's name.
        let alias = fixture_decorator.and_then(fixture_name_argument);
        let autouse = fixture_decorator.is_some_and(|d| {
            d.chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
                .contains("autouse=True")
        });
        let collectable = match scope {
            Scope::Module => true,
            Scope::Class { collectable } => collectable,
        };
        unit.role = if collectable && name.starts_with("test") && !is_fixture {
            Role::Test
        } else {
            let always = autouse
                || match scope {
                    Scope::Module => {
                        MODULE_HOOKS.contains(&name.as_str()) || name.starts_with("pytest_")
                    }
                    Scope::Class { .. } => {
                        is_fixture
                            || CLASS_HOOKS.contains(&name.as_str())
                            || (name.starts_with("__") && name.ends_with("__"))
                    }
                };
            Role::Plain { always }
        };
        unit.defines.push(name);
        unit.defines.extend(alias);
    }

    fn class<'t>(&mut self, unit: &mut Unit<'t>, def: Node<'t>, scope: Scope) {
        let name = field_text(self.src, def, "name");
        let body = def.child_by_field_name("body");
        let bases: Vec<String> = def
            .child_by_field_name("superclasses")
            .map(|args| {
                let mut c = args.walk();
                args.named_children(&mut c)
                    .map(|a| {
                        self.src
                            .node_text(a)
                            .rsplit('.')
                            .next()
                            .unwrap_or("")
                            .trim()
                            .to_string()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let is_testcase = bases
            .iter()
            .any(|b| b.ends_with("TestCase") || self.testcase_classes.contains(b));
        if is_testcase && scope == Scope::Module {
            self.testcase_classes.insert(name.clone());
        }
        let outer_collects = match scope {
            Scope::Module => true,
            Scope::Class { collectable } => collectable,
        };
        let collectable = outer_collects
            && body.is_some_and(|b| b.kind() == "block")
            && (is_testcase
                || (name.starts_with("Test") && !defines_in_body(self.src, body, "__init__")))
            && !assigns_false(self.src, body, "__test__");
        unit.defines.push(name);
        if collectable {
            let body = body.unwrap();
            // A class whose header and body share a line cannot be cut by lines; it is kept whole.
            let same_line = body.start_position().row == def.start_position().row;
            let block = self.block(body, Scope::Class { collectable: true });
            let holds_tests = block
                .units
                .iter()
                .any(|u| matches!(u.role, Role::Test | Role::TestClass));
            if holds_tests && !same_line {
                uses(
                    self.src,
                    unit.node,
                    &[body],
                    &mut unit.names,
                    &mut unit.attrs,
                );
                unit.role = Role::TestClass;
                unit.blocks.push(block);
                return;
            }
        }
        uses(self.src, unit.node, &[], &mut unit.names, &mut unit.attrs);
        unit.role = Role::Plain {
            always: matches!(scope, Scope::Class { .. }),
        };
    }

    fn statement<'t>(&mut self, unit: &mut Unit<'t>, scope: Scope) {
        let node = unit.node;
        let kind = node.kind();
        let mut always = false;
        match kind {
            "import_statement" | "import_from_statement" => {
                let mut c = node.walk();
                for n in node.children_by_field_name("name", &mut c) {
                    unit.defines
                        .push(import_binding(self.src, n, kind == "import_statement"));
                }
                let mut c = node.walk();
                always = node
                    .named_children(&mut c)
                    .any(|n| n.kind() == "wildcard_import");
                if scope == Scope::Module {
                    // The imported names are bindings, not uses: nothing to trace.
                    unit.role = Role::Plain { always };
                    return;
                }
            }
            "future_import_statement" => always = true,
            "expression_statement" => {
                let mut c = node.walk();
                let inner: Vec<Node> = node.named_children(&mut c).collect();
                let mut side_effect = false;
                for n in &inner {
                    match n.kind() {
                        "assignment" | "augmented_assignment" => {
                            assignment_targets(self.src, *n, &mut unit.defines, &mut side_effect)
                        }
                        "string" | "concatenated_string" if inner.len() == 1 => {}
                        _ => side_effect = true,
                    }
                }
                always = side_effect
                    || unit
                        .defines
                        .iter()
                        .any(|d| SPECIAL_NAMES.contains(&d.as_str()))
                    || matches!(scope, Scope::Class { .. }) && !unit.defines.is_empty();
            }
            "if_statement" | "try_statement" | "with_statement" | "for_statement"
            | "while_statement"
                if scope == Scope::Module && holds_tests(self.src, node) =>
            {
                let blocks = statement_blocks(node);
                uses(self.src, node, &blocks, &mut unit.names, &mut unit.attrs);
                for b in blocks {
                    let block = self.block(b, scope);
                    for u in &block.units {
                        unit.defines.extend(u.defines.iter().cloned());
                    }
                    unit.blocks.push(block);
                }
                // A body that shares a line with its header cannot be cut by lines.
                if unit.blocks.iter().any(|b| b.units.is_empty()) || blocks_share_header_line(node)
                {
                    unit.blocks.clear();
                    unit.names.clear();
                    uses(self.src, node, &[], &mut unit.names, &mut unit.attrs);
                    unit.role = Role::Plain { always: false };
                    return;
                }
                unit.role = Role::Compound;
                return;
            }
            "if_statement" | "try_statement" | "with_statement" | "for_statement"
            | "while_statement" => {
                compound_bindings(self.src, node, &mut unit.defines);
                let main_guard =
                    kind == "if_statement" && self.src.node_text(node).contains("__main__");
                always =
                    unit.defines.is_empty() && !main_guard || matches!(scope, Scope::Class { .. });
            }
            "type_alias_statement" => {
                if let Some(n) = node.named_child(0) {
                    unit.defines.push(self.src.node_text(n).to_string());
                }
            }
            "decorated_definition"
            | "pass_statement"
            | "global_statement"
            | "nonlocal_statement" => {}
            "delete_statement" | "raise_statement" | "assert_statement" => {
                always = matches!(scope, Scope::Class { .. }) || kind == "raise_statement";
            }
            _ => always = true,
        }
        uses(self.src, node, &[], &mut unit.names, &mut unit.attrs);
        unit.role = Role::Plain { always };
    }
}

fn merge<'t>(prev: &mut Unit<'t>, next: Unit<'t>) {
    prev.last = prev.last.max(next.last);
    prev.defines.extend(next.defines);
    prev.names.extend(next.names);
    prev.attrs.extend(next.attrs);
    let always = matches!(prev.role, Role::Plain { always: true })
        || matches!(next.role, Role::Plain { always: true });
    // Two statements on one line are never a test container; treating them as one plain
    // statement keeps both or neither.
    prev.role = Role::Plain { always };
    prev.blocks.clear();
}

pub(crate) fn field_text(src: &Src, node: Node, field: &str) -> String {
    node.child_by_field_name(field)
        .map(|n| src.node_text(n).to_string())
        .unwrap_or_default()
}

/// The text of each decorator of a definition, in source order.
fn decorators<'a>(src: &Src<'a>, node: Node) -> Vec<&'a str> {
    if node.kind() != "decorated_definition" {
        return Vec::new();
    }
    let mut c = node.walk();
    let found = node
        .named_children(&mut c)
        .filter(|n| n.kind() == "decorator")
        .map(|n| src.node_text(n))
        .collect();
    found
}

/// The string of a fixture decorator's `name=` argument: `@pytest.fixture(name="db")` → `db`.
fn fixture_name_argument(decorator: &str) -> Option<String> {
    let compact: String = decorator.chars().filter(|c| !c.is_whitespace()).collect();
    let at = compact.find("name=")?;
    // `name=` must start an argument, not end another keyword (`scope_name=`).
    if !compact[..at].ends_with(['(', ',']) {
        return None;
    }
    let rest = &compact[at + "name=".len()..];
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &rest[1..];
    let end = value.find(quote)?;
    let name = &value[..end];
    let is_identifier = name
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    is_identifier.then(|| name.to_string())
}

/// Whether a class body defines `name` directly.
fn defines_in_body(src: &Src, body: Option<Node>, name: &str) -> bool {
    let Some(body) = body else { return false };
    let mut c = body.walk();
    let found = body.named_children(&mut c).any(|n| {
        let def = if n.kind() == "decorated_definition" {
            n.child_by_field_name("definition")
        } else {
            Some(n)
        };
        def.is_some_and(|d| d.kind() == "function_definition" && field_text(src, d, "name") == name)
    });
    found
}

/// Whether a class body says `name = False`.
fn assigns_false(src: &Src, body: Option<Node>, name: &str) -> bool {
    let Some(body) = body else { return false };
    let mut c = body.walk();
    let found = body.named_children(&mut c).any(|n| {
        let t = src.node_text(n).replace(' ', "");
        n.kind() == "expression_statement" && t == format!("{name}=False")
    });
    found
}

/// The name an import binds: the alias, the first part of `import a.b`, or `b` of `from a import b`.
fn import_binding(src: &Src, n: Node, plain_import: bool) -> String {
    if n.kind() == "aliased_import" {
        return field_text(src, n, "alias");
    }
    let text = src.node_text(n);
    if plain_import {
        text.split('.').next().unwrap_or(text).trim().to_string()
    } else {
        text.trim().to_string()
    }
}

/// Names an assignment binds; a target that is an attribute or subscript is a side effect.
fn assignment_targets(src: &Src, n: Node, out: &mut Vec<String>, side_effect: &mut bool) {
    if let Some(left) = n.child_by_field_name("left") {
        pattern_names(src, left, out, side_effect);
    }
    if let Some(right) = n.child_by_field_name("right") {
        if right.kind() == "assignment" {
            assignment_targets(src, right, out, side_effect);
        }
    }
}

fn pattern_names(src: &Src, n: Node, out: &mut Vec<String>, side_effect: &mut bool) {
    match n.kind() {
        "identifier" => out.push(src.node_text(n).to_string()),
        "attribute" | "subscript" => *side_effect = true,
        _ => {
            let mut c = n.walk();
            for child in n.named_children(&mut c) {
                pattern_names(src, child, out, side_effect);
            }
        }
    }
}

/// Names bound anywhere in a compound statement's bodies (not inside functions or classes).
fn compound_bindings(src: &Src, node: Node, out: &mut Vec<String>) {
    let mut c = node.walk();
    for child in node.named_children(&mut c) {
        match child.kind() {
            "function_definition" | "class_definition" => out.push(field_text(src, child, "name")),
            "decorated_definition" => {
                if let Some(d) = child.child_by_field_name("definition") {
                    out.push(field_text(src, d, "name"));
                }
            }
            "import_statement" | "import_from_statement" => {
                let mut c2 = child.walk();
                for n in child.children_by_field_name("name", &mut c2) {
                    out.push(import_binding(src, n, child.kind() == "import_statement"));
                }
            }
            "assignment" | "augmented_assignment" => {
                let mut ignored = false;
                assignment_targets(src, child, out, &mut ignored);
            }
            "for_statement" => {
                if let Some(left) = child.child_by_field_name("left") {
                    let mut ignored = false;
                    pattern_names(src, left, out, &mut ignored);
                }
                compound_bindings(src, child, out);
            }
            "as_pattern" => {
                if let Some(alias) = child.child_by_field_name("alias") {
                    let mut ignored = false;
                    pattern_names(src, alias, out, &mut ignored);
                }
            }
            "lambda" | "call" | "argument_list" => {}
            _ => compound_bindings(src, child, out),
        }
    }
}

/// Whether a compound statement defines a test function or a test class anywhere in its bodies.
fn holds_tests(src: &Src, node: Node) -> bool {
    let mut c = node.walk();
    let found = node.named_children(&mut c).any(|child| match child.kind() {
        "function_definition" | "class_definition" | "decorated_definition" => {
            let def = if child.kind() == "decorated_definition" {
                child.child_by_field_name("definition")
            } else {
                Some(child)
            };
            def.is_some_and(|d| {
                let name = field_text(src, d, "name");
                if d.kind() == "function_definition" {
                    name.starts_with("test")
                } else {
                    name.starts_with("Test")
                        || field_text(src, d, "superclasses").contains("TestCase")
                }
            })
        }
        "block"
        | "else_clause"
        | "elif_clause"
        | "except_clause"
        | "except_group_clause"
        | "finally_clause" => holds_tests(src, child),
        _ => false,
    });
    found
}

/// The bodies of a compound statement, in source order.
fn statement_blocks(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut c = node.walk();
    for child in node.named_children(&mut c) {
        match child.kind() {
            "block" => out.push(child),
            "else_clause"
            | "elif_clause"
            | "except_clause"
            | "except_group_clause"
            | "finally_clause" => out.extend(statement_blocks(child)),
            _ => {}
        }
    }
    out
}

fn blocks_share_header_line(node: Node) -> bool {
    let mut c = node.walk();
    let mut prev_row = node.start_position().row;
    for child in node.children(&mut c) {
        if child.kind() == "block" && child.start_position().row == prev_row {
            return true;
        }
        if child.kind() == ":" {
            prev_row = child.start_position().row;
        }
        if matches!(
            child.kind(),
            "else_clause" | "elif_clause" | "except_clause" | "finally_clause"
        ) && blocks_share_header_line(child)
        {
            return true;
        }
    }
    false
}

/// Collects the identifiers used under `node`, skipping the subtrees in `skip`. Attribute
/// names go to `attrs`; keyword-argument names are not uses. Strings in decorators count as
/// their identifier-like words, since `usefixtures("db")` and indirect parametrization name
/// fixtures in strings.
pub(crate) fn uses(
    src: &Src,
    node: Node,
    skip: &[Node],
    names: &mut BTreeSet<String>,
    attrs: &mut BTreeSet<String>,
) {
    // Each entry: the node, whether it is inside a decorator, and whether its parent said it
    // is an attribute name (`.attr`) or a keyword-argument name. Asking a node for its parent
    // walks down from the root, so the parent decides for its children instead.
    #[derive(Clone, Copy, PartialEq)]
    enum Pos {
        Plain,
        Attr,
        Kwarg,
    }
    let mut stack = vec![(node, false, Pos::Plain)];
    while let Some((n, in_decorator, pos)) = stack.pop() {
        if skip.iter().any(|s| s.id() == n.id()) {
            continue;
        }
        match n.kind() {
            "identifier" => {
                let text = src.node_text(n).to_string();
                match pos {
                    Pos::Attr => {
                        attrs.insert(text);
                    }
                    Pos::Kwarg => {}
                    Pos::Plain => {
                        names.insert(text);
                    }
                }
                continue;
            }
            "string" if in_decorator => {
                for word in src
                    .node_text(n)
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|w| {
                        w.chars()
                            .next()
                            .is_some_and(|c| c.is_alphabetic() || c == '_')
                    })
                {
                    names.insert(word.to_string());
                }
                continue;
            }
            _ => {}
        }
        // `pytestmark = pytest.mark.usefixtures("db")` names fixtures in strings as well.
        let in_dec = in_decorator
            || n.kind() == "decorator"
            || n.kind() == "call"
                && n.child_by_field_name("function")
                    .is_some_and(|f| src.node_text(f).ends_with("usefixtures"));
        let special = match n.kind() {
            "attribute" => n
                .child_by_field_name("attribute")
                .map(|c| (c.id(), Pos::Attr)),
            "keyword_argument" => n.child_by_field_name("name").map(|c| (c.id(), Pos::Kwarg)),
            _ => None,
        };
        let mut c = n.walk();
        for child in n.named_children(&mut c) {
            let pos = match special {
                Some((id, p)) if id == child.id() => p,
                _ => Pos::Plain,
            };
            stack.push((child, in_dec, pos));
        }
    }
}
