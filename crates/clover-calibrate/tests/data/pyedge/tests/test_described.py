from a.table import SQUARES, describe, square


class TestDescribed:
    def setup_method(self):
        self.text = describe(SQUARES)

    def test_text(self):
        assert self.text == "3 keys, 0 to 2"


def test_square_again():
    assert square(1) == 1
