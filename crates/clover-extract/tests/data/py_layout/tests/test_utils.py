from falcon._utils import slugify


def test_slugify():
    assert slugify("A b") == "a-b"
