from a.util import shout
from b.util import triple


def test_triple():
    assert triple(2) == 6


def test_shout():
    assert shout("hi") == "HI"
