"""A run whose recording stopped on a write error (a full disk) says so in the status
line, also at 80 columns, and is not followed any more."""

from __future__ import annotations

import errno
import os

import pytest

from reader.run import liveness
from tests.synthetic import write_nan_dump
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for


@pytest.fixture
def stopped_logdir(tmp_path, monkeypatch):
    dump = write_nan_dump(tmp_path, finished=False)

    def full_disk(fd, buffers):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, "writev", full_disk)
        dump.add_step(3)
        dump.flush()
    dump.close()
    return tmp_path


@pytest.mark.parametrize(
    "size, label",
    [((80, 24), " STOPPED: write error "), ((200, 40), " RECORDING STOPPED (write error) ")],
    ids=["80x24", "200x40"],
)
async def test_the_status_line_says_recording_stopped(stopped_logdir, size, label):
    async with hunted_app(stopped_logdir, size) as (app, pilot):
        await wait_for(
            pilot, lambda: label in screen_text(app).splitlines()[0], what="the stopped label"
        )
        assert len(screen_text(app).splitlines()[0].rstrip()) <= size[0]
        assert app.screen.run_state == liveness.STOPPED and not app.screen.live
