//! Which names a test takes from the repository's own modules, and which file defines them.
//!
//! A name counts when the test file imports it (or a module holding it) from a module that
//! resolves to a `.py` file under the repository that is not a test file (and, when source
//! folders are configured, lies in one). Re-exports are followed (`from .core import Ledger`
//! in a package's `__init__.py`) so that the record points at the file that defines the name.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use clover_protocol::RepoRef;
use tree_sitter::Node;

use super::units::{field_text, Src};
use crate::walk::Globs;

/// How far re-exports are followed before the importing module is taken as the answer.
const MAX_REEXPORT_DEPTH: usize = 6;

/// A module lookup: the dotted name and the extra folder searched first.
type ModuleKey = (String, Option<PathBuf>);

/// What a name in the test file is bound to by an import.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Binding {
    /// A module (`import a.b as m`, or `from a import b` where `a/b.py` exists).
    Module(String),
    /// A name in a module (`from a import name`).
    Object { module: String, name: String },
}

/// A module file's top-level bindings, enough to follow re-exports.
#[derive(Debug, Default)]
struct ModuleInfo {
    defined: BTreeSet<String>,
    /// `from X import name as alias`: alias → (absolute module X, name).
    imported: HashMap<String, (String, String)>,
    /// Modules of `from X import *`, absolute.
    star: Vec<String>,
}

/// Resolves imports against one repository; shared by all files of a run.
#[derive(Debug)]
pub(crate) struct Resolver {
    root: PathBuf,
    /// Folders (absolute) a top-level module name is looked up in, in order.
    roots: Vec<PathBuf>,
    source_dirs: Vec<String>,
    test_globs: Globs,
    cache: Mutex<HashMap<PathBuf, Arc<ModuleInfo>>>,
    conftests: Mutex<HashMap<PathBuf, Arc<BTreeSet<String>>>>,
    /// Module lookups: (module, extra root) → file.
    files: Mutex<HashMap<ModuleKey, Option<PathBuf>>>,
}

impl Resolver {
    pub fn new(root: &Path, source_dirs: &[PathBuf], test_globs: Globs) -> Self {
        let mut roots = vec![root.to_path_buf()];
        if root.join("src").is_dir() {
            roots.push(root.join("src"));
        }
        let source_dirs: Vec<String> = source_dirs
            .iter()
            .map(|d| d.to_string_lossy().trim_end_matches('/').to_string())
            .filter(|d| !d.is_empty() && d != ".")
            .collect();
        for d in &source_dirs {
            // `src/ledger` is a package: its parent is where `import ledger` looks.
            if let Some(parent) = root.join(d).parent() {
                if !roots.iter().any(|r| r == parent) {
                    roots.push(parent.to_path_buf());
                }
            }
        }
        Resolver {
            root: root.to_path_buf(),
            roots,
            source_dirs,
            test_globs,
            cache: Mutex::new(HashMap::new()),
            conftests: Mutex::new(HashMap::new()),
            files: Mutex::new(HashMap::new()),
        }
    }

    /// The file a dotted module name resolves to, searching `extra` first (the test file's
    /// own import root), then the repository's roots.
    fn module_file(&self, module: &str, extra: Option<&Path>) -> Option<PathBuf> {
        let key = (module.to_string(), extra.map(Path::to_path_buf));
        if let Some(found) = self.files.lock().unwrap().get(&key) {
            return found.clone();
        }
        let found = self.find_module_file(module, extra);
        self.files.lock().unwrap().insert(key, found.clone());
        found
    }

    fn find_module_file(&self, module: &str, extra: Option<&Path>) -> Option<PathBuf> {
        let rel: PathBuf = module.split('.').collect();
        extra
            .into_iter()
            .chain(self.roots.iter().map(PathBuf::as_path))
            .find_map(|r| {
                let file = r.join(&rel).with_extension("py");
                if file.is_file() {
                    return Some(file);
                }
                let init = r.join(&rel).join("__init__.py");
                init.is_file().then_some(init)
            })
    }

    fn rel(&self, file: &Path) -> Option<String> {
        file.strip_prefix(&self.root)
            .ok()
            .map(|p| p.to_string_lossy().replace('\\', "/"))
    }

    /// Whether a resolved file is the repository's own code, not a test or a conftest.
    fn is_own(&self, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if name == "conftest.py" || self.test_globs.matches(rel) {
            return false;
        }
        self.source_dirs.is_empty()
            || self
                .source_dirs
                .iter()
                .any(|d| rel == d || rel.starts_with(&format!("{d}/")) || rel == format!("{d}.py"))
    }

    fn info(&self, file: &Path, module: &str) -> Arc<ModuleInfo> {
        if let Some(i) = self.cache.lock().unwrap().get(file) {
            return i.clone();
        }
        let info = Arc::new(parse_module_info(file, module).unwrap_or_default());
        self.cache
            .lock()
            .unwrap()
            .insert(file.to_path_buf(), info.clone());
        info
    }

    /// Follows `name` from `module` to the module that defines it.
    fn defining(&self, module: &str, name: &str, depth: usize) -> Option<(String, PathBuf)> {
        let file = self.module_file(module, None)?;
        if depth >= MAX_REEXPORT_DEPTH {
            return Some((module.to_string(), file));
        }
        let info = self.info(&file, module);
        if info.defined.contains(name) {
            return Some((module.to_string(), file));
        }
        if let Some((m, n)) = info.imported.get(name) {
            if let Some(found) = self.defining(m, n, depth + 1) {
                return Some(found);
            }
        }
        for m in &info.star {
            if let Some(found) = self.defining(m, name, depth + 1) {
                if found.1 != file {
                    return Some(found);
                }
            }
        }
        Some((module.to_string(), file))
    }

    /// Fixture names requested by the fixtures of every `conftest.py` from the test file's
    /// folder up to the root.
    pub fn conftest_requests(&self, test_rel: &str) -> Arc<BTreeSet<String>> {
        let mut all = BTreeSet::new();
        let mut dir = self.root.join(test_rel).parent().map(Path::to_path_buf);
        while let Some(d) = dir {
            let file = d.join("conftest.py");
            if file.is_file() {
                let cached = self.conftests.lock().unwrap().get(&file).cloned();
                let names = cached.unwrap_or_else(|| {
                    let names = Arc::new(fixture_parameters(&file));
                    self.conftests
                        .lock()
                        .unwrap()
                        .insert(file.clone(), names.clone());
                    names
                });
                all.extend(names.iter().cloned());
            }
            if d == self.root {
                break;
            }
            dir = d.parent().map(Path::to_path_buf);
        }
        Arc::new(all)
    }

    /// What the test file's module-level imports bind, computed once per file.
    pub fn bindings(&self, src: &Src, test_rel: &str, module: Node) -> Bindings {
        let test_path = self.root.join(test_rel);
        let (package, import_root) = package_of(&test_path);
        let mut map = HashMap::new();
        collect_imports(
            src,
            module,
            &package,
            &mut |name, b| {
                map.insert(name, b);
            },
            self,
            import_root.as_deref(),
        );
        Bindings {
            map,
            package,
            import_root,
        }
    }

    /// The repository names the test function `func` uses, given the file's bindings.
    pub fn refs(&self, src: &Src, file: &Bindings, func: Node) -> Vec<RepoRef> {
        let mut local = HashMap::new();
        collect_imports(
            src,
            func,
            &file.package,
            &mut |name, b| {
                local.insert(name, b);
            },
            self,
            file.import_root.as_deref(),
        );
        let lookup = |name: &str| local.get(name).or_else(|| file.map.get(name));
        let mut out: BTreeSet<RepoRef> = BTreeSet::new();
        // (node, is the name of an attribute or keyword, the module chain it continues)
        let mut stack: Vec<(Node, bool)> = vec![(func, false)];
        while let Some((n, is_name)) = stack.pop() {
            match n.kind() {
                "identifier" if !is_name => {
                    if let Some(Binding::Object { module, name }) = lookup(src.node_text(n)) {
                        self.push_ref(&mut out, module, name);
                    }
                    continue;
                }
                "attribute" => {
                    if let Some((module, attrs)) = module_chain(src, n, &lookup) {
                        self.follow_attributes(&module, &attrs, &mut out);
                    }
                }
                _ => {}
            }
            let special = match n.kind() {
                "attribute" => n.child_by_field_name("attribute").map(|c| c.id()),
                "keyword_argument" => n.child_by_field_name("name").map(|c| c.id()),
                _ => None,
            };
            let mut c = n.walk();
            for child in n.named_children(&mut c) {
                stack.push((child, special == Some(child.id())));
            }
        }
        out.into_iter().collect()
    }

    /// `mod.sub.name`: walks the attribute names while they name modules, then records the
    /// first name that is not one.
    fn follow_attributes(&self, module: &str, attrs: &[&str], out: &mut BTreeSet<RepoRef>) {
        let mut module = module.to_string();
        for name in attrs {
            let sub = format!("{module}.{name}");
            if self.module_file(&sub, None).is_some() {
                module = sub;
                continue;
            }
            self.push_ref(out, &module, name);
            return;
        }
    }

    fn push_ref(&self, out: &mut BTreeSet<RepoRef>, module: &str, name: &str) {
        let Some(file) = self.module_file(module, None) else {
            return;
        };
        let Some(rel) = self.rel(&file) else { return };
        if !self.is_own(&rel) {
            return;
        }
        let (module, file) = self
            .defining(module, name, 0)
            .unwrap_or((module.to_string(), file));
        let rel = self.rel(&file).filter(|r| self.is_own(r));
        out.insert(RepoRef {
            name: name.to_string(),
            module,
            file: rel,
        });
    }
}

/// The imports of one test file: names bound at module level.
#[derive(Debug, Default)]
pub(crate) struct Bindings {
    map: HashMap<String, Binding>,
    package: Vec<String>,
    import_root: Option<PathBuf>,
}

/// For an outermost `a.b.c` whose root `a` is bound to a module: that module and the attribute
/// names in order. Inner attribute nodes of a chain return `None` (the outermost handles it).
fn module_chain<'a>(
    src: &'a Src,
    n: Node,
    lookup: &dyn Fn(&str) -> Option<&'a Binding>,
) -> Option<(String, Vec<&'a str>)> {
    let mut attrs = Vec::new();
    let mut cur = n;
    while cur.kind() == "attribute" {
        attrs.push(src.node_text(cur.child_by_field_name("attribute")?));
        cur = cur.child_by_field_name("object")?;
    }
    if cur.kind() != "identifier" {
        return None;
    }
    attrs.reverse();
    match lookup(src.node_text(cur))? {
        Binding::Module(m) => Some((m.clone(), attrs)),
        Binding::Object { .. } => None,
    }
}

/// The dotted package a file belongs to (folders up while they hold `__init__.py`) and the
/// folder above the top package, which pytest's default import mode puts on `sys.path`.
fn package_of(file: &Path) -> (Vec<String>, Option<PathBuf>) {
    let mut parts = Vec::new();
    let mut dir = file.parent().map(Path::to_path_buf);
    while let Some(d) = dir.clone() {
        if !d.join("__init__.py").is_file() {
            break;
        }
        parts.push(
            d.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        dir = d.parent().map(Path::to_path_buf);
    }
    parts.reverse();
    (parts, dir)
}

/// The absolute module a `from` clause names, relative to `package` for leading dots.
fn absolute_module(src: &Src, module_name: Node, package: &[String]) -> Option<String> {
    if module_name.kind() != "relative_import" {
        return Some(src.node_text(module_name).replace(' ', ""));
    }
    let text = src.node_text(module_name);
    let dots = text.chars().take_while(|c| *c == '.').count();
    let rest = text[dots..].trim();
    if dots > package.len() {
        return None;
    }
    let mut parts: Vec<String> = package[..package.len() + 1 - dots].to_vec();
    if !rest.is_empty() {
        parts.push(rest.to_string());
    }
    (!parts.is_empty()).then(|| parts.join("."))
}

/// Import statements directly in `scope` (and in nested blocks, but not in nested functions).
fn collect_imports(
    src: &Src,
    scope: Node,
    package: &[String],
    bind: &mut dyn FnMut(String, Binding),
    resolver: &Resolver,
    import_root: Option<&Path>,
) {
    let mut stack = vec![scope];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "import_statement" => {
                let mut c = n.walk();
                for name in n.children_by_field_name("name", &mut c) {
                    if name.kind() == "aliased_import" {
                        let module = field_text(src, name, "name");
                        bind(field_text(src, name, "alias"), Binding::Module(module));
                    } else {
                        let text = src.node_text(name);
                        let first = text.split('.').next().unwrap_or(text).trim().to_string();
                        bind(first.clone(), Binding::Module(first));
                    }
                }
            }
            "import_from_statement" => {
                let Some(m) = n.child_by_field_name("module_name") else {
                    continue;
                };
                let Some(module) = absolute_module(src, m, package) else {
                    continue;
                };
                let mut c = n.walk();
                for name in n.children_by_field_name("name", &mut c) {
                    let (orig, alias) = if name.kind() == "aliased_import" {
                        (
                            field_text(src, name, "name"),
                            field_text(src, name, "alias"),
                        )
                    } else {
                        let t = src.node_text(name).to_string();
                        (t.clone(), t)
                    };
                    let sub = format!("{module}.{orig}");
                    let b = if resolver.module_file(&sub, import_root).is_some() {
                        Binding::Module(sub)
                    } else {
                        Binding::Object {
                            module: module.clone(),
                            name: orig,
                        }
                    };
                    bind(alias, b);
                }
            }
            "function_definition" | "class_definition" | "lambda" if n.id() != scope.id() => {}
            "decorated_definition" if n.id() != scope.id() => {}
            _ => {
                let mut c = n.walk();
                for child in n.named_children(&mut c) {
                    stack.push(child);
                }
            }
        }
    }
}

thread_local! {
    static PARSER: std::cell::RefCell<Option<tree_sitter::Parser>> = const { std::cell::RefCell::new(None) };
}

fn with_parser<T>(f: impl FnOnce(&mut tree_sitter::Parser) -> T) -> T {
    PARSER.with(|p| {
        let mut p = p.borrow_mut();
        let parser = p.get_or_insert_with(|| {
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&tree_sitter_python::LANGUAGE.into())
                .expect("tree-sitter-python matches the tree-sitter version");
            parser
        });
        f(parser)
    })
}

/// The parameter names of every function in a `conftest.py` (fixtures request fixtures by
/// parameter name; a few extra names cost nothing).
fn fixture_parameters(file: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Ok(text) = std::fs::read_to_string(file) else {
        return out;
    };
    let Some(tree) = with_parser(|p| p.parse(&text, None)) else {
        return out;
    };
    let src = Src::new(&text);
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        if n.kind() == "function_definition" {
            if let Some(params) = n.child_by_field_name("parameters") {
                let mut c = params.walk();
                for p in params.named_children(&mut c) {
                    let ident = if p.kind() == "identifier" {
                        Some(p)
                    } else {
                        p.child_by_field_name("name").or_else(|| p.named_child(0))
                    };
                    if let Some(i) = ident.filter(|i| i.kind() == "identifier") {
                        out.insert(src.node_text(i).to_string());
                    }
                }
            }
        }
        let mut c = n.walk();
        for child in n.named_children(&mut c) {
            stack.push(child);
        }
    }
    out
}

/// Parses a module file for its top-level definitions and re-exports.
fn parse_module_info(file: &Path, module: &str) -> Option<ModuleInfo> {
    let text = std::fs::read_to_string(file).ok()?;
    let tree = with_parser(|p| p.parse(&text, None))?;
    let src = Src::new(&text);
    let is_init = file.file_name().is_some_and(|n| n == "__init__.py");
    let mut package: Vec<String> = module.split('.').map(str::to_string).collect();
    if !is_init {
        package.pop();
    }
    let mut info = ModuleInfo::default();
    let root = tree.root_node();
    let mut c = root.walk();
    for stmt in root.named_children(&mut c) {
        top_level_bindings(&src, stmt, &package, &mut info);
    }
    Some(info)
}

fn top_level_bindings(src: &Src, stmt: Node, package: &[String], info: &mut ModuleInfo) {
    match stmt.kind() {
        "function_definition" | "class_definition" => {
            info.defined.insert(field_text(src, stmt, "name"));
        }
        "decorated_definition" => {
            if let Some(d) = stmt.child_by_field_name("definition") {
                info.defined.insert(field_text(src, d, "name"));
            }
        }
        "expression_statement" => {
            if let Some(a) = stmt.named_child(0).filter(|a| a.kind() == "assignment") {
                if let Some(left) = a.child_by_field_name("left") {
                    if left.kind() == "identifier" {
                        info.defined.insert(src.node_text(left).to_string());
                    }
                }
            }
        }
        "import_from_statement" => {
            let Some(m) = stmt.child_by_field_name("module_name") else {
                return;
            };
            let Some(module) = absolute_module(src, m, package) else {
                return;
            };
            let mut c = stmt.walk();
            if stmt
                .named_children(&mut c)
                .any(|n| n.kind() == "wildcard_import")
            {
                info.star.push(module);
                return;
            }
            let mut c = stmt.walk();
            for name in stmt.children_by_field_name("name", &mut c) {
                let (orig, alias) = if name.kind() == "aliased_import" {
                    (
                        field_text(src, name, "name"),
                        field_text(src, name, "alias"),
                    )
                } else {
                    let t = src.node_text(name).to_string();
                    (t.clone(), t)
                };
                info.imported.insert(alias, (module.clone(), orig));
            }
        }
        "if_statement" | "try_statement" => {
            // Conditional definitions (`try: from ._speedups import f except ImportError: ...`)
            // still bind at module level.
            let mut c = stmt.walk();
            for child in stmt.named_children(&mut c) {
                match child.kind() {
                    "block" => {
                        let mut c2 = child.walk();
                        for s in child.named_children(&mut c2) {
                            top_level_bindings(src, s, package, info);
                        }
                    }
                    "else_clause" | "elif_clause" | "except_clause" | "finally_clause" => {
                        top_level_bindings(src, child, package, info)
                    }
                    _ => {}
                }
            }
        }
        "else_clause" | "elif_clause" | "except_clause" | "finally_clause" => {
            let mut c = stmt.walk();
            for child in stmt.named_children(&mut c) {
                if child.kind() == "block" {
                    let mut c2 = child.walk();
                    for s in child.named_children(&mut c2) {
                        top_level_bindings(src, s, package, info);
                    }
                }
            }
        }
        _ => {}
    }
}
