//! Setup isolation: the problem file of one test is the original module with every statement
//! the test does not reach left out.
//!
//! What is kept, starting from the test (and, for a method, its class):
//! - module-level statements that bind a name the kept code uses, transitively: imports,
//!   assignments, helper functions and classes, fixtures (a fixture is "used" by a parameter
//!   name or a `usefixtures` string);
//! - statements pytest or Python runs for their effect: `from __future__`, `import *`, calls,
//!   assignments to attributes, `pytestmark`, autouse fixtures, `setup_module` and friends,
//!   `pytest_*` hooks; unless they name another test, which is not there any more;
//! - for a method: the class header, every class attribute and nested non-test class, the
//!   setup/teardown methods, dunder methods, autouse fixtures, and the other methods and
//!   fixtures the kept class code names (`self.helper` names `helper`);
//! - a test class the test depends on (a base class, say) is kept without its own tests.
//!
//! The test goes last in its class and the class (or function) last in the module, so that
//! everything before it is the setup, unless a statement names the test itself (then it
//! follows). Names are traced by text, not by scope analysis: a local variable that shares a
//! module-level name keeps that name's statement. That errs toward keeping too much, which
//! costs a few lines; keeping too little would break the test.

use std::collections::{BTreeSet, HashSet};

use super::units::{Block, Role, Src, Unit};

/// The test a problem file is built for.
#[derive(Debug)]
pub(crate) struct Target<'u, 't> {
    /// Containers from the outermost in: test classes and compound statements.
    pub chain: Vec<&'u Unit<'t>>,
    /// The definitions of the test: the primary first, then same-named ones in other
    /// branches (`if PY3: def test_b ... else: def test_b ...`).
    pub defs: Vec<&'u Unit<'t>>,
    /// Names of the enclosing test classes, outermost first.
    pub classes: Vec<String>,
    pub name: String,
}

/// A problem file and where the test landed in it.
#[derive(Debug)]
pub(crate) struct Isolated {
    pub text: String,
    /// 0-based line in `text` where the primary definition's first line (with attached
    /// comments) was copied to.
    pub test_first_line: usize,
}

/// `conftest_requests` are the fixture names that fixtures in the `conftest.py` files above the
/// test request: a module-level fixture of that name overrides the conftest's, so it stays.
pub(crate) fn isolate(
    src: &Src,
    module: &Block,
    target: &Target,
    conftest_requests: &BTreeSet<String>,
) -> Isolated {
    let mut emit: HashSet<usize> = HashSet::new();
    let mut path: HashSet<usize> = HashSet::new();
    for u in target.chain.iter().chain(target.defs.iter()) {
        emit.insert(u.id);
        path.insert(u.id);
    }
    let mut module_needed: BTreeSet<String> = BTreeSet::new();
    for d in &target.defs {
        module_needed.extend(d.names.iter().cloned());
    }

    // Class level, innermost class first: each class keeps what its kept members name.
    let classes: Vec<&Unit> = target
        .chain
        .iter()
        .copied()
        .filter(|u| u.role == Role::TestClass)
        .collect();
    let mut inner_seed: BTreeSet<String> = BTreeSet::new();
    for (depth, class) in classes.iter().enumerate().rev() {
        let mut needed: BTreeSet<String> = if depth + 1 == classes.len() {
            target
                .defs
                .iter()
                .flat_map(|d| d.names.iter().chain(d.attrs.iter()).cloned())
                .collect()
        } else {
            inner_seed.clone()
        };
        module_needed.extend(class.names.iter().cloned());
        let block = &class.blocks[0];
        loop {
            let mut changed = false;
            for m in &block.units {
                if emit.contains(&m.id) {
                    continue;
                }
                let keep = match m.role {
                    Role::Test | Role::Compound => false,
                    Role::TestClass => defines_any(m, &needed),
                    Role::Plain { always } => always || defines_any(m, &needed),
                };
                if keep {
                    let (names, attrs) = mark_all(m, &mut emit);
                    module_needed.extend(names.iter().cloned());
                    needed.extend(names);
                    needed.extend(attrs);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        inner_seed = class.names.clone();
    }

    // Module level, through compound statements but not into classes.
    let mut scope: Vec<(&Unit, Option<usize>)> = Vec::new();
    flatten(module, None, &mut scope);
    let top_name = target
        .chain
        .first()
        .unwrap_or(&target.defs[0])
        .name()
        .to_string();
    let other_tests: BTreeSet<&str> = scope
        .iter()
        .filter(|(u, _)| matches!(u.role, Role::Test | Role::TestClass) && !path.contains(&u.id))
        .map(|(u, _)| u.name())
        .filter(|n| *n != target.name && *n != top_name)
        .collect();
    let mut needed = module_needed;
    let mut headers_done: HashSet<usize> = HashSet::new();
    loop {
        let mut changed = false;
        for (u, _) in &scope {
            if emit.contains(&u.id) || u.role == Role::Compound {
                continue;
            }
            let keep = match u.role {
                Role::Test | Role::TestClass => defines_any(u, &needed),
                Role::Plain { always } => {
                    (always && !u.names.iter().any(|n| other_tests.contains(n.as_str())))
                        || defines_any(u, &needed)
                        || (u.fixture && u.defines.iter().any(|d| conftest_requests.contains(d)))
                }
                Role::Compound => false,
            };
            if keep {
                let (names, _) = mark_all(u, &mut emit);
                needed.extend(names);
                changed = true;
            }
        }
        // A compound statement is emitted when anything inside it is; then its header's
        // names (the `if` condition, say) are needed too.
        for (u, parent) in &scope {
            if emit.contains(&u.id) || path.contains(&u.id) {
                let mut p = *parent;
                while let Some(pid) = p {
                    if headers_done.insert(pid) {
                        if let Some((c, up)) = scope.iter().find(|(c, _)| c.id == pid) {
                            emit.insert(pid);
                            needed.extend(c.names.iter().cloned());
                            changed = true;
                            p = *up;
                            continue;
                        }
                    }
                    break;
                }
            }
        }
        for c in target.chain.iter().filter(|c| c.role == Role::Compound) {
            if headers_done.insert(c.id) {
                needed.extend(c.names.iter().cloned());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }

    let mut e = Emitter {
        src,
        emit: &emit,
        path: &path,
        primary: target.defs[0].id,
        top_name,
        out: String::new(),
        lines: 0,
        primary_line: 0,
    };
    e.block(module, true, true);
    Isolated {
        text: e.out,
        test_first_line: e.primary_line,
    }
}

fn defines_any(u: &Unit, needed: &BTreeSet<String>) -> bool {
    u.defines.iter().any(|d| needed.contains(d))
}

/// Marks a unit kept, with everything in it except tests, and returns the names and
/// attribute names the kept code uses.
fn mark_all(u: &Unit, emit: &mut HashSet<usize>) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut names = u.names.clone();
    let mut attrs = u.attrs.clone();
    emit.insert(u.id);
    for b in &u.blocks {
        for child in &b.units {
            if child.role == Role::Test {
                continue;
            }
            let (n, a) = mark_all(child, emit);
            names.extend(n);
            attrs.extend(a);
        }
    }
    (names, attrs)
}

/// Module-scope units with the compound statement they sit in.
fn flatten<'u, 't>(
    block: &'u Block<'t>,
    parent: Option<usize>,
    out: &mut Vec<(&'u Unit<'t>, Option<usize>)>,
) {
    for u in &block.units {
        out.push((u, parent));
        if u.role == Role::Compound {
            for b in &u.blocks {
                flatten(b, Some(u.id), out);
            }
        }
    }
}

struct Emitter<'a, 's> {
    src: &'a Src<'s>,
    emit: &'a HashSet<usize>,
    path: &'a HashSet<usize>,
    primary: usize,
    top_name: String,
    out: String,
    lines: usize,
    primary_line: usize,
}

impl Emitter<'_, '_> {
    /// Emits the kept units of a block. With `reorder`, the unit holding the test goes last
    /// (and at module level, statements naming the test or its class follow it).
    fn block(&mut self, b: &Block, reorder: bool, module: bool) {
        let kept: Vec<&Unit> = b
            .units
            .iter()
            .filter(|u| self.emit.contains(&u.id))
            .collect();
        let list: Vec<&Unit> = if reorder {
            let on_path = |u: &&Unit| self.path.contains(&u.id);
            let names_top = |u: &&Unit| module && u.names.contains(&self.top_name);
            let mut list: Vec<&Unit> = kept
                .iter()
                .copied()
                .filter(|u| !on_path(u) && !names_top(u))
                .collect();
            list.extend(kept.iter().copied().filter(|u| on_path(u)));
            list.extend(kept.iter().copied().filter(|u| !on_path(u) && names_top(u)));
            list
        } else {
            kept
        };
        if list.is_empty() {
            if let Some(u) = b.units.first() {
                let line = self.src.line(u.decl_first);
                let indent: String = line
                    .chars()
                    .take_while(|c| *c == ' ' || *c == '\t')
                    .collect();
                self.push(&format!("{indent}pass\n"));
            }
            return;
        }
        for (i, u) in list.iter().enumerate() {
            if i > 0 {
                let mut blanks = 0;
                let mut l = u.first;
                while l > 0 && blanks < 2 && self.src.is_blank(l - 1) {
                    blanks += 1;
                    l -= 1;
                }
                for _ in 0..blanks {
                    self.push("\n");
                }
            }
            self.unit(u);
        }
    }

    fn unit(&mut self, u: &Unit) {
        if u.id == self.primary {
            self.primary_line = self.lines;
        }
        if u.is_container() && !u.blocks.is_empty() {
            let reorder = u.role == Role::TestClass && self.path.contains(&u.id);
            let mut cursor = u.first;
            for b in &u.blocks {
                if b.units.is_empty() {
                    continue;
                }
                self.copy(cursor, b.first);
                self.block(b, reorder, false);
                cursor = b.last + 1;
            }
            self.copy(cursor, u.last + 1);
        } else {
            self.copy(u.first, u.last + 1);
        }
    }

    /// Copies original lines `from..to` (0-based, end exclusive).
    fn copy(&mut self, from: usize, to: usize) {
        for l in from..to {
            let line = self.src.line(l);
            self.push(line);
            if !line.ends_with('\n') {
                self.push("\n");
            }
        }
    }

    fn push(&mut self, s: &str) {
        self.lines += s.matches('\n').count();
        self.out.push_str(s);
    }
}
