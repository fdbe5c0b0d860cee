from a.biggest import biggest


def test_biggest():
    assert biggest(2, 1) == 2
    assert biggest(1, 2) == 2
