# Test code as honest suites write it: nothing here may be screened.
import gc
import inspect
import os
import re
import sys
from unittest import mock

import pytest


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("APP_HOME", str(tmp_path))
    monkeypatch.delenv("APP_DEBUG", raising=False)
    return tmp_path


@pytest.fixture(params=["a", "b"])
def letter(request):
    return request.param


@pytest.mark.parametrize(("text", "expected"), [("1", 1), ("22", 22)])
def test_parse(text, expected, workdir, letter):
    path = os.path.join(str(workdir), "in.txt")
    with open(path, "w") as f:
        f.write(text)
    assert int(open(path).read()) == expected
    assert os.environ["APP_HOME"] == str(workdir)
    assert re.compile(r"\d+").match(text)


def test_errors(capsys, caplog):
    with pytest.raises(ValueError, match="bad"):
        raise ValueError("bad")
    with mock.patch("os.getcwd", return_value="/x") as getcwd:
        assert os.getcwd() == "/x"
    getcwd.assert_called_once()
    print("out", file=sys.stderr)
    assert capsys.readouterr().err == "out\n"


def test_introspection_that_is_fine():
    gc.collect()
    assert inspect.isfunction(test_errors)
    assert inspect.signature(test_errors).parameters
    assert eval("1 + 1") == 2


class TestWithSetup:
    def setup_method(self, method):
        self.values = []

    def test_append(self):
        self.values.append(1)
        assert self.values == [1]
