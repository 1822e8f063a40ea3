"""The Source Code pane keeps the start of every line in view (synthetic dumps, no
TensorFlow): an expression past the pane's right edge is brought into view in its own
line, after that line's start and a `…`; only one wider than the pane scrolls the code
sideways, and then every row starts with `…`."""

from __future__ import annotations

import numpy as np

from instrument.dump.writer import DumpWriter
from reader import format as fmt
from tests.synthetic import FINITE, FLOAT32, NEG_INF
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.panes.source_code import SourceCodeView

SOURCE = [
    "import tensorflow as tf",
    "",
    "",
    "class Trainer:",
    "    def __init__(self, model):",
    "        self.model = model",
    "",
    "    @tf.function",
    "    def train_step(self, xb, yb):",
    "        probabilities = tf.nn.softmax(self.model(xb, training=True))",
    "        per_example_loss = -tf.reduce_sum(yb * tf.math.log(probabilities), axis=-1)",
    "        return tf.reduce_mean(per_example_loss)",
    "",
    "    def clipped_step(self, xb, yb):",
    "        return -tf.reduce_sum(yb * tf.math.log(tf.clip_by_value(tf.nn.softmax("
    "self.model(xb, training=True)), 1e-30, 1.0)), axis=-1)",
]
# The marked lines and their expressions: one that fits in the pane, at 110 columns,
# though it ends past its edge; one wider than the pane.
FITS, WIDE = 11, 15
EXPRESSIONS = {
    FITS: "tf.math.log(probabilities)",
    WIDE: "tf.math.log(tf.clip_by_value(tf.nn.softmax(self.model(xb, training=True)), 1e-30, 1.0))",
}


def _write_run(logdir, line: int) -> None:
    """A closed run whose first -inf is a Log made at ``line`` of `SOURCE`."""
    writer = DumpWriter(
        str(logdir),
        {"tensor_debug_mode": fmt.FULL_HEALTH, "argv": ["trainer.py"], "tf_version": "2.21.0"},
        circular_buffer_size=-1,
        flush_interval_s=None,
    )
    source = writer.add_source_file("/home/me/project/trainer.py", SOURCE, library=False)
    column = SOURCE[line - 1].index(EXPRESSIONS[line])
    frame = writer.add_frame(
        source, line, "train_step", (column, line, column + len(EXPRESSIONS[line]))
    )
    stack = writer.add_stack([writer.add_frame(source, 1, "<module>"), frame])
    graph = writer.add_graph("train_step", None, function_name="__inference_train_step_7")
    writer.add_op(
        graph_id=graph,
        op_type="Placeholder",
        op_name="probabilities",
        inputs=[],
        num_outputs=1,
        output_dtypes=[FLOAT32],
        device_id=None,
        stack_id=stack,
        trace_points=[0],
    )
    writer.add_op(
        graph_id=graph,
        op_type="Log",
        op_name="Log",
        inputs=["probabilities:0"],
        num_outputs=1,
        output_dtypes=[FLOAT32],
        device_id=None,
        stack_id=stack,
        trace_points=[1],
    )
    for rows in ([FINITE, FINITE], [FINITE, NEG_INF]):
        writer.add_traces(np.arange(2, dtype=np.int32), summaries=np.array(rows, dtype=np.float64))
        writer.add_execution(
            op_type="__inference_train_step_7",
            graph_id=graph,
            input_ids=[],
            output_ids=[],
            device_ids=[],
            output_dtypes=[],
            stack_id=stack,
        )
    writer.close()


def _source_rows(app) -> list[str]:
    """The Source Code pane's rows as shown (right of the layout's divider)."""
    view = app.screen.query_one(SourceCodeView)
    region = view.scrollable_content_region
    return [
        line[region.x : region.x + region.width]
        for line in screen_text(app).splitlines()[region.y : region.y + region.height]
    ]


async def test_an_expression_past_the_edge_shows_after_its_line_start(tmp_path):
    """At 110 columns `tf.math.log(probabilities)` ends past the pane's edge. The code
    was scrolled sideways to it, and every line lost its start ("n_step(self, xb,
    yb):"). Now each line shows from its first column; the marked one keeps its
    start, then `…` and the whole expression."""
    _write_run(tmp_path, FITS)
    async with hunted_app(tmp_path, (110, 30)) as (app, pilot):
        view = app.screen.query_one(SourceCodeView)
        await wait_for(pilot, lambda: view.view.line == FITS, what="the marked line")
        rows = _source_rows(app)
        assert any(row.startswith("  9     def train_step(self, xb, yb):") for row in rows), rows
        assert any(row.startswith(" 12         return tf.reduce_mean(") for row in rows), rows
        marked = next(row for row in rows if row.startswith("▶"))
        assert marked.startswith("▶11         per_exam…")
        assert f"…{EXPRESSIONS[FITS]}" in marked
        assert view.sideways_offset == 0


async def test_an_expression_wider_than_the_pane_scrolls_every_line_and_says_so(tmp_path):
    """An expression wider than the pane: the code is scrolled to its start, and every
    row (the marked one too) starts with `…`, so a cut line start never looks whole."""
    _write_run(tmp_path, WIDE)
    async with hunted_app(tmp_path, (110, 30)) as (app, pilot):
        view = app.screen.query_one(SourceCodeView)
        await wait_for(pilot, lambda: view.view.line == WIDE, what="the marked line")
        await wait_for(pilot, lambda: view.sideways_offset > 0, what="the scroll")
        rows = [row for row in _source_rows(app) if row.strip()]
        for row in rows:
            code = row[4:]  # after the "▶15 " gutter
            assert code.startswith("…") or not code.strip(), rows
        marked = next(row for row in rows if row.startswith("▶"))
        assert marked.startswith("▶15 …tf.math.log(tf.clip_by_value(")
