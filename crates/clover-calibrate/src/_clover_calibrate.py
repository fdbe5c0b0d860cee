"""clover calibrate's pytest plugin: per-test coverage contexts, and their report.

Loaded with `-p _clover_calibrate` (its folder on PYTHONPATH) into the pytest process that
pytest-cov measures, so the report needs no second interpreter. It does five things:

* It keeps coverage.py measuring while pytest loads conftests and collects, in the empty
  context. Whatever runs then (module level, class bodies, decorators, and the bodies of
  functions they call: a table built at import, a registration helper) runs in any process
  that imports the same modules, as sandbox-run's run of a candidate does, `assert True`
  included: calibrate keeps those lines out of unique blocks and target bodies, and needs
  them measured as sandbox-run measures them. Collecting under the tracer costs CPU: about a
  fifth more for toolz's itertoolz group, run cold.
* At the start of each test's setup it starts a new context, `<node id>|test`, so that the
  test's setup, call and teardown are one context. Lines run before the first test (imports,
  collection) are in the empty context. A context switch of coverage.py
  (`Coverage.switch_context`, what pytest-cov's `--cov-context=test` does three times a test)
  flushes the collected lines into the SQLite data: about 5 ms a test on flask's suite, half
  again the suite's own run. So the plugin takes the lines out of coverage.py's collector
  itself, into memory, at each switch: the same lines under the same contexts. Where the
  collector is not the one it knows (another coverage.py, branch measurement), it switches
  coverage.py's context instead.
* At session end, after pytest-cov has stopped coverage and saved its data, it reads the data
  back through coverage.py's public API, adds what it took in memory, and writes
  `CLOVER_CONTEXTS_OUT`: `{"files": {FILE: {"stat": [SIZE, MTIME_NS], "executable": [LINE...],
  "contexts": {CONTEXT: [LINE...]}}}, "contexts": "taken" | "switched"}`, for the measured files that are not test files and
  that some test context touched (calibrate keeps nothing else), each context named once per
  file; the empty context `""` holds what ran before the first test. A file's executable
  lines come from parsing it (`Coverage.analysis2`, about 25 ms a file of flask): they are
  left out for the files `CLOVER_KNOWN_STATEMENTS` (a JSON file, `{FILE: [SIZE, MTIME_NS]}`)
  names with the size and time of change the file still has, whose lines calibrate has from
  an earlier run of the same repository.
* It runs each test in a child forked from the process that collected them
  (`pytest_runtest_protocol`): the test starts from the state of a process that collected the
  same files and ran no test, whatever the tests before it initialised or cached, as one
  pytest run per test starts it, and its fixtures, up to the session's, are set up and torn
  down in the child. The child sends its reports and lines back; a test that ends its process
  is an error of that test alone. Where the lines cannot be taken (see above) or another
  plugin runs the test protocol, the tests share the process instead.
* It lets the empty test (`def test_clover_empty(self, **parameters)`) collect under a
  class-level or module-level `parametrize`, by showing pytest the parameters' names as its
  signature; pytest refuses a test that takes none of an enclosing mark's arguments.

Coverage is configured by calibrate's own settings file (`--cov-config`, the one sandbox-run
uses), which names files by their path from the repository root.

A failure here never changes the tests' outcome: it is written to stderr and the report is
left unwritten, which calibrate reports as a missing coverage report.
"""

import gc
import inspect
import json
import os
import pickle
import sys

import coverage
import pytest

# Absolute now: a test may change the working directory and not change it back.
_ROOT = os.getcwd()
_OUT = os.path.abspath(os.environ.get("CLOVER_CONTEXTS_OUT", "coverage-contexts.json"))
_KNOWN = os.environ.get("CLOVER_KNOWN_STATEMENTS")
if _KNOWN:
    _KNOWN = os.path.abspath(_KNOWN)

# The context lines are gathered for now, and the lines taken out of the collector so far:
# {context: {file: set of lines}}. `_taking` is False once the collector turned out not to be
# one whose lines the plugin can take; coverage.py's contexts are switched then.
_context = ""
_taken = {}
_taking = True

# Files calibrate never keeps (its own problem files, tests, conftest files); leaving them out
# here saves parsing them for their executable lines.
_TEST_PREFIXES = ("tmp_test_", "tmp_empty_", "test_")


def _is_test_file(path):
    name = os.path.basename(path)
    return name.startswith(_TEST_PREFIXES) or name.endswith("_test.py") or name == "conftest.py"


# The empty test calibrate writes in place of a problem's test: `def test_clover_empty(self,
# **parameters)`.
_EMPTY_TEST = "test_clover_empty"


def _parametrized_names(collector):
    """The argument names of the `parametrize` marks of `collector` and the nodes above it."""
    names = []
    for mark in collector.iter_markers(name="parametrize"):
        argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(argnames, str):
            argnames = [n.strip() for n in argnames.split(",") if n.strip()]
        names.extend(n for n in argnames if n not in names)
    return names


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """Shows pytest the empty test as taking the arguments of an enclosing `parametrize`.

    A class-level (or module `pytestmark`) `parametrize` applies to every test under it, and
    pytest refuses to collect one that takes none of its arguments ("function uses no argument
    'x'"). The empty test takes them through `**parameters`, which pytest does not read, so its
    signature names them.
    """
    if name != _EMPTY_TEST or not callable(obj):
        return None
    names = _parametrized_names(collector)
    if names:
        signature = inspect.signature(obj)
        kept = [
            p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        kept += [
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY)
            for n in names
            if n not in signature.parameters
        ]
        obj.__signature__ = signature.replace(parameters=kept)
    return None


def _take(cov):
    """Moves the lines coverage.py's collector holds into `_taken`, under `_context`, and
    clears them there as its own flush does (`Collector._clear_data`). False when the
    collector is not a line collector of the shape this knows: a dict of sets of line numbers
    per file, behind a lock when tracers run in threads."""
    collector = getattr(cov, "_collector", None)
    data = getattr(collector, "data", None)
    clear = getattr(collector, "_clear_data", None)
    mapped = getattr(collector, "cached_mapped_file", None)
    if (
        not isinstance(data, dict)
        or getattr(collector, "branch", True)
        or clear is None
        or mapped is None
    ):
        return False
    into = _taken.setdefault(_context, {})
    took = False
    lock = getattr(collector, "data_lock", None)
    if lock is not None:
        lock.acquire()
    try:
        for name, lines in list(data.items()):
            if not isinstance(lines, set):
                return False
            if lines:
                into.setdefault(mapped(name), set()).update(lines)
                took = True
    finally:
        if lock is not None:
            lock.release()
    clear()
    if took:
        # The saved data may now hold no line: coverage.py would warn that it collected
        # none, which a suite's `filterwarnings = error` makes an error of the run.
        cov._warn_no_data = False
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    global _context, _taking
    cov = coverage.Coverage.current()
    if cov is None:
        return
    context = item.nodeid + "|test"
    if _taking:
        _taking = _take(cov)
        if _taking:
            _context = context
            return
    cov.switch_context(context)


# Whether each test runs in a child forked from the process that collected them (decided at
# the first test: `_forks_tests`).
_forking = None


def _forks_tests(item):
    """Whether tests run in forks: the lines can be taken from the collector (the child's
    lines come back as data, not through coverage.py's database) and nothing but pytest
    itself runs a test's protocol (a plugin that does, `pytest-rerunfailures` say, runs it
    its own way)."""
    global _forking, _taking
    if _forking is not None:
        return _forking
    _forking = False
    cov = coverage.Coverage.current()
    if cov is None or not hasattr(os, "fork") or not _taking:
        return False
    for impl in item.config.hook.pytest_runtest_protocol.get_hookimpls():
        wraps = getattr(impl, "hookwrapper", False) or getattr(impl, "wrapper", False)
        module = getattr(impl.plugin, "__name__", "") or type(impl.plugin).__module__
        if not wraps and impl.plugin is not sys.modules[__name__] and not (
            module == "_pytest" or module.startswith("_pytest.")
        ):
            return False
    # What collection ran is the empty context's, here as in a run without forks.
    _taking = _take(cov)
    _forking = _taking
    if _forking:
        # What collection made stays as it is in every child: a collection there would
        # otherwise touch, and so copy, every page of it.
        gc.collect()
        gc.freeze()
    return _forking


def _crash_reports(item, message):
    """The reports of a test whose child died before it said how the test went: an error of
    its setup (the process, not an assertion, failed), and a teardown that closes it."""
    from _pytest.reports import TestReport

    keywords = {k: 1 for k in item.keywords}
    return [
        TestReport(item.nodeid, item.location, keywords, "failed", message, "setup"),
        TestReport(item.nodeid, item.location, keywords, "passed", None, "teardown"),
    ]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Runs the test in a child forked from this process, which has collected every test and
    run none: each test starts from the state a process that collected the same files starts
    it from, whatever the tests before it initialised or cached, and its setup, call and
    teardown (every fixture's, up to the session's, torn down with it) are its context's. The
    child sends back its reports and its lines; the reports are logged here, as pytest logs
    its own. The hook wrappers around this one (warnings filters, logging) are set up here
    before the fork, so the child runs under them."""
    if not _forks_tests(item):
        return None
    config = item.config
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    out = os.memfd_create("clover-test")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _run_in_child(item, out)
    _, wait = os.waitpid(pid, 0)
    # (`os.waitstatus_to_exitcode` is Python 3.9's.)
    code = -os.WTERMSIG(wait) if os.WIFSIGNALED(wait) else os.WEXITSTATUS(wait)
    with os.fdopen(out, "rb") as f:
        f.seek(0)
        try:
            sent = pickle.load(f)
        except Exception:  # noqa: BLE001 - the child died before it wrote
            sent = None
    if code == 0 and isinstance(sent, tuple):
        sent, lines = sent
        reports = [config.hook.pytest_report_from_serializable(config=config, data=d) for d in sent]
        for context, by_file in lines.items():
            into = _taken.setdefault(context, {})
            for name, ls in by_file.items():
                into.setdefault(name, set()).update(ls)
    else:
        died = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        why = f": {sent}" if isinstance(sent, str) else ""
        reports = _crash_reports(item, f"the test's process {died}{why}")
    for report in reports:
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _run_in_child(item, out):
    """The child's part: runs `item` (its fixtures torn down after it, whatever their scope),
    writes its reports and lines to the file `out` and exits, never returning into pytest."""
    global _taken, _context
    from _pytest.runner import runtestprotocol

    status = 70
    # What the parent measured stays referenced: freeing it here would write to (and so copy)
    # every page it is on.
    parent = (_taken, _context)  # noqa: F841
    try:
        config = item.config
        cov = coverage.Coverage.current()
        cov._collector._clear_data()
        _taken, _context = {}, ""
        reports = runtestprotocol(item, log=False, nextitem=None)
        if not _take(cov):
            raise RuntimeError("coverage.py's collector changed while the test ran")
        lines = {c: {f: sorted(ls) for f, ls in t.items()} for c, t in _taken.items() if c}
        sent = [config.hook.pytest_report_to_serializable(config=config, report=r) for r in reports]
        with os.fdopen(out, "wb", closefd=False) as f:
            pickle.dump((sent, lines), f)
        status = 0
    except BaseException as e:  # noqa: BLE001 - the parent reports it as the test's error
        try:
            with os.fdopen(out, "wb", closefd=False) as f:
                f.seek(0)
                f.truncate()
                pickle.dump(repr(e), f)
        except BaseException:  # noqa: BLE001
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    cwd = os.getcwd()
    try:
        os.chdir(_ROOT)
        # The settings pytest-cov measured with (calibrate's own file, which names files
        # from the repository root), not whatever the repository keeps.
        config = getattr(session.config.option, "cov_config", None) or True
        cov = coverage.Coverage(data_file=os.environ["COVERAGE_FILE"], config_file=config)
        cov.load()
        data = cov.get_data()
        known = {}
        if _KNOWN:
            with open(_KNOWN) as f:
                known = json.load(f)
        # What the saved data holds in the empty context ran after the last switch when the
        # plugin took the lines itself: coverage.py's own context never changed.
        saved_empty = _context if _taking else ""
        by_file = {}
        for context, taken in _taken.items():
            for name, lines in taken.items():
                by_file.setdefault(name, {}).setdefault(context, set()).update(lines)
        for name in data.measured_files():
            by_context = by_file.setdefault(name, {})
            for line, contexts in data.contexts_by_lineno(name).items():
                for context in contexts:
                    by_context.setdefault(context or saved_empty, set()).add(line)
        files = {}
        for name in sorted(by_file):
            by_context = by_file[name]
            # (A file only the empty context touched is nobody's.)
            if _is_test_file(name) or not any(c for c, lines in by_context.items() if lines):
                continue
            try:
                st = os.stat(name)
            except OSError:
                continue  # the source is gone
            stat = [st.st_size, st.st_mtime_ns]
            entry = {"stat": stat}
            if known.get(name) != stat:
                try:
                    entry["executable"] = sorted(cov.analysis2(name)[1])
                except Exception:
                    continue  # the source is not Python
            entry["contexts"] = {c: sorted(lines) for c, lines in sorted(by_context.items())}
            files[name] = entry
        with open(_OUT, "w") as out:
            # How the contexts were kept apart: lines taken from the collector, or coverage.py's
            # own context switches.
            json.dump({"files": files, "contexts": "taken" if _taking else "switched"}, out)
    except Exception as e:  # noqa: BLE001 - reported, never raised into pytest
        print(f"clover calibrate: cannot write {_OUT}: {e!r}", file=sys.stderr)
    finally:
        os.chdir(cwd)
