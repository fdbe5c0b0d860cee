from a.table import build_table, square


def test_build_table_with_extra():
    assert build_table(2, {"x": 1}) == {0: 0, 1: 1, "total": 1, "x": 1}


def test_square():
    assert square(2) == 4
