"""Snapshots of each pane, at 80x24 (the pane zoomed with `z`) and at 160x48 (the
whole screen, that pane focused). The dump is synthetic with a fixed run id, so
nothing in the pictures depends on the time or the machine.

Update with `pytest tests/tui/test_tui_snapshots.py --snapshot-update` and review the
SVGs: each test's docstring says what the pictures must show.
"""

from __future__ import annotations

import pytest

from tests.synthetic import write_nan_dump
from tests.tui.tui_helpers import make_app, wait_for, wait_for_hunt, wait_for_workers

RUN_ID = "20231114T221320-snapshot-4242-abcdef"
SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])


@pytest.fixture
def snapshot_logdir(tmp_path):
    write_nan_dump(tmp_path, run_id=RUN_ID)
    return tmp_path


def settle_then(*keys: str):
    """A `run_before` that waits for the hunt and the workers, presses `keys`, waits."""

    async def run_before(pilot) -> None:
        await wait_for_hunt(pilot)
        await wait_for(
            pilot,
            lambda: pilot.app.screen.query_one("#source-code").view.line == 8,
            what="the Log line",
        )
        await wait_for_workers(pilot)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
            await wait_for_workers(pilot)
            await pilot.pause()

    return run_before


def test_landing_at_80x24(snap_compare, snapshot_logdir):
    """The screen on opening, no key pressed, at 80x24: under the status line the
    diagnosis " log of ≤0 " and "`tf.math.log(probs)` got 1 exact zero among 1,000
    values…", ending in "e: more"; Graph Execution on row 9 Log:0; Graph Structure
    ending with Log:0's history row "·██ Log:0 finite for…"; Stack Trace on
    train_model.py:8; Source Code's lines from their first column, line 8 marked:
    its start "    log_pr", a grey "…", then the culprit expression
    `tf.math.log(probs)` whole, on a red band."""
    assert snap_compare(make_app(snapshot_logdir), terminal_size=(80, 24), run_before=settle_then())


def keys_for(pane_key: str, size: tuple[int, int]) -> tuple[str, ...]:
    return (pane_key, "z") if size == (80, 24) else (pane_key,)


@SIZES
def test_alerts_pane(snap_compare, snapshot_logdir, size):
    """Alerts: the heading "8 alerts: -inf 4  +inf 4", then "first non-finite value
    at step 1  steps 0-2 ·██" (alerts per step: none in step 0, as many in steps 1 and
    2), then the alerts in execution order starting with "-inf graph #9 Log Log:0
    step 1 -inf 1" (steps are calls of train_step, counted from 0); the cursor on it."""
    assert snap_compare(
        make_app(snapshot_logdir), terminal_size=size, run_before=settle_then(*keys_for("1", size))
    )


@SIZES
def test_timeline_pane(snap_compare, snapshot_logdir, size):
    """Timeline: six cells "RtRtRt", the function calls (t) reversed, the call of
    step 1 (#3, red: its output holds +inf) under the cursor, because the selected
    trace ran in it; below, its detail: "#3 __inference_train_step_42 function call
    of graph train_step", "out 0: +inf:1 ...", "in 0: from #2 RandomUniform:0"."""
    assert snap_compare(
        make_app(snapshot_logdir), terminal_size=size, run_before=settle_then(*keys_for("2", size))
    )


@SIZES
def test_graph_execution_pane(snap_compare, snapshot_logdir, size):
    """Graph Execution: a header row, 18 traces; row 9 Log:0 under the cursor with a red
    "1" in -inf, rows 10 and 11 red too; row 8 (Softmax:0, Log's input) highlighted
    green. At 80x24 zoomed, every summary column shows; at 160 wide, all of them."""
    assert snap_compare(
        make_app(snapshot_logdir), terminal_size=size, run_before=settle_then(*keys_for("3", size))
    )


@SIZES
def test_graph_structure_pane(snap_compare, snapshot_logdir, size):
    """Graph Structure: "inputs (1)", "← Softmax Softmax:0 #8 ..." under the cursor,
    "● Log Log:0 in train_step" in bold; the history rows "·██ Log:0 finite for
    step 0, first non-finite at step 1 (#9), and in the 1 trace after" (the █ red) and
    "··· Softmax:0 finite in all 3 traces (steps 0-2)"; "consumers (1)", "→ Mul mul
    (input 1) #10"."""
    assert snap_compare(
        make_app(snapshot_logdir), terminal_size=size, run_before=settle_then(*keys_for("4", size))
    )


@SIZES
def test_source_code_pane(snap_compare, snapshot_logdir, size):
    """Source Code: train_model.py highlighted with line numbers, line 8
    (log_probs = tf.math.log(probs)) marked with ▶ and a band, the expression
    `tf.math.log(probs)` on it in red and underlined; zoomed at 80x24 the lines show
    from their first column. The title says "train_model.py:8 (snapshot)"."""
    assert snap_compare(
        make_app(snapshot_logdir), terminal_size=size, run_before=settle_then(*keys_for("5", size))
    )


@SIZES
def test_stack_trace_pane(snap_compare, snapshot_logdir, size):
    """Stack Trace: three frames, outermost first; the two user frames (▸, bright)
    stand out from the dim library frame math_ops.py:120 and show their expressions
    before their functions (`train_step(x, labels)`, `tf.math.log(probs)`); the cursor
    on train_model.py:8 train_step."""
    assert snap_compare(
        make_app(snapshot_logdir), terminal_size=size, run_before=settle_then(*keys_for("6", size))
    )
