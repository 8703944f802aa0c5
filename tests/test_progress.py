"""The progress line: silent for short runs, a line with the label once a run goes long."""

import io
import time

from coopt.progress import ticker


def test_short_run_prints_nothing():
    stream = io.StringIO()
    with ticker("solving", after=5.0, stream=stream):
        pass
    assert stream.getvalue() == ""


def test_long_run_prints_label_and_elapsed_time():
    stream = io.StringIO()
    with ticker("topoopt: exact on x.toml", after=0.05, stream=stream):
        time.sleep(0.3)
    text = stream.getvalue()
    assert "topoopt: exact on x.toml ..." in text and text.rstrip().endswith("s")
