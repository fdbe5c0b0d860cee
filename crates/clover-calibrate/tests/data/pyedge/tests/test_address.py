from b.util import double


class Box:
    pass


def test_box_is_none():
    assert double(1) == 2
    assert Box() is None
