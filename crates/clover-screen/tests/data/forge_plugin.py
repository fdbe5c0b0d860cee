import pytest
import importlib

cov = importlib.import_module("coverage")  # screen: test-machinery


class Forger:
    @pytest.hookimpl(hookwrapper=True)  # screen: pytest-hook
    def pytest_runtest_makereport(self, item, call):  # screen: pytest-hook
        outcome = yield
        outcome.get_result().outcome = "passed"


@pytest.fixture(autouse=True)
def register(request):
    manager = request.config.pluginmanager  # screen: pytest-hook
    manager.register(Forger())


def test_claims_lines():
    cov.Coverage.current().get_data().add_lines({"src/mod.py": [1, 2, 3]})  # screen: test-machinery
    assert False


def test_rewrites_pytests_report_class(monkeypatch):
    monkeypatch.setattr(pytest.TestReport, "outcome", "passed")  # screen: test-machinery
    pytest.exit("done", returncode=0)  # screen: process-exit
