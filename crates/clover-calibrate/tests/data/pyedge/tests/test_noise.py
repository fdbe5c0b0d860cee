from a.util import shout, whisper
from b.util import triple


def test_triple_with_noise(noise):
    assert triple(3) == 9


def test_shout_and_whisper():
    assert shout("a") + whisper("B") == "Ab"
