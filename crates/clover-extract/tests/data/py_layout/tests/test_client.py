import pytest


@pytest.fixture(name="db")
def memory_db():
    return {}


@pytest.fixture
def unrelated():
    return 1


def test_client_uses_the_module_db(client):
    assert client["db"] == {}
