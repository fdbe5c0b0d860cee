"""clover's session record, loaded with `-p _clover_report` into every pytest run.

When the session ends, after pytest's JUnit writer has written its report (and pytest-cov,
or the warm worker, the coverage report), this plugin sends the host pytest's own exit
status, the tests it saw by outcome (from its own report hooks, which run before anyone
else's), the tests that started and never finished, and the SHA-256 of each report the host
names in `$CLOVER_REPORTS` (paths from the invocation folder, `:` between them; `none` for
one that is not there). The host accepts a report only when exactly this one record came and
agrees with the reports and the process's exit code: a report written by hand before
`os._exit`, or rewritten by an `atexit` handler, does not.

The record does not go into a file: a test can write any file the run can, and one that
knew the record's format could write a consistent record beside a forged report. It goes
through a pipe only the host reads, whose write end the run is given on the descriptor
named in `$CLOVER_REPORT_FD`. This plugin takes it over when it is imported (`-p` imports
it before any conftest or test module), onto a private descriptor that no child inherits,
and removes the variable; a warm worker hands its candidate's pipe to `take_channel` the
same way. The plugin writes one framed record and closes it; anything else in the pipe makes
the run an error.

The record is also a witness of what the run did to pytest itself. When a collection starts,
before any test module is imported, the plugin notes every hook implementation and the
functions and classes through which a test's outcome travels (pluggy's hook calls, pytest's
runner, reports, collection and JUnit writer); at every report it looks again, and at each
call it knows, from an innermost wrapper of `pytest_runtest_call`, whether the test's own
call raised. A hook implementation that appeared since (but a conftest's), one of those
functions or classes replaced or given other code, or a call that raised and is reported
passed (or a call reported that never ran) is written to the record as `tampered`, and the
host takes such a run as forged, whatever the reports say. This looks at what the run did,
not at how its text spells it: a hook wrapper registered through names decoded at run time
is the same registration.

And it is a witness of which lines of the code under test ran. For each file named in
`$CLOVER_WITNESS` (the files the run's scoring reads, from the invocation folder, one a
line) the code that runs is compiled, not from the file as it is, but with a call
of `__clover_witness__(line)` before every statement of every function body, on that
statement's line (same lines, same behaviour, coverage.py measures it as the file): a cold
run's plugin imports such a file so, a warm worker points its live functions at such code.
The calls add to a set only this plugin reports; the record names, per file, the lines
watched and those seen, and the host takes a run whose coverage claims a watched line the
witness never saw as forged: lines added to coverage.py's data through its API, or into its
tracer's tables, did not run.

A test runs in this same process and could still reach the descriptor and forge the record,
or undo its changes between two of these looks; the static screen (clover-screen) rejects
the plain constructs that would (`os._exit`, `atexit`, importing this plugin, reaching the
plugin manager), and docs/THREAT-MODEL.md says what is left.
"""

import hashlib
import os
import sys

import pytest

# A test's outcome is the highest of its phases' in this order, the order in which clover
# reads a JUnit case (a failing call and a failing teardown, two cases of one name, are read
# as one failed test).
_RANK = {"passed": 0, "skipped": 1, "error": 2, "failed": 3}

_outcomes = {}
_started = set()
_finished = set()
_channel = None
# The first sign that the run changed pytest's machinery, or None.
_tampered = None
# Per test id, whether its last call raised (the exception's type name), or None if it
# returned; written by the innermost wrapper of `pytest_runtest_call`.
_called = {}
# What `_watch` noted when the collection started: the hook implementations per hook, and
# the attributes of the modules and classes a verdict travels through.
_hooks = None
_attrs = None
# The ids of what `_hooks` holds for `pytest_runtest_makereport`, for its wrapper's look.
_noted_makereport = frozenset()
# This plugin: none of its implementations may be taken out.
_SELF = sys.modules[__name__]
# Plugins the runner itself registers after a collection started (`trust`).
_trusted = []

# The modules through which a test's outcome travels from its call to the reports: their
# functions and classes, and the attributes of those classes, must stay what they were.
_WATCHED = (
    "pluggy._hooks",
    "pluggy._callers",
    "pluggy._manager",
    "pluggy._result",
    "_pytest.runner",
    "_pytest.reports",
    "_pytest.python",
    "_pytest.nodes",
    "_pytest.main",
    "_pytest.skipping",
    "_pytest.outcomes",
    "_pytest.unittest",
    "_pytest.junitxml",
    "_clover_report",
)


# The name of the witness in the globals of an instrumented module.
WITNESS = "__clover_witness__"
class _Witnessed:
    """A witnessed file: the lines seen, the lines watched (None until known), why it could
    not be witnessed (or None), and its text when the run began."""

    def __init__(self, source, real=None):
        self.seen = set()
        self.watched = None
        self.why = None
        self.source = source
        self.real = real

    def line(self, name):
        if self.why is not None:
            return "unwitnessed %s: %s" % (name, " ".join(self.why.split())[:200])
        watched = self.watched
        if watched is None and self.real is not None and any(
            os.path.realpath(f) == self.real
            for f in (getattr(m, "__file__", None) for m in list(sys.modules.values()))
            if isinstance(f, str)
        ):
            # Imported by a loader that comes before the witness (pytest's assertion
            # rewriter, for a file named like a test).
            return "unwitnessed %s: another loader imported it" % name
        if watched is None:
            # Never imported: no line of it ran, in a function body or not, whatever the
            # coverage data says.
            try:
                _, inside, outside = instrument(self.source, name)
            except (SyntaxError, ValueError) as e:
                return "unwitnessed %s: it does not parse: %s" % (name, e)
            watched = inside | outside
        # The path last: it may hold spaces.
        return "witness %s %s %s" % (_ranges(self.seen & watched), _ranges(watched), name)


# Per witnessed file, as the host names it.
_witness = {}


def instrument(source, filename):
    """`source`'s module code with a witness call before each statement of each function
    body, the lines so watched (a statement's line, unless code outside any function body
    runs on it too: a one-line `def f(): return 1`, whose line runs at import), and the lines
    of the statements outside function bodies."""
    import ast

    tree = ast.parse(source, filename)
    watched, outside = set(), set()

    def call(stmt):
        c = ast.Expr(ast.Call(ast.Name(WITNESS, ast.Load()), [ast.Constant(stmt.lineno)], []))
        return ast.copy_location(ast.fix_missing_locations(ast.copy_location(c, stmt)), stmt)

    def walk(stmts, in_function, docstring=False):
        out = []
        for i, stmt in enumerate(stmts):
            if not in_function:
                outside.add(stmt.lineno)
                # A definition's decorators run where it is defined.
                for d in getattr(stmt, "decorator_list", ()):
                    outside.add(d.lineno)
            elif not (
                docstring
                and i == 0
                and isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                watched.add(stmt.lineno)
                out.append(call(stmt))
            out.append(stmt)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stmt.body = walk(stmt.body, True, docstring=True)
                continue
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(stmt, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    setattr(stmt, field, walk(sub, in_function, docstring=False))
            for h in getattr(stmt, "handlers", ()):
                h.body = walk(h.body, in_function)
            for c in getattr(stmt, "cases", ()):
                c.body = walk(c.body, in_function)
        return out

    tree.body = walk(tree.body, False)
    code = compile(tree, filename, "exec", dont_inherit=True)
    return code, watched - outside, outside


def others_spec(me, busy, fullname, path, target):
    """The spec the finders of `sys.meta_path` but `me` find for `fullname`, as the import
    would find it without `me`. `busy` holds the names being looked up: a finder that imports
    through `sys.meta_path` itself asks `me` again, which then stands aside (None)."""
    if fullname in busy:
        return None
    busy.add(fullname)
    try:
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is me or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                return spec
        return None
    finally:
        busy.discard(fullname)


def _witness_finder(paths):
    """First on `sys.meta_path`: a module of `paths` (real path -> its name in the record)
    that plain Python would load from source is loaded from its instrumented code; one that
    another loader takes is not witnessed, and the record says so."""
    import importlib.machinery

    source_loader = importlib.machinery.SourceFileLoader

    class WitnessLoader(source_loader):
        def entry(self):
            return _witness[paths[os.path.realpath(self.path)]]

        def get_code(self, name):
            entry = self.entry()
            data = self.get_data(self.path)
            try:
                code, watched, _ = instrument(data, self.path)
            except (SyntaxError, ValueError) as e:
                entry.why = "it does not parse: %s" % e
                return super().get_code(name)
            entry.watched = watched if entry.watched is None else entry.watched | watched
            return code

        def exec_module(self, module):
            module.__dict__[WITNESS] = self.entry().seen.add
            super().exec_module(module)

    class WitnessFinder:
        busy = set()

        def find_spec(self, fullname, path=None, target=None):
            spec = others_spec(self, self.busy, fullname, path, target)
            if spec is None or not isinstance(spec.origin, str):
                return spec
            name = paths.get(os.path.realpath(spec.origin))
            if name is None:
                return spec
            if type(spec.loader) is not source_loader:
                _witness[name].why = "its loader is %s" % type(spec.loader).__name__
                return spec
            spec.loader = WitnessLoader(fullname, spec.origin)
            return spec

    return WitnessFinder()


def witness_cold():
    """Witnesses the files `$CLOVER_WITNESS` names from here on (`-p` imports this plugin
    before any conftest or test module): each one already imported is not witnessed."""
    names = [n for n in os.environ.pop("CLOVER_WITNESS", "").split("\n") if n]
    if not names:
        return
    paths = {}
    for n in names:
        try:
            with open(n, "rb") as f:
                source = f.read()
        except OSError:
            continue
        _witness[n] = _Witnessed(source, os.path.realpath(n))
        paths[os.path.realpath(n)] = n
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        if isinstance(f, str) and os.path.realpath(f) in paths:
            _witness[paths[os.path.realpath(f)]].why = "it was imported before the run began"
    sys.meta_path.insert(0, _witness_finder(paths))


def _ranges(lines):
    out, run = [], None
    for n in sorted(lines):
        if run is not None and n == run[1] + 1:
            run[1] = n
        else:
            run = [n, n]
            out.append(run)
    return ",".join("%d-%d" % (a, b) if a != b else "%d" % a for a, b in out) or "-"


def trust(plugin):
    """A plugin the runner registers itself after a collection started: not a tampering."""
    _trusted.append(plugin)


def _implementations(pm):
    """Per hook, how its caller calls (its type and `_hookexec`: `add_hookcall_monitoring`
    or a replaced `_hookexec` can change any result), the implementations of plugins that
    are not conftests (each as [`_entry`]), and whether the hook takes its first result."""
    conftests = getattr(pm, "_conftest_plugins", ())
    out = {}
    for name, caller in list(vars(pm.hook).items()):
        impls = getattr(caller, "_hookimpls", None)
        if impls is None:
            continue
        spec = getattr(caller, "spec", None)
        first = bool(getattr(spec, "opts", {}).get("firstresult"))
        out[name] = (
            (type(caller), getattr(caller, "_hookexec", None)),
            tuple(_entry(h) for h in impls if not _allowed(h, conftests)),
            first,
        )
    out[None] = ((type(pm), getattr(pm, "_inner_hookexec", None), type(pm.hook)), (), False)
    return out


def _entry(h):
    """An implementation as what it runs: its plugin, its function (a method's own function:
    registering the same plugin again makes a new bound method of it) and the function's
    code — the objects themselves, so that none can be freed and its id reused — and whether
    it wraps the others."""
    function = getattr(h.function, "__func__", h.function)
    wraps = bool(getattr(h, "hookwrapper", False) or getattr(h, "wrapper", False))
    return (h.plugin, function, getattr(function, "__code__", None), wraps)


def _key(entry):
    return tuple(id(x) for x in entry[:3])


def _changed(now, noted, first):
    """What makes the implementations `now` of a hook other than those `noted`, or None.
    A new function is a change. A plugin unregistered, or unregistered and registered again
    (flask's tests take pytest's logging plugin out for one test and put it back), runs
    nothing that was not there, and is not: unless what went is clover's own, or a plain
    implementation of a hook that takes the first result (`pytest_pyfunc_call`), without
    which a test would not run at all and so could not fail."""
    keys = {_key(e) for e in now}
    noted_keys = {_key(e) for e in noted}
    if any(_key(e) not in noted_keys for e in now):
        return "a new implementation was registered"
    for e in noted:
        if _key(e) not in keys and (e[0] is _SELF or (first and not e[3])):
            return "an implementation of %r was taken out" % getattr(e[1], "__qualname__", e[1])
    return None


def _allowed(h, conftests):
    if h.plugin in conftests or any(h.plugin is t for t in _trusted):
        return True
    # A conftest's own helper class or function, registered by the conftest.
    code = getattr(h.function, "__code__", None)
    return code is not None and os.path.basename(code.co_filename) == "conftest.py"


def _attributes():
    """The functions and classes of the watched modules and the attributes of those
    classes, each as (its namespace, name, object, code): the namespaces are live views, so
    `_look` reads what they hold then."""
    out = []
    for m in _WATCHED:
        module = sys.modules.get(m)
        if module is None:
            continue
        spaces = [(m, vars(module))]
        spaces += [
            ("%s.%s" % (m, name), vars(v))
            for name, v in list(vars(module).items())
            if isinstance(v, type) and getattr(v, "__module__", None) == m
        ]
        for i, (where, space) in enumerate(spaces):
            for name, v in list(space.items()):
                # A module's namespace also holds what it imported from the standard
                # library (`_pytest.junitxml.datetime`, which freezegun replaces in every
                # module while a test runs and puts back after it): no part of the
                # machinery, through which no verdict travels.
                if i == 0 and not _machinery_object(v):
                    continue
                if callable(v) or isinstance(v, (staticmethod, classmethod, property)):
                    out.append((where, space, name, v, getattr(v, "__code__", None)))
    return out


def _machinery_object(v):
    """Whether `v` is watched in a module's namespace: everything but what the module
    imported from the standard library, the very object the standard library's module holds
    under its name (pytest's own exceptions say `builtins` and are not there: watched)."""
    try:
        module = getattr(v, "__module__", None)
        name = getattr(v, "__qualname__", None)
        if not isinstance(module, str) or not isinstance(name, str):
            return True
        if module.split(".")[0] not in sys.stdlib_module_names or module == "builtins":
            return True
        home = sys.modules.get(module)
        return home is None or getattr(home, name, None) is not v
    except Exception:
        return True


def _same(a, b):
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


# `$CLOVER_WATCH=off`: the machinery is not watched (for comparison).
_WATCHING = os.environ.pop("CLOVER_WATCH", "on") != "off"


def _watch(pm):
    global _hooks, _attrs, _noted_makereport
    if not _WATCHING:
        return
    _hooks = _implementations(pm)
    _noted_makereport = {_key(e) for e in _hooks["pytest_runtest_makereport"][1]}
    _attrs = _attributes()
    _called.clear()


def _tamper(what):
    global _tampered
    if _tampered is None:
        _tampered = " ".join(str(what).split())[:300]


def _look(pm, attributes):
    """Compares the machinery with what `_watch` noted; the first difference is a tampering."""
    if _hooks is None or _tampered is not None:
        return
    now = _implementations(pm)
    for name, (how, impls, first) in _hooks.items():
        now_how, now_impls, _ = now.get(name, ((), (), first))
        why = "its caller was replaced" if not _same(now_how, how) else _changed(now_impls, impls, first)
        if why is not None:
            _tamper("the implementations of %s changed during the run: %s" % (name, why))
            return
    if attributes:
        for where, space, name, v, code in _attrs:
            if space.get(name) is not v or getattr(v, "__code__", None) is not code:
                _tamper("%s.%s was replaced during the run" % (where, name))
                return


def _running_implementations():
    """The implementations of the hook call this function is called from (pluggy's
    `_multicall` frame), or None: a wrapper that removed itself is still among them."""
    multicall = getattr(sys.modules.get("pluggy._callers"), "_multicall", None)
    code = getattr(multicall, "__code__", None)
    frame = sys._getframe(1)
    for _ in range(8):
        if frame is None:
            return None
        if frame.f_code is code:
            return frame.f_locals.get("hook_impls")
        frame = frame.f_back
    return None


def take_channel():
    """Moves the channel named in `$CLOVER_REPORT_FD` to a descriptor of this module's own
    (not inherited by children) and forgets where it came from."""
    global _channel
    fd = os.environ.pop("CLOVER_REPORT_FD", None)
    if fd is None:
        return
    fd = int(fd)
    _channel = os.dup(fd)
    os.close(fd)


take_channel()
witness_cold()


def _see(nodeid, outcome):
    if _RANK[outcome] >= _RANK[_outcomes.get(nodeid, "passed")]:
        _outcomes[nodeid] = outcome


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    # Before any test module is imported: what a run may not change.
    _watch(session.config.pluginmanager)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid):
    _started.add(nodeid)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_call(item):
    # The innermost wrapper: what the test's own call did, before any wrapper outside it
    # could make something else of it.
    try:
        result = yield
    except BaseException as e:
        _called[item.nodeid] = type(e).__name__
        raise
    _called[item.nodeid] = None
    return result


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # The implementations this very call runs, a wrapper outside this one included (one
    # that removes itself before the reports are made is still in the call).
    if _hooks is not None and _tampered is None:
        running = _running_implementations()
        conftests = getattr(item.config.pluginmanager, "_conftest_plugins", ())
        if running is not None:
            for h in running:
                if _key(_entry(h)) not in _noted_makereport and not _allowed(h, conftests):
                    _tamper("a new implementation of pytest_runtest_makereport ran")
                    break
    return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    pm = _plugin_manager
    if pm is not None:
        _look(pm, report.when == "call")
    if report.when == "call" and _hooks is not None:
        if report.nodeid not in _called:
            _tamper("%s has a report of a call that never ran" % report.nodeid)
        elif report.passed and _called[report.nodeid] is not None:
            _tamper(
                "%s raised %s in its call but is reported passed"
                % (report.nodeid, _called[report.nodeid])
            )
    # The JUnit writer records a passed phase only for the call, and every failed or
    # skipped one; a failure outside the call is an error.
    if report.failed:
        _see(report.nodeid, "failed" if report.when == "call" else "error")
    elif report.skipped:
        _see(report.nodeid, "skipped")
    elif report.when == "call":
        _see(report.nodeid, "passed")
    if report.when == "teardown":
        _finished.add(report.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_collectreport(report):
    if report.failed:
        _see(report.nodeid, "error")
    elif report.skipped:
        _see(report.nodeid, "skipped")


_plugin_manager = None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    global _plugin_manager
    _plugin_manager = config.pluginmanager


def pytest_internalerror():
    _see("internal", "error")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    # The outermost wrapper: everything else's session end, the JUnit writer's included,
    # has run when the yield returns. A session end that raised sends no record.
    global _channel
    result = yield
    if _plugin_manager is not None:
        _look(_plugin_manager, True)
    if _channel is not None:
        counts = {k: 0 for k in _RANK}
        for outcome in _outcomes.values():
            counts[outcome] += 1
        lines = [
            "exitstatus %d" % int(session.exitstatus),
            *("%s %d" % (k, counts[k]) for k in _RANK),
            "unfinished %d" % len(_started - _finished),
        ]
        if _tampered is not None:
            lines.append("tampered %s" % _tampered)
        lines += [w.line(name) for name, w in sorted(_witness.items())]
        for report in filter(None, os.environ.get("CLOVER_REPORTS", "").split(":")):
            path = os.path.join(str(session.config.invocation_params.dir), report)
            try:
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                digest = "none"
            lines.append("sha256 %s %s" % (report, digest))
        body = ("\n".join(lines) + "\n").encode()
        frame = b"clover-session %d\n" % len(body) + body
        try:
            # Whole, in as many writes as it takes: the host reads as the run goes.
            while frame:
                frame = frame[os.write(_channel, frame) :]
        finally:
            os.close(_channel)
            _channel = None
    return result
