"""clover's session record, loaded with `-p _clover_report` into every pytest run.

When the session ends, after pytest's JUnit writer has written its report, this plugin
writes `session.txt` beside the report: pytest's own exit status, the tests it saw by
outcome (from its own report hooks, which run before anyone else's), the tests that started
and never finished, and the SHA-256 of the report's bytes. The host accepts a report only
when the record exists and agrees with the report and the process's exit code: a report
written by hand before `os._exit`, or rewritten by an `atexit` handler, does not.

A test runs in this same process and could forge this record too; the static screen
(clover-screen) rejects the constructs that would (`os._exit`, `atexit`, writes to the
report folder, reaching the plugin manager).
"""

import hashlib
import os

import pytest

# A test's outcome is the highest of its phases' in this order, the order in which clover
# reads a JUnit case (a failing call and a failing teardown, two cases of one name, are read
# as one failed test).
_RANK = {"passed": 0, "skipped": 1, "error": 2, "failed": 3}

_outcomes = {}
_started = set()
_finished = set()


def _see(nodeid, outcome):
    if _RANK[outcome] >= _RANK[_outcomes.get(nodeid, "passed")]:
        _outcomes[nodeid] = outcome


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid):
    _started.add(nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
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


def pytest_internalerror():
    _see("internal", "error")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    # The outermost wrapper: everything else's session end, the JUnit writer's included,
    # has run when the yield returns. A session end that raised writes no record.
    result = yield
    xml = session.config.option.xmlpath
    if xml:
        xml = os.path.join(str(session.config.invocation_params.dir), xml)
        try:
            with open(xml, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            digest = "none"
        counts = {k: 0 for k in _RANK}
        for outcome in _outcomes.values():
            counts[outcome] += 1
        lines = [
            "exitstatus %d" % int(session.exitstatus),
            "junit_sha256 %s" % digest,
            *("%s %d" % (k, counts[k]) for k in _RANK),
            "unfinished %d" % len(_started - _finished),
        ]
        with open(os.path.join(os.path.dirname(xml), "session.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return result
