from shop.price import floor_at_zero


def test_floor():
    assert floor_at_zero(-5) == 0
    assert floor_at_zero(7) == 7
