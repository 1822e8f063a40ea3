"""The TUI on a dump written by TensorFlow's own dumper: it opens on the root cause,
like on ours."""

from __future__ import annotations

import os

from tests.tui.tui_helpers import hunted_app, screen_text
from tfdbg_tui.panes.source_code import SourceCodeView


async def test_opens_a_tensorflow_dump_on_its_root_cause(tf_written):
    logdir = os.path.join(tf_written, "FULL_HEALTH")
    async with hunted_app(logdir, size=(100, 30)) as (app, pilot):
        cause = app.screen.root_cause
        assert cause.op.name == "Log" and cause.op.op_type == "Log"
        assert app.screen.query_one(SourceCodeView).view.line == cause.frame.line
        await pilot.pause()
        text = screen_text(app)
        assert "tf.math.log(p)" in text
        assert "TensorFlow dump" in text
