import os
import signal

from a.util import shout


def test_ends_its_process():
    os._exit(3)


def test_kills_its_process():
    os.kill(os.getpid(), signal.SIGKILL)


def test_shout_after():
    assert shout("x") == "X"
