import pytest

# pytest never collects these: the legacy suite needs Python 2.
collect_ignore = ["legacy"]
collect_ignore_glob = ["test_*_py2.py"]


@pytest.fixture
def client(db):
    return {"db": db}
