import logging


def test_log_line_is_the_message():
    formatter = logging.Formatter("[%(asctime)s] %(message)s")
    record = logging.LogRecord("a", logging.ERROR, __file__, 1, "boom", None, None)
    assert "ERROR boom" in formatter.format(record)
