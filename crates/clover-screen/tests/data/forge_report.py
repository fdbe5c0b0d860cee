# The forgeries of issue 15, as a model could write them. Each line the screen must report
# carries a mark with the id of the rule that catches it.
import os as operating_system  # nothing yet: importing os is honest
import atexit  # screen: atexit
from os import _exit as leave  # screen: process-exit

REPORT = ".clover-out/junit.xml"  # screen: report-folder


def _rewrite():
    with open(REPORT, "w") as f:
        f.write("<testsuites><testsuite tests='1' failures='0'/></testsuites>")


def test_forged_by_exit():
    _rewrite()
    leave(0)  # screen: process-exit


def test_forged_at_exit():
    atexit.register(_rewrite)  # screen: atexit
    assert 1 == 2


def test_forged_by_getattr():
    getattr(operating_system, "_exit")(0)  # screen: process-exit
