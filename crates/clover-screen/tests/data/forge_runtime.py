import sys as s
import gc
import threading
import builtins as b
from inspect import currentframe as here  # screen: frame-access


def test_reaches_the_runner():
    frame = s._getframe(1)  # screen: frame-access
    caller = here().f_back  # screen: frame-access
    caller.f_locals["outcome"] = "passed"  # screen: frame-access
    s.settrace(lambda *a: None)  # screen: tracing
    threading.settrace(lambda *a: None)  # screen: tracing
    reports = [o for o in gc.get_referrers(frame)]  # screen: gc-introspection
    b.print = lambda *a, **k: None  # screen: builtins-write
    setattr(b, "len", lambda x: 0)  # screen: builtins-write
    code = "asse" + "rt True"
    exec(code)  # screen: dynamic-code
    ctypes = __import__("ctypes")  # screen: ctypes
    assert reports
