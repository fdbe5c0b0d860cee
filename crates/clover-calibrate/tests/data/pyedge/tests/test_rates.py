import pytest

from a.rates import convert

SEEN = []


@pytest.fixture(scope="module")
def opened():
    SEEN.append("opened")
    yield SEEN
    SEEN.remove("opened")


def test_convert_eur(opened):
    assert convert(2, "eur") == 4


def test_convert_usd(opened):
    assert opened == ["opened"]
    assert convert(2, "usd") == 6
