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

A test runs in this same process and could still reach the descriptor and forge the record;
the static screen (clover-screen) rejects the constructs that would (`os._exit`, `atexit`,
importing this plugin, reaching the plugin manager).
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
_channel = None


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
    # has run when the yield returns. A session end that raised sends no record.
    global _channel
    result = yield
    if _channel is not None:
        counts = {k: 0 for k in _RANK}
        for outcome in _outcomes.values():
            counts[outcome] += 1
        lines = [
            "exitstatus %d" % int(session.exitstatus),
            *("%s %d" % (k, counts[k]) for k in _RANK),
            "unfinished %d" % len(_started - _finished),
        ]
        for report in filter(None, os.environ.get("CLOVER_REPORTS", "").split(":")):
            path = os.path.join(str(session.config.invocation_params.dir), report)
            try:
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                digest = "none"
            lines.append("sha256 %s %s" % (report, digest))
        body = ("\n".join(lines) + "\n").encode()
        # One write of less than PIPE_BUF bytes: it reaches the pipe whole or not at all.
        frame = b"clover-session %d\n" % len(body) + body
        try:
            os.write(_channel, frame)
        finally:
            os.close(_channel)
            _channel = None
    return result
