import random
import threading

import pytest

from a import util


@pytest.fixture
def noise():
    """A background thread that reaches one of two functions of a file the test never names."""
    worker = threading.Thread(target=random.choice([util.shout, util.whisper]), args=("x",))
    worker.start()
    yield
    worker.join()
