"""Key-to-screen latency in the TUI while a live run appends a large batch.

    python tests/benchmarks/bench_live_update.py     # prints a Markdown table
    pytest -m benchmark tests/benchmarks/bench_live_update.py

A writer process (`DumpWriter`, no TensorFlow) writes a FULL_HEALTH run of
`BASE_TRACES` graph traces (chunks of `BASE_CHUNK`, one function call each, one NaN
every `ALERT_EVERY` traces) and stays alive, so the app follows it. The app runs
headless (Textual's `run_test`) at 120x40 in this process, with Graph Execution
focused. On a signal the writer appends `BATCH_TRACES` more traces in chunks of
`BATCH_CHUNK` (a real run's shape: a function call per step, a hundred traced
tensors each) and writes them to disk at once, so the app's `DumpWatcher` reads the
whole batch in one `update()`.

Meanwhile keys arrive as from a terminal (posted by the driver, one at a time): `.`
(next alert trace, 10,000 rows on: every jump paints rows from a page the reader has
not been asked for), or `home` after the last alert. A key's latency is the time from
posting it to the moment the list renders the cursor's new row (the compositor's
render of the frame that shows the move). Reported: the same keys with no update
running ("idle"), and, over `BATCHES` batches, the keys that waited while `update()`
read a batch (posted before it ended, painted after it began).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
from textual import events

import reader
from reader.run.indexed_run import IndexedRun
from tfdbg_tui.app import DebuggerApp
from tfdbg_tui.panes.graph_execution import GraphExecutionList

BASE_TRACES = 1_000_000
BASE_CHUNK = 1000
BATCH_TRACES = 1_000_000
BATCH_CHUNK = 100
BATCHES = 3
ALERT_EVERY = 10_000
NUM_OPS = 100
TERMINAL = (120, 40)
IDLE_KEYS = 20
# Pause between one key's paint and the next key: a fast typist's key repeat.
KEY_GAP_S = 0.02
KEY_TIMEOUT_S = 30.0
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# -- the writer process -----------------------------------------------------------------


def _write(writer, first: int, count: int, chunk: int, graph: int, stack: int) -> None:
    row = np.array([1, 2, 4096, 0, 0, 0, 1000, 96, 3000], dtype=np.float64)
    for begin in range(first, first + count, chunk):
        indices = np.arange(begin, begin + chunk)
        rows = np.tile(row, (chunk, 1))
        rows[indices % ALERT_EVERY == ALERT_EVERY - 1, 5] = 1  # one NaN
        writer.add_traces((indices % NUM_OPS).astype(np.int32), summaries=rows)
        writer.add_execution(
            op_type="__inference_big_step_1",
            graph_id=graph,
            input_ids=[],
            output_ids=[],
            device_ids=[],
            output_dtypes=[],
            stack_id=stack,
        )


def writer_main(logdir: str) -> None:
    """The writer process: the base run, then "ready"; a batch and "written" for each
    "go" line on stdin; alive (a running process) until stdin closes."""
    from instrument.dump import writer as writer_module
    from reader import format as fmt
    from tests.synthetic import USER_FILE, USER_SOURCE

    # Nothing reaches the disk until `flush()`: the batch lands in one piece.
    writer_module.FLUSH_BYTES = 1 << 40
    writer = writer_module.DumpWriter(
        logdir,
        {"tensor_debug_mode": fmt.FULL_HEALTH, "eager_mode": True},
        circular_buffer_size=-1,
        flush_interval_s=None,
    )
    user = writer.add_source_file(USER_FILE, USER_SOURCE, library=False)
    stack = writer.add_stack([writer.add_frame(user, 6, "train_step")])
    graph = writer.add_graph("big_step", None)
    for op in range(NUM_OPS):
        writer.add_op(
            graph_id=graph,
            op_type="MatMul" if op % 2 else "Relu",
            op_name=f"layer_{op}/op",
            inputs=[f"layer_{op - 1}/op:0"] if op else [],
            num_outputs=1,
            output_dtypes=[1],
            device_id=None,
            stack_id=stack,
            trace_points=[op],
        )
    _write(writer, 0, BASE_TRACES, BASE_CHUNK, graph, stack)
    writer.flush()
    print("ready", flush=True)
    written = BASE_TRACES
    while sys.stdin.readline().strip() == "go":
        _write(writer, written, BATCH_TRACES, BATCH_CHUNK, graph, stack)
        written += BATCH_TRACES
        writer.flush()
        print("written", flush=True)
    writer.close()


# -- the app ----------------------------------------------------------------------------


class Recorder:
    """Times of `update()` calls and of the graph list rendering its cursor row."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, float, int]] = []  # (start, end, new traces)
        self.painted: list[tuple[float, int]] = []  # (time, cursor row)
        self._update = IndexedRun.update
        self._render_line = GraphExecutionList.render_line

    def install(self) -> None:
        recorder = self

        def update(run):
            began = time.perf_counter()
            report = recorder._update(run)
            recorder.updates.append((began, time.perf_counter(), report.new_traces))
            return report

        def render_line(widget, y):
            strip = recorder._render_line(widget, y)
            if widget.scroll_offset.y + y - widget.header_height == widget.cursor:
                recorder.painted.append((time.perf_counter(), widget.cursor))
            return strip

        IndexedRun.update = update  # type: ignore[method-assign]
        GraphExecutionList.render_line = render_line  # type: ignore[method-assign]

    def uninstall(self) -> None:
        IndexedRun.update = self._update  # type: ignore[method-assign]
        GraphExecutionList.render_line = self._render_line  # type: ignore[method-assign]


async def _until(condition, timeout: float = 180.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.005)


async def press(app, graph_list: GraphExecutionList, recorder: Recorder) -> tuple[float, float]:
    """Post one key as a terminal would; (time posted, ms until the move is painted)."""
    rows = graph_list.rows
    assert rows is not None
    current = graph_list.selected_trace
    target = rows.alert_trace("next", current)
    key = "full_stop"
    if target is None or current is None or target <= current:
        key, target = "home", 0
    expected_row = rows.row_of(target)
    seen = len(recorder.painted)
    event = events.Key(key, "." if key == "full_stop" else None)
    event.set_sender(app)
    began = time.perf_counter()
    app._driver.send_message(event)

    def painted() -> bool:
        return any(row == expected_row for _, row in recorder.painted[seen:])

    await _until(painted, KEY_TIMEOUT_S)
    when = next(t for t, row in recorder.painted[seen:] if row == expected_row)
    return began, (when - began) * 1000


async def measure(logdir: str, writer: subprocess.Popen) -> dict[str, float]:
    recorder = Recorder()
    recorder.install()
    results: dict[str, float] = {}
    try:
        app = DebuggerApp(logdir, reader.list_runs(logdir))
        async with app.run_test(size=TERMINAL) as pilot:
            graph_list = app.screen.query_one(GraphExecutionList)
            await _until(lambda: graph_list.row_count >= BASE_TRACES)
            await pilot.press("3")
            await pilot.pause()
            idle = [(await press(app, graph_list, recorder))[1] for _ in range(IDLE_KEYS)]
            results["idle_median_ms"] = statistics.median(idle)
            results["idle_max_ms"] = max(idle)

            assert writer.stdin is not None and writer.stdout is not None
            during: list[float] = []
            window: list[float] = []
            update_ms: list[float] = []
            for batch in range(1, BATCHES + 1):
                sent = time.perf_counter()
                writer.stdin.write("go\n")
                writer.stdin.flush()
                await asyncio.to_thread(writer.stdout.readline)
                keys: list[tuple[float, float]] = []
                while graph_list.row_count < BASE_TRACES + batch * BATCH_TRACES:
                    keys.append(await press(app, graph_list, recorder))
                    await asyncio.sleep(KEY_GAP_S)
                # The update that read most of the batch (the only one, unless a poll
                # met the writer halfway through its write).
                start, end, _ = max(
                    (u for u in recorder.updates if u[0] >= sent), key=lambda u: u[2]
                )
                update_ms.append((end - start) * 1000)
                # Keys waiting on the screen while the update read: posted before it
                # ended, painted after it began.
                during += [
                    ms for posted, ms in keys if posted <= end and posted + ms / 1000 >= start
                ]
                window += [ms for _, ms in keys]
            results["update_median_ms"] = statistics.median(update_ms)
            results["keys_during_update"] = len(during)
            results["during_update_median_ms"] = statistics.median(during) if during else 0.0
            results["during_update_max_ms"] = max(during) if during else 0.0
            results["live_window_median_ms"] = statistics.median(window)
    finally:
        recorder.uninstall()
    return results


def run() -> dict[str, float]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    )
    with tempfile.TemporaryDirectory() as logdir:
        writer = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--write", logdir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert writer.stdout is not None
            if writer.stdout.readline().strip() != "ready":
                raise RuntimeError("the writer process failed")
            return asyncio.run(measure(logdir, writer))
        finally:
            if writer.stdin is not None:
                writer.stdin.close()
            writer.wait(timeout=60)


def markdown(results: dict[str, float]) -> str:
    lines = ["| measure | value |", "| --- | ---: |"]
    for key, value in results.items():
        lines.append(f"| {key} | {value:,.1f} |")
    return "\n".join(lines)


@pytest.mark.benchmark
def test_keys_answer_while_a_big_batch_is_read():
    results = run()
    print("\n" + markdown(results))
    # The reader commits new rows under its lock only briefly: a key waits for the
    # GIL (shared with the reading thread), never for the whole read.
    assert results["keys_during_update"] >= 1
    assert results["during_update_max_ms"] < max(250.0, 0.5 * results["update_median_ms"])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        writer_main(sys.argv[2])
    else:
        print(markdown(run()))
