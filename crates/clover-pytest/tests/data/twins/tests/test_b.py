from b.util import triple


def test_triple():
    assert triple(2) == 6
