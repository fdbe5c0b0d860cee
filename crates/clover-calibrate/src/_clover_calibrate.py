"""clover calibrate's pytest plugin: per-test coverage contexts, and their report.

Loaded with `-p _clover_calibrate` (its folder on PYTHONPATH) into the pytest process that
pytest-cov measures, so the report needs no second interpreter. It does four things:

* It keeps coverage.py measuring while pytest loads conftests and collects, in the empty
  context. Whatever runs then (module level, class bodies, decorators, and the bodies of
  functions they call: a table built at import, a registration helper) runs in any process
  that imports the same modules, as sandbox-run's run of a candidate does, `assert True`
  included: calibrate keeps those lines out of unique blocks and target bodies, and needs
  them measured as sandbox-run measures them. Collecting under the tracer costs CPU: about a
  fifth more for toolz's itertoolz group, run cold.
* At the start of each test's setup it switches coverage.py's dynamic context to
  `<node id>|test`, so that the test's setup, call and teardown are one context. pytest-cov's
  `--cov-context=test` switches three times per test (`|setup`, `|run`, `|teardown`), and
  every switch flushes the collected lines into the SQLite data; calibrate folds the phases
  anyway. Lines run before the first test (imports, collection) stay in the empty context.
* At session end, after pytest-cov has stopped coverage and saved its data, it reads the data
  back through coverage.py's public API and writes `CLOVER_CONTEXTS_OUT`:
  `{"files": {FILE: {"executable": [LINE...], "contexts": {CONTEXT: [LINE...]}}}}`, for the
  measured files that are not test files and that some test context touched (calibrate keeps
  nothing else), each context named once per file; the empty context `""` holds what ran
  before the first test.
* It lets the empty test (`def test_clover_empty(self, **parameters)`) collect under a
  class-level or module-level `parametrize`, by showing pytest the parameters' names as its
  signature; pytest refuses a test that takes none of an enclosing mark's arguments.

Coverage is configured by calibrate's own settings file (`--cov-config`, the one sandbox-run
uses), which names files by their path from the repository root.

A failure here never changes the tests' outcome: it is written to stderr and the report is
left unwritten, which calibrate reports as a missing coverage report.
"""

import inspect
import json
import os
import sys

import coverage
import pytest

# Absolute now: a test may change the working directory and not change it back.
_ROOT = os.getcwd()
_OUT = os.path.abspath(os.environ.get("CLOVER_CONTEXTS_OUT", "coverage-contexts.json"))

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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(item.nodeid + "|test")


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
        files = {}
        for name in sorted(data.measured_files()):
            if _is_test_file(name):
                continue
            by_context = {}
            for line, contexts in data.contexts_by_lineno(name).items():
                for context in contexts:
                    by_context.setdefault(context, []).append(line)
            if not any(by_context):
                continue
            try:
                statements = cov.analysis2(name)[1]
            except Exception:
                continue  # the source is gone or is not Python
            files[name] = {
                "executable": sorted(statements),
                "contexts": {c: sorted(lines) for c, lines in sorted(by_context.items())},
            }
        with open(_OUT, "w") as out:
            json.dump({"files": files}, out)
    except Exception as e:  # noqa: BLE001 - reported, never raised into pytest
        print(f"clover calibrate: cannot write {_OUT}: {e!r}", file=sys.stderr)
    finally:
        os.chdir(cwd)
