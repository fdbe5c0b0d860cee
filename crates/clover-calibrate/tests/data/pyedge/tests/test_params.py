import pytest

from b.util import double, triple


def test_double_plain():
    assert double(3) == 6


@pytest.mark.parametrize("n", [1, 2])
class TestTriple:
    def test_triple(self, n):
        assert triple(n) == 3 * n

    def test_double(self, n):
        assert double(n) == 2 * n
