"""Fixtures for reader tests; the synthetic dump builders live in `synthetic.py`."""

from __future__ import annotations

import pytest

from tests.reader.synthetic import make_run


@pytest.fixture
def logdir(tmp_path):
    return str(tmp_path / "logdir")


@pytest.fixture
def run(logdir):
    r = make_run(logdir)
    yield r
    r.writer.close()
