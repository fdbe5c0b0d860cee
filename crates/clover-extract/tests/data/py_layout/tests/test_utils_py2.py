from falcon._utils import slugify


def test_slugify_bytes():
    assert slugify(b"A b") == "a-b"
