import pytest

from calc import add, div


def test_add():
    assert add(1, 2) == 3


def test_fails():
    assert add(1, 1) == 3, "odd ]]> message"


@pytest.mark.parametrize("x", ["a[b]", "c]]>d", 1.5])
def test_param(x):
    assert x != "c]]>d"


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert div(1, 0)


@pytest.fixture
def broken_teardown():
    yield 1
    raise RuntimeError("teardown broke")


def test_fail_and_teardown_error(broken_teardown):
    assert broken_teardown == 2


class TestDiv:
    def test_div(self):
        assert div(4, 2) == 2.0

    def test_stdout(self, capsys):
        print("hello <out> & ]]> end")
        assert True
