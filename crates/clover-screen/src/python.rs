//! The Python screen: one pass to learn what each name stands for, one pass to check every
//! expression against the rules.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use tree_sitter::{Node, Parser, Tree};

use crate::rule::{
    attribute_rule, literal_attribute_rule, path_rule, report_marker, Finding, Rule,
};

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

/// Names that resolve to `builtins.<name>` when nothing in the file binds them.
const BUILTINS: &[&str] = &[
    "exec",
    "eval",
    "compile",
    "__import__",
    "getattr",
    "setattr",
    "delattr",
    "open",
    "vars",
    "globals",
];

/// Every finding in `source`, in source order, before any allowlist.
pub(crate) fn findings(source: &str) -> Vec<Finding> {
    let Some(tree) = parse(source) else {
        return Vec::new();
    };
    let root = tree.root_node();
    // The passes below recurse along the tree; a file nested deeper than any honest test
    // would overflow the stack, so it is reported instead of screened.
    if let Some(deep) = deeper_than(root, MAX_DEPTH) {
        let start = deep.start_position();
        return vec![Finding {
            rule: Rule::Unscreenable,
            construct: format!("nesting deeper than {MAX_DEPTH} levels"),
            line: start.row as u32 + 1,
            column: start.column as u32 + 1,
            snippet: snippet(deep, source),
        }];
    }
    let mut names = Names::default();
    names.learn(root, source);
    let mut screen = Walk {
        src: source,
        names: &names,
        out: Vec::new(),
    };
    screen.visit(root, Ctx::default());
    screen.out.sort_by_key(|f| (f.line, f.column));
    screen
        .out
        .dedup_by(|a, b| a.line == b.line && a.column == b.column && a.rule == b.rule);
    screen.out
}

/// How deep the syntax tree may nest: the deepest problem file of the corpus nests 26 levels
/// (`click/tests/test_shell_completion.py::test_nested_group`).
const MAX_DEPTH: usize = 400;

/// The first node deeper than `limit`, found without recursion.
fn deeper_than(root: Node, limit: usize) -> Option<Node> {
    let mut cursor = root.walk();
    let mut depth = 0;
    loop {
        if depth > limit {
            return Some(cursor.node());
        }
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return None;
            }
            depth -= 1;
        }
    }
}

/// What the names of a file stand for, learnt flow- and scope-insensitively: an alias made
/// anywhere counts everywhere, which can only add findings.
#[derive(Default)]
struct Names {
    /// `import os as o` binds `o` to `os`; `from os import _exit as e` binds `e` to `os._exit`;
    /// `ex = os._exit` binds `ex` to `os._exit`.
    bound: HashMap<String, String>,
    /// Names the file defines otherwise (parameters, loop and assignment targets, functions):
    /// a parameter called `gc` is not the module.
    local: HashSet<String>,
    /// Modules imported with `*`.
    star: Vec<String>,
}

impl Names {
    fn learn(&mut self, root: Node, src: &str) {
        let mut assignments: Vec<(String, Node)> = Vec::new();
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "import_statement" => {
                    for item in named_children(n) {
                        match item.kind() {
                            "dotted_name" => {
                                let path = text(item, src);
                                let first = path.split('.').next().unwrap_or("").to_string();
                                self.bound.insert(first.clone(), first);
                            }
                            "aliased_import" => {
                                if let (Some(name), Some(alias)) = (
                                    item.child_by_field_name("name"),
                                    item.child_by_field_name("alias"),
                                ) {
                                    self.bound
                                        .insert(text(alias, src).into(), text(name, src).into());
                                }
                            }
                            _ => {}
                        }
                    }
                }
                "import_from_statement" => {
                    let module = n
                        .child_by_field_name("module_name")
                        .map_or("", |m| text(m, src));
                    let mut c = n.walk();
                    for item in n.children_by_field_name("name", &mut c) {
                        let (name, alias) = match item.kind() {
                            "aliased_import" => (
                                item.child_by_field_name("name"),
                                item.child_by_field_name("alias"),
                            ),
                            _ => (Some(item), Some(item)),
                        };
                        if let (Some(name), Some(alias)) = (name, alias) {
                            self.bound.insert(
                                text(alias, src).into(),
                                format!("{module}.{}", text(name, src)),
                            );
                        }
                    }
                    if named_children(n).any(|c| c.kind() == "wildcard_import") {
                        self.star.push(module.into());
                    }
                }
                "assignment" | "named_expression" | "augmented_assignment" => {
                    let (left, right) = match n.kind() {
                        "named_expression" => (
                            n.child_by_field_name("name"),
                            n.child_by_field_name("value"),
                        ),
                        _ => (
                            n.child_by_field_name("left"),
                            n.child_by_field_name("right"),
                        ),
                    };
                    match (left, right) {
                        (Some(l), Some(r)) if l.kind() == "identifier" => {
                            assignments.push((text(l, src).into(), r));
                        }
                        (Some(l), _) => self.learn_targets(l, src),
                        _ => {}
                    }
                }
                "function_definition" | "class_definition" => {
                    if let Some(name) = n.child_by_field_name("name") {
                        self.local.insert(text(name, src).into());
                    }
                }
                "parameters" | "lambda_parameters" => {
                    for p in named_children(n) {
                        let name = match p.kind() {
                            "identifier" => Some(p),
                            "default_parameter" | "typed_default_parameter" => {
                                p.child_by_field_name("name")
                            }
                            _ => first_identifier(p),
                        };
                        if let Some(name) = name {
                            self.local.insert(text(name, src).into());
                        }
                    }
                }
                "for_statement" | "for_in_clause" => {
                    if let Some(l) = n.child_by_field_name("left") {
                        self.learn_targets(l, src);
                    }
                }
                "as_pattern" => {
                    if let Some(alias) = n.child_by_field_name("alias") {
                        self.learn_targets(alias, src);
                    }
                }
                _ => {}
            }
            stack.extend(named_children(n));
        }
        // An alias of an alias needs its target learnt first: repeat until nothing changes
        // (bounded, since each round can only add bindings).
        for _ in 0..4 {
            let mut changed = false;
            for (name, value) in &assignments {
                if self.bound.contains_key(name) {
                    continue;
                }
                if let Some(path) = resolve(*value, src, self) {
                    self.bound.insert(name.clone(), path);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for (name, _) in assignments {
            if !self.bound.contains_key(&name) {
                self.local.insert(name);
            }
        }
    }

    /// Every plain name an assignment-like target binds.
    fn learn_targets(&mut self, target: Node, src: &str) {
        let mut stack = vec![target];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "identifier" => {
                    self.local.insert(text(n, src).into());
                }
                "pattern_list"
                | "tuple_pattern"
                | "list_pattern"
                | "list_splat_pattern"
                | "as_pattern_target"
                | "parenthesized_expression"
                | "tuple"
                | "list" => {
                    stack.extend(named_children(n));
                }
                _ => {}
            }
        }
    }

    fn identifier(&self, name: &str) -> Option<String> {
        if let Some(path) = self.bound.get(name) {
            return Some(path.clone());
        }
        if self.local.contains(name) {
            return None;
        }
        if name == "__builtins__" {
            return Some("builtins".into());
        }
        if BUILTINS.contains(&name) {
            return Some(format!("builtins.{name}"));
        }
        for module in &self.star {
            let path = format!("{module}.{name}");
            if path_rule(&path).is_some() {
                return Some(path);
            }
        }
        // A name nothing defines is taken for the module of that name: a candidate may be a
        // function whose imports the screen does not see.
        Some(name.into())
    }
}

/// The dotted path an expression stands for, when it can be known without running it:
/// names through their aliases, attribute chains, `getattr` with a literal name,
/// `__import__`/`importlib.import_module` of a literal, `sys.modules["x"]` and
/// `__builtins__["x"]`.
fn resolve(n: Node, src: &str, names: &Names) -> Option<String> {
    match n.kind() {
        "identifier" => names.identifier(text(n, src)),
        "attribute" => {
            let object = resolve(n.child_by_field_name("object")?, src, names)?;
            let attr = n.child_by_field_name("attribute")?;
            Some(format!("{object}.{}", text(attr, src)))
        }
        "parenthesized_expression" => resolve(n.named_child(0)?, src, names),
        "call" => {
            let function = resolve(n.child_by_field_name("function")?, src, names)?;
            let args: Vec<Node> = n
                .child_by_field_name("arguments")
                .map(|a| named_children(a).collect())
                .unwrap_or_default();
            let positional: Vec<Node> = args
                .iter()
                .copied()
                .filter(|a| a.kind() != "keyword_argument")
                .collect();
            match function.as_str() {
                "builtins.getattr" => {
                    let object = resolve(*positional.first()?, src, names)?;
                    let attr = literal_str(*positional.get(1)?, src)?;
                    Some(format!("{object}.{attr}"))
                }
                "builtins.__import__" => {
                    let module = literal_str(*positional.first()?, src)?;
                    // `__import__("a.b")` returns `a` unless a from-list asks for `a.b`.
                    if args.len() > 1 {
                        Some(module)
                    } else {
                        Some(module.split('.').next().unwrap_or("").to_string())
                    }
                }
                "importlib.import_module" => literal_str(*positional.first()?, src),
                _ => None,
            }
        }
        "subscript" => {
            let value = resolve(n.child_by_field_name("value")?, src, names)?;
            let key = literal_str(n.child_by_field_name("subscript")?, src)?;
            match value.as_str() {
                "sys.modules" => Some(key),
                "builtins" | "builtins.__dict__" => Some(format!("builtins.{key}")),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The value of a string literal without interpolation, of implicitly concatenated ones, and
/// of `+` between them.
fn literal_str(n: Node, src: &str) -> Option<String> {
    match n.kind() {
        "string" => {
            let mut out = String::new();
            for part in named_children(n) {
                match part.kind() {
                    "string_start" | "string_end" => {}
                    "string_content" => out.push_str(text(part, src)),
                    _ => return None,
                }
            }
            Some(out)
        }
        "concatenated_string" => named_children(n).map(|s| literal_str(s, src)).collect(),
        "binary_operator" => {
            let op = n.child_by_field_name("operator")?;
            if text(op, src) != "+" {
                return None;
            }
            let left = literal_str(n.child_by_field_name("left")?, src)?;
            let right = literal_str(n.child_by_field_name("right")?, src)?;
            Some(left + &right)
        }
        "parenthesized_expression" => literal_str(n.named_child(0)?, src),
        _ => None,
    }
}

/// Where a node stands, as far as the rules care.
#[derive(Clone, Copy, Default)]
struct Ctx {
    /// The node is the callee of a call (`exec` called, not passed on).
    callee: bool,
    /// An enclosing expression was already reported (`sys.monitoring` inside
    /// `sys.monitoring.use_tool_id`): report the outermost only.
    reported: bool,
}

struct Walk<'a> {
    src: &'a str,
    names: &'a Names,
    out: Vec<Finding>,
}

impl Walk<'_> {
    fn report(&mut self, n: Node, rule: Rule, construct: impl Into<String>) {
        let start = n.start_position();
        self.out.push(Finding {
            rule,
            construct: construct.into(),
            line: start.row as u32 + 1,
            column: start.column as u32 + 1,
            snippet: snippet(n, self.src),
        });
    }

    fn visit(&mut self, n: Node, ctx: Ctx) {
        match n.kind() {
            "import_statement" | "import_from_statement" => return self.import(n),
            "identifier" => {
                self.expression(n, ctx);
                return;
            }
            "attribute" => {
                let reported = self.expression(n, ctx);
                let inner = Ctx {
                    callee: false,
                    reported: ctx.reported || reported,
                };
                if let Some(object) = n.child_by_field_name("object") {
                    self.visit(object, inner);
                }
                return;
            }
            "call" => return self.call(n, ctx),
            "subscript" => {
                let reported = self.expression(n, ctx);
                let inner = Ctx {
                    callee: false,
                    reported: ctx.reported || reported,
                };
                for child in named_children(n) {
                    self.visit(child, inner);
                }
                return;
            }
            "function_definition" => {
                if let Some(name) = n.child_by_field_name("name") {
                    let name = text(name, self.src);
                    if name.starts_with("pytest_") {
                        self.report(n, Rule::PytestHook, format!("def {name}"));
                    }
                }
                // The name and the parameter names are definitions, not uses.
                for child in named_children(n) {
                    if child.kind() == "parameters" {
                        self.parameters(child);
                    } else if Some(child) != n.child_by_field_name("name") {
                        self.visit(child, Ctx::default());
                    }
                }
                return;
            }
            "class_definition" => {
                for child in named_children(n) {
                    if Some(child) != n.child_by_field_name("name") {
                        self.visit(child, Ctx::default());
                    }
                }
                return;
            }
            "lambda_parameters" | "parameters" => return self.parameters(n),
            "keyword_argument" => {
                if let Some(value) = n.child_by_field_name("value") {
                    self.visit(value, Ctx::default());
                }
                return;
            }
            "global_statement" | "nonlocal_statement" => return,
            "assignment" | "augmented_assignment" => {
                self.assignment(n);
                let left = n.child_by_field_name("left");
                if let Some(left) = left {
                    self.targets(left);
                }
                for child in named_children(n) {
                    if Some(child) != left {
                        self.visit(child, Ctx::default());
                    }
                }
                return;
            }
            "delete_statement" => {
                for target in named_children(n) {
                    self.write_target(target);
                }
            }
            "string" | "concatenated_string" => return self.string(n, ctx),
            "binary_operator" => {
                if let Some(rule) =
                    literal_str(n, self.src).and_then(|v| literal_attribute_rule(&v))
                {
                    self.report(
                        n,
                        rule,
                        format!("\"{}\"", literal_str(n, self.src).unwrap_or_default()),
                    );
                }
                if let Some(value) = literal_str(n, self.src) {
                    let parts_hold_it = ["left", "right"].iter().any(|f| {
                        n.child_by_field_name(f)
                            .and_then(|c| literal_str(c, self.src))
                            .is_some_and(|s| report_marker(&s).is_some())
                    });
                    if let Some(marker) = report_marker(&value).filter(|_| !parts_hold_it) {
                        self.report(n, Rule::ReportFolder, marker);
                    }
                }
            }
            _ => {}
        }
        for child in named_children(n) {
            self.visit(child, Ctx::default());
        }
    }

    /// Checks one expression that names something; true when it was reported.
    fn expression(&mut self, n: Node, ctx: Ctx) -> bool {
        if ctx.reported {
            return false;
        }
        if let Some(path) = resolve(n, self.src, self.names) {
            if let Some(rule) = path_rule(&path) {
                self.report(n, rule, path);
                return true;
            }
            if matches!(
                path.as_str(),
                "builtins.exec" | "builtins.eval" | "builtins.compile"
            ) && !ctx.callee
            {
                // Passed on as a value, it can be called with anything.
                self.report(n, Rule::DynamicCode, format!("{path} as a value"));
                return true;
            }
        }
        if n.kind() == "attribute" {
            if let Some(attr) = n.child_by_field_name("attribute") {
                let name = text(attr, self.src);
                if let Some(rule) = attribute_rule(name) {
                    self.report(n, rule, format!(".{name}"));
                    return true;
                }
            }
        }
        false
    }

    fn call(&mut self, n: Node, ctx: Ctx) {
        let function = n.child_by_field_name("function");
        let args = n.child_by_field_name("arguments");
        let reported = self.expression(n, ctx);
        let path = function.and_then(|f| resolve(f, self.src, self.names));
        let positional: Vec<Node> = args
            .map(|a| {
                named_children(a)
                    .filter(|c| c.kind() != "keyword_argument")
                    .collect()
            })
            .unwrap_or_default();
        match path.as_deref() {
            Some(p @ ("builtins.exec" | "builtins.eval" | "builtins.compile")) => {
                let literal = positional
                    .first()
                    .is_some_and(|a| literal_str(*a, self.src).is_some());
                if !literal {
                    let name = p.trim_start_matches("builtins.");
                    self.report(n, Rule::DynamicCode, format!("{name} of a non-literal"));
                }
            }
            Some("builtins.setattr" | "builtins.delattr") => {
                let target = positional
                    .first()
                    .and_then(|a| resolve(*a, self.src, self.names));
                if matches!(target.as_deref(), Some("builtins" | "builtins.__dict__")) {
                    let name = path
                        .as_deref()
                        .unwrap_or("")
                        .trim_start_matches("builtins.");
                    self.report(n, Rule::BuiltinsWrite, format!("{name}(builtins, …)"));
                }
            }
            _ => {}
        }
        // `setattr(pytest.TestReport, …)` and `monkeypatch.setattr(pytest.TestReport, …)`:
        // monkeypatch undoes it only at teardown, after the test's own report was made.
        let setter = path
            .as_deref()
            .is_some_and(|p| matches!(p, "builtins.setattr" | "builtins.delattr"))
            || function.is_some_and(|f| {
                f.kind() == "attribute"
                    && f.child_by_field_name("attribute")
                        .is_some_and(|a| matches!(text(a, self.src), "setattr" | "delattr"))
            });
        if setter {
            let target = positional
                .first()
                .and_then(|a| resolve(*a, self.src, self.names));
            if let Some(t) = target.filter(|t| t == "pytest" || t.starts_with("pytest.")) {
                self.report(n, Rule::TestMachinery, format!("setattr({t}, …)"));
            }
        }
        if let Some(f) = function {
            let inner = Ctx {
                callee: true,
                reported: ctx.reported || reported,
            };
            self.visit(f, inner);
        }
        if let Some(a) = args {
            // The arguments of a reported `getattr(os, "_exit")` are part of that finding.
            let inner = Ctx {
                callee: false,
                reported: ctx.reported || reported,
            };
            for arg in named_children(a) {
                self.visit(arg, inner);
            }
        }
    }

    fn import(&mut self, n: Node) {
        match n.kind() {
            "import_statement" => {
                for item in named_children(n) {
                    let name = match item.kind() {
                        "aliased_import" => item.child_by_field_name("name"),
                        _ => Some(item),
                    };
                    if let Some(name) = name {
                        let path = text(name, self.src);
                        if let Some(rule) = path_rule(path) {
                            self.report(item, rule, format!("import {path}"));
                        }
                    }
                }
            }
            _ => {
                let module = n
                    .child_by_field_name("module_name")
                    .map_or("", |m| text(m, self.src));
                if let Some(rule) = path_rule(module) {
                    return self.report(n, rule, format!("from {module} import"));
                }
                let mut c = n.walk();
                let items: Vec<Node> = n.children_by_field_name("name", &mut c).collect();
                for item in items {
                    let name = match item.kind() {
                        "aliased_import" => item.child_by_field_name("name"),
                        _ => Some(item),
                    };
                    if let Some(name) = name {
                        let name = text(name, self.src);
                        let path = format!("{module}.{name}");
                        if let Some(rule) = path_rule(&path) {
                            self.report(item, rule, format!("from {module} import {name}"));
                        }
                    }
                }
            }
        }
    }

    fn parameters(&mut self, n: Node) {
        // Only default values and annotations are expressions.
        for p in named_children(n) {
            for field in ["value", "type"] {
                if let Some(v) = p.child_by_field_name(field) {
                    self.visit(v, Ctx::default());
                }
            }
        }
    }

    /// Visits an assignment's targets: a plain name there is a definition, not a use.
    fn targets(&mut self, n: Node) {
        match n.kind() {
            "identifier" => {}
            "pattern_list"
            | "tuple_pattern"
            | "list_pattern"
            | "list_splat_pattern"
            | "parenthesized_expression"
            | "expression_list"
            | "tuple"
            | "list" => {
                for child in named_children(n) {
                    self.targets(child);
                }
            }
            _ => self.visit(n, Ctx::default()),
        }
    }

    fn assignment(&mut self, n: Node) {
        let Some(left) = n.child_by_field_name("left") else {
            return;
        };
        if left.kind() == "identifier" && text(left, self.src) == "pytest_plugins" {
            self.report(n, Rule::PytestHook, "pytest_plugins");
        }
        self.write_target(left);
    }

    /// Reports a target that writes a name of `builtins` (`builtins.open = …`,
    /// `__builtins__["x"] = …`, `__builtins__ = …`) or anything below `pytest`
    /// (`pytest.TestReport.from_item_and_call = …`: its public names are `_pytest`'s own
    /// classes), in tuples too.
    fn write_target(&mut self, target: Node) {
        match target.kind() {
            "identifier" if text(target, self.src) == "__builtins__" => {
                self.report(target, Rule::BuiltinsWrite, "__builtins__");
            }
            "attribute" | "subscript" => {
                let Some(path) = resolve(target, self.src, self.names) else {
                    return;
                };
                let mut parts = path.split('.');
                let first = parts.next();
                if first == Some("builtins") && parts.count() == 1 {
                    self.report(target, Rule::BuiltinsWrite, path);
                } else if first == Some("pytest") {
                    self.report(target, Rule::TestMachinery, path);
                }
            }
            "pattern_list"
            | "tuple_pattern"
            | "list_pattern"
            | "parenthesized_expression"
            | "expression_list"
            | "tuple"
            | "list" => {
                for child in named_children(target) {
                    self.write_target(child);
                }
            }
            _ => {}
        }
    }

    fn string(&mut self, n: Node, ctx: Ctx) {
        let strings: Vec<Node> = match n.kind() {
            "concatenated_string" => named_children(n).collect(),
            _ => vec![n],
        };
        // An f-string counts by its fixed parts.
        let contents: String = literal_str(n, self.src).unwrap_or_else(|| {
            strings
                .iter()
                .flat_map(|s| named_children(*s))
                .filter(|p| p.kind() == "string_content")
                .map(|p| text(p, self.src))
                .collect()
        });
        if let Some(marker) = report_marker(&contents) {
            self.report(n, Rule::ReportFolder, marker);
        } else if names_pytest_internals(&contents) && !ctx.reported {
            // `mock.patch("_pytest.reports.TestReport.outcome")`,
            // `monkeypatch.setattr("pytest.TestReport.from_item_and_call", …)`.
            self.report(n, Rule::TestMachinery, format!("\"{contents}\""));
        } else if let Some(rule) = literal_attribute_rule(&contents).filter(|_| !ctx.reported) {
            // `getattr(x, "f_back")`, `attrgetter("f_back")`, `vars(sys)["_getframe"]`.
            self.report(n, rule, format!("\"{contents}\""));
        }
        // The expressions inside an f-string are code like any other.
        for part in strings.iter().flat_map(|s| named_children(*s)) {
            if part.kind() == "interpolation" {
                self.visit(part, Ctx::default());
            }
        }
    }
}

/// Whether a string names something of pytest's by its dotted path: `_pytest.…`, or a class
/// of `pytest.…` (`pytest.TestReport`; not a file name such as `pytest.ini`).
fn names_pytest_internals(s: &str) -> bool {
    s.starts_with("_pytest.")
        || s.strip_prefix("pytest.")
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
}

/// Statements that hold no other statement: the unit a finding is shown (and allowed) in.
const SIMPLE_STATEMENTS: &[&str] = &[
    "expression_statement",
    "return_statement",
    "delete_statement",
    "raise_statement",
    "assert_statement",
    "import_statement",
    "import_from_statement",
    "decorator",
];

/// The source a finding stands in: its whole simple statement (`counts.add(len(gc.get_objects()))`,
/// not just `gc.get_objects`), so that an allowlist entry names one exact use; the finding's
/// line when it sits in the header of a compound statement. Lines are trimmed and joined with
/// a space; at most 200 characters.
fn snippet(n: Node, src: &str) -> String {
    let mut at = Some(n);
    while let Some(a) = at {
        if SIMPLE_STATEMENTS.contains(&a.kind()) {
            break;
        }
        if a.kind() == "block" || a.kind() == "module" {
            at = None;
            break;
        }
        at = a.parent();
    }
    let whole = match at {
        Some(statement) => text(statement, src),
        None => {
            let line_start = src[..n.start_byte()].rfind('\n').map_or(0, |i| i + 1);
            let line_end = src[n.start_byte()..]
                .find('\n')
                .map_or(src.len(), |i| n.start_byte() + i);
            &src[line_start..line_end]
        }
    };
    let joined = whole
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut cut: String = joined.chars().take(200).collect();
    if cut.len() < joined.len() {
        cut.push('…');
    }
    cut
}

fn text<'s>(n: Node, src: &'s str) -> &'s str {
    &src[n.byte_range()]
}

fn named_children(n: Node) -> impl Iterator<Item = Node> {
    (0..n.named_child_count()).filter_map(move |i| n.named_child(i))
}

fn first_identifier(n: Node) -> Option<Node> {
    if n.kind() == "identifier" {
        return Some(n);
    }
    named_children(n).find_map(first_identifier)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (rule, construct, line) of every finding.
    fn found(src: &str) -> Vec<(Rule, String, u32)> {
        findings(src)
            .into_iter()
            .map(|f| (f.rule, f.construct, f.line))
            .collect()
    }

    fn one(rule: Rule, construct: &str, line: u32) -> Vec<(Rule, String, u32)> {
        vec![(rule, construct.to_string(), line)]
    }

    #[test]
    fn test_machinery_imports_in_every_form() {
        assert_eq!(
            found("import coverage\n"),
            one(Rule::TestMachinery, "import coverage", 1)
        );
        assert_eq!(
            found("x = 1\nfrom _pytest.junitxml import LogXML\n"),
            one(Rule::TestMachinery, "from _pytest.junitxml import", 2)
        );
        assert_eq!(
            found("import _pytest.reports as r\n"),
            one(Rule::TestMachinery, "import _pytest.reports", 1)
        );
        assert_eq!(
            found("c = __import__('coverage')\n"),
            one(Rule::TestMachinery, "coverage", 1)
        );
        assert_eq!(
            found("import importlib\nc = importlib.import_module('cov' + 'erage')\n"),
            one(Rule::TestMachinery, "coverage", 2)
        );
        assert_eq!(
            found("from importlib import import_module as im\nim('_pytest.main')\n"),
            one(Rule::TestMachinery, "_pytest.main", 2)
        );
    }

    #[test]
    fn coverage_through_an_alias_is_reported_at_each_use() {
        let src = "import coverage as c\n\ndef test_x():\n    c.Coverage.current().get_data().add_lines({})\n";
        assert_eq!(
            found(src),
            vec![
                (Rule::TestMachinery, "import coverage".into(), 1),
                (Rule::TestMachinery, "coverage.Coverage.current".into(), 4),
            ]
        );
    }

    #[test]
    fn pytest_hooks_at_any_level_and_their_registration() {
        let src = "\
import pytest

@pytest.fixture(autouse=True)
def sneaky(request):
    class Plugin:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            yield
    request.config.pluginmanager.register(Plugin())
";
        assert_eq!(
            found(src),
            vec![
                (Rule::PytestHook, "pytest.hookimpl".into(), 6),
                (Rule::PytestHook, "def pytest_runtest_makereport".into(), 7),
                (Rule::PytestHook, ".pluginmanager".into(), 9),
            ]
        );
        assert_eq!(
            found("pytest_plugins = ['evil']\n"),
            one(Rule::PytestHook, "pytest_plugins", 1)
        );
        assert_eq!(
            found("def f(config):\n    config.hook.pytest_runtest_logreport(report=r)\n"),
            one(Rule::PytestHook, ".pytest_runtest_logreport", 2)
        );
        assert_eq!(
            found("def f(config):\n    getattr(config, 'pluginmanager')\n"),
            one(Rule::PytestHook, "\"pluginmanager\"", 2)
        );
    }

    #[test]
    fn process_exit_through_aliases_and_getattr() {
        assert_eq!(
            found("import os as o\no._exit(0)\n"),
            one(Rule::ProcessExit, "os._exit", 2)
        );
        assert_eq!(
            found("from os import _exit as e\n\ne(0)\n"),
            vec![
                (Rule::ProcessExit, "from os import _exit".into(), 1),
                (Rule::ProcessExit, "os._exit".into(), 3),
            ]
        );
        assert_eq!(
            found("import os\ngetattr(os, \"_exit\")(0)\n"),
            one(Rule::ProcessExit, "os._exit", 2)
        );
        assert_eq!(
            found("import os\nquit = os._exit\nquit(0)\n"),
            vec![
                (Rule::ProcessExit, "os._exit".into(), 2),
                (Rule::ProcessExit, "os._exit".into(), 3),
            ]
        );
        assert_eq!(
            found("import sys\nsys.modules['os']._exit(0)\n"),
            one(Rule::ProcessExit, "os._exit", 2)
        );
        assert_eq!(
            found("from os import *\n_exit(0)\n"),
            one(Rule::ProcessExit, "os._exit", 2)
        );
        assert_eq!(
            found("import os\nos.execv('/bin/true', ['true'])\n"),
            one(Rule::ProcessExit, "os.execv", 2)
        );
    }

    #[test]
    fn atexit_ctypes_gc_and_tracing() {
        assert_eq!(
            found("import atexit\natexit.register(f)\n"),
            vec![
                (Rule::Atexit, "import atexit".into(), 1),
                (Rule::Atexit, "atexit.register".into(), 2),
            ]
        );
        assert_eq!(
            found("from ctypes import pythonapi\n"),
            one(Rule::Ctypes, "from ctypes import", 1)
        );
        assert_eq!(
            found("import gc\nfor o in gc.get_objects():\n    pass\n"),
            one(Rule::GcIntrospection, "gc.get_objects", 2)
        );
        assert_eq!(
            found("import gc\ngc.collect()\n"),
            Vec::new(),
            "collecting garbage is honest"
        );
        assert_eq!(
            found("import sys\nsys.settrace(None)\nsys.monitoring.use_tool_id(1, 'x')\n"),
            vec![
                (Rule::Tracing, "sys.settrace".into(), 2),
                (Rule::Tracing, "sys.monitoring.use_tool_id".into(), 3),
            ]
        );
        assert_eq!(
            found("import threading as t\nt.setprofile(f)\n"),
            one(Rule::Tracing, "threading.setprofile", 2)
        );
    }

    #[test]
    fn frame_access_by_path_and_by_attribute() {
        assert_eq!(
            found("import sys\nf = sys._getframe(1)\n"),
            one(Rule::FrameAccess, "sys._getframe", 2)
        );
        assert_eq!(
            found("from inspect import currentframe\n"),
            one(Rule::FrameAccess, "from inspect import currentframe", 1)
        );
        assert_eq!(
            found("def f(frame):\n    return frame.f_back.f_locals\n"),
            one(Rule::FrameAccess, ".f_locals", 2)
        );
        assert_eq!(
            found("try:\n    1/0\nexcept Exception as e:\n    g = e.__traceback__.tb_frame.f_globals\n"),
            one(Rule::FrameAccess, ".f_globals", 4)
        );
    }

    #[test]
    fn writing_builtins_but_not_reading_them() {
        assert_eq!(
            found("import builtins\nbuiltins.open = fake\n"),
            one(Rule::BuiltinsWrite, "builtins.open", 2)
        );
        assert_eq!(
            found("__builtins__['AssertionError'] = Exception\n"),
            one(Rule::BuiltinsWrite, "builtins.AssertionError", 1)
        );
        assert_eq!(
            found("import builtins as b\nsetattr(b, 'len', lambda x: 0)\n"),
            one(Rule::BuiltinsWrite, "setattr(builtins, …)", 2)
        );
        assert_eq!(
            found("import builtins\ndel builtins.print\n"),
            one(Rule::BuiltinsWrite, "builtins.print", 2)
        );
        assert_eq!(
            found("__builtins__ = {}\n"),
            one(Rule::BuiltinsWrite, "__builtins__", 1)
        );
        assert_eq!(
            found("import builtins\nx = builtins.len([1])\n"),
            Vec::new()
        );
    }

    #[test]
    fn the_report_folder_in_any_string() {
        assert_eq!(
            found("open('.clover-out/junit.xml', 'w')\n"),
            one(Rule::ReportFolder, ".clover-out", 1)
        );
        assert_eq!(
            found("p = '.clover' + '-out'\n"),
            one(Rule::ReportFolder, ".clover-out", 1)
        );
        assert_eq!(
            found("p = f'{root}/.clover-out/junit.xml'\n"),
            one(Rule::ReportFolder, ".clover-out", 1)
        );
        assert_eq!(
            found("def f(config):\n    config.option.xmlpath = 'x'\n"),
            one(Rule::ReportFolder, ".xmlpath", 2)
        );
    }

    /// The report channel: its variable, and clover's plugins, which hold the channel.
    #[test]
    fn the_report_channel_and_clovers_plugins() {
        assert_eq!(
            found(
                "import os
fd = int(os.environ['CLOVER_' + 'REPORT_FD'])
"
            ),
            one(Rule::ReportFolder, "CLOVER_REPORT_FD", 2)
        );
        assert_eq!(
            found(
                "import _clover_report
"
            ),
            one(Rule::TestMachinery, "import _clover_report", 1)
        );
        assert_eq!(
            found(
                "import sys
w = sys.modules['_clover_worker']
"
            ),
            one(Rule::TestMachinery, "_clover_worker", 2)
        );
    }

    #[test]
    fn dynamic_code_unless_a_literal() {
        assert_eq!(found("eval('1 + 1')\nexec('x = 1')\n"), Vec::new());
        assert_eq!(found("compile('x', '<s>', 'exec')\n"), Vec::new());
        assert_eq!(
            found("exec(src)\n"),
            one(Rule::DynamicCode, "exec of a non-literal", 1)
        );
        assert_eq!(
            found("eval(f'{a} + 1')\n"),
            one(Rule::DynamicCode, "eval of a non-literal", 1)
        );
        assert_eq!(
            found("run = exec\nrun(code)\n"),
            vec![
                (Rule::DynamicCode, "builtins.exec as a value".into(), 1),
                (Rule::DynamicCode, "exec of a non-literal".into(), 2),
            ]
        );
        assert_eq!(
            found("import re\nre.compile(pattern)\n"),
            Vec::new(),
            "re.compile is not the builtin"
        );
    }

    #[test]
    fn local_names_are_not_modules() {
        // A parameter or variable called like a screened module is the caller's value.
        assert_eq!(
            found("def f(coverage):\n    return coverage.total\n"),
            Vec::new()
        );
        assert_eq!(found("atexit = []\natexit.append(1)\n"), Vec::new());
    }

    #[test]
    fn nesting_too_deep_to_screen_is_reported_not_followed() {
        let deep = format!("x = {}1{}\n", "(".repeat(100_000), ")".repeat(100_000));
        let found = findings(&deep);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].rule, found[0].line), (Rule::Unscreenable, 1));
        let chain = format!("x = a{}\n", ".b".repeat(50_000));
        assert_eq!(findings(&chain)[0].rule, Rule::Unscreenable);
        let fine = format!("x = {}1{}\n", "(".repeat(50), ")".repeat(50));
        assert_eq!(findings(&fine), Vec::new());
    }

    #[test]
    fn hook_names_built_as_strings() {
        assert_eq!(
            found("setattr(Plugin, 'pytest_runtest_' + 'makereport', f)\n"),
            one(Rule::PytestHook, "\"pytest_runtest_makereport\"", 1)
        );
        assert_eq!(
            found("Plugin = type('P', (), {'pytest_sessionfinish': f})\n"),
            one(Rule::PytestHook, "\"pytest_sessionfinish\"", 1)
        );
    }

    #[test]
    fn pytest_exit_and_writes_to_pytests_classes() {
        assert_eq!(
            found("import pytest\npytest.exit('done', returncode=0)\n"),
            one(Rule::ProcessExit, "pytest.exit", 2)
        );
        assert_eq!(
            found("import pytest\npytest.TestReport.from_item_and_call = fake\n"),
            one(
                Rule::TestMachinery,
                "pytest.TestReport.from_item_and_call",
                2
            )
        );
        assert_eq!(
            found("import pytest as p\ndef test_x(monkeypatch):\n    monkeypatch.setattr(p.TestReport, 'outcome', 'passed')\n"),
            one(Rule::TestMachinery, "setattr(pytest.TestReport, …)", 3)
        );
        assert_eq!(
            found("def test_x(monkeypatch):\n    monkeypatch.setattr('pytest.TestReport.outcome', 'passed')\n"),
            one(Rule::TestMachinery, "\"pytest.TestReport.outcome\"", 2)
        );
        assert_eq!(
            found("from unittest import mock\nmock.patch('_pytest.runner.call_and_report')\n"),
            one(Rule::TestMachinery, "\"_pytest.runner.call_and_report\"", 2)
        );
        // Reading pytest's public names, and a file called pytest.ini, are honest.
        assert_eq!(
            found("import pytest\ndef test_x(request: pytest.FixtureRequest, tmp_path):\n    (tmp_path / 'pytest.ini').write_text('')\n    assert pytest.approx(1) == 1\n"),
            Vec::new()
        );
    }

    #[test]
    fn a_string_named_like_a_hook_is_not_one() {
        let src = "@pytest.mark.parametrize('pytest_fixture', ['capsys'])\ndef test_x(pytest_fixture):\n    pass\n";
        assert_eq!(found(src), Vec::new());
    }

    #[test]
    fn snippets_are_whole_statements_or_the_line_of_a_header() {
        let src = "\
import gc
counts.add(
    len(gc.get_objects())
)
for o in gc.get_objects():
    pass
";
        let snippets: Vec<String> = findings(src).into_iter().map(|f| f.snippet).collect();
        assert_eq!(
            snippets,
            [
                "counts.add( len(gc.get_objects()) )",
                "for o in gc.get_objects():"
            ]
        );
    }

    #[test]
    fn honest_test_code_is_not_screened() {
        let src = "\
import os
import sys
from unittest import mock

import pytest

from ledger import Account


@pytest.fixture
def account(tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.setattr(os, 'getcwd', lambda: str(tmp_path))
    return Account(os.path.join(tmp_path, 'a.db'), os.environ.get('USER'))


@pytest.mark.parametrize('amount', [1, 2, 3])
def test_deposit(account, amount, capsys):
    with mock.patch('ledger.Account.save') as save:
        account.deposit(amount)
    assert save.called
    with pytest.raises(ValueError, match='negative'):
        account.deposit(-amount)
    print(sys.version_info >= (3, 8), file=sys.stderr)
    assert 'x' not in capsys.readouterr().out


class TestAccount:
    def setup_method(self):
        self.compile = lambda s: s

    def test_eval_literal(self):
        assert eval('1 + 1') == 2
";
        assert_eq!(found(src), Vec::new());
    }
}
