"""TUI latency on dumps of 10k and 1M graph traces: open-to-first-paint, key-to-screen.

    python tests/benchmarks/bench_tui.py            # prints a Markdown table
    pytest -m benchmark tests/benchmarks/bench_tui.py

The dumps are synthetic (`DumpWriter`, no TensorFlow), FULL_HEALTH, 100 ops. The app
runs headless (Textual's `run_test`) at 120x40. "Paint" is a full render of the
screen by the compositor, the work a real terminal update needs.

- first frame: from creating the app until a full paint shows the six panes
  ("opening…"), as seen by Pilot (which adds its own idle waits).
- open-to-first-paint: from creating the app to the moment the Graph Execution pane
  renders its first trace row (the reader opens in a worker; indexing is included).
- key-to-screen (Pilot): from sending a key through Textual's Pilot to the frame
  that shows its effect, median and max over repetitions, for Down, PageDown, End and
  "go to index" (g N Enter, through the prompt). It includes Pilot's own waiting for
  the app to go idle (the selection's worker and the other panes' refresh), so it is
  an upper bound.
- handle-and-paint: the key's action called directly, then a full paint: the time
  the event loop is busy before the terminal can show the moved cursor.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time

import pytest

import reader
from tests.synthetic import write_big_dump
from tests.tui.tui_helpers import screen_text
from tfdbg_tui.app import DebuggerApp
from tfdbg_tui.panes.graph_execution import GraphExecutionList

SIZES = (10_000, 1_000_000)
TERMINAL = (120, 40)
REPEATS = 15


def paint(app) -> str:
    """Render the whole screen, as a terminal update would."""
    return screen_text(app)


async def _until(pilot, condition, timeout: float = 120.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("condition not met")
        await pilot.pause()


async def measure(logdir: str, num_traces: int, repeats: int = REPEATS) -> dict[str, float]:
    results: dict[str, float] = {}
    first_row_rendered: list[float] = []
    render_row = GraphExecutionList.render_row

    def recording_render_row(self, row, width):
        if not first_row_rendered:
            first_row_rendered.append(time.perf_counter())
        return render_row(self, row, width)

    GraphExecutionList.render_row = recording_render_row  # type: ignore[method-assign]  # measured
    start = time.perf_counter()
    app = DebuggerApp(logdir, reader.list_runs(logdir))
    try:
        async with app.run_test(size=TERMINAL) as pilot:
            await _until(pilot, lambda: "Graph Execution" in paint(app))
            results["first_frame_ms"] = (time.perf_counter() - start) * 1000
            await _until(pilot, lambda: bool(first_row_rendered))
            results["open_to_first_paint_ms"] = (first_row_rendered[0] - start) * 1000
            await _until(pilot, lambda: " layer_0/op:0" in paint(app))
            await measure_keys(app, pilot, num_traces, repeats, results)
    finally:
        GraphExecutionList.render_row = render_row  # type: ignore[method-assign]
    return results


async def measure_keys(
    app, pilot, num_traces: int, repeats: int, results: dict[str, float]
) -> None:
    """Key-to-screen latencies in Graph Execution, into `results`."""
    graph_list = app.screen.query_one(GraphExecutionList)
    await pilot.press("3")
    await pilot.pause()

    async def key_latency(keys: tuple[str, ...], expected) -> list[float]:
        times = []
        for _ in range(repeats):
            await pilot.press("home")
            await pilot.pause()
            began = time.perf_counter()
            await pilot.press(*keys)
            await _until(pilot, lambda: graph_list.selected_trace == expected)
            paint(app)
            times.append((time.perf_counter() - began) * 1000)
        return times

    page = graph_list.page_rows
    target = num_traces // 2
    for label, keys, expected in (
        ("down", ("down",), 1),
        ("pagedown", ("pagedown",), page),
        ("end", ("end",), num_traces - 1),
        ("goto", ("g", *str(target), "enter"), target),
    ):
        times = await key_latency(keys, expected)
        results[f"{label}_median_ms"] = statistics.median(times)
        results[f"{label}_max_ms"] = max(times)

    for label, action in (
        ("down", graph_list.action_cursor_down),
        ("pagedown", graph_list.action_page_down),
        ("end", graph_list.action_last),
        ("goto", lambda: graph_list.select_trace(target)),
    ):
        times = []
        for _ in range(repeats):
            graph_list.action_first()
            await pilot.pause()
            paint(app)
            began = time.perf_counter()
            action()
            paint(app)
            times.append((time.perf_counter() - began) * 1000)
        results[f"{label}_handle_and_paint_median_ms"] = statistics.median(times)


def run(sizes=SIZES, repeats: int = REPEATS) -> dict[int, dict[str, float]]:
    table: dict[int, dict[str, float]] = {}
    for num_traces in sizes:
        with tempfile.TemporaryDirectory() as logdir:
            write_big_dump(logdir, num_traces, alert_every=0)
            began = time.perf_counter()
            reader.open_run(logdir).close()
            open_ms = (time.perf_counter() - began) * 1000
            table[num_traces] = {
                "reader_open_ms": open_ms,
                **asyncio.run(measure(logdir, num_traces, repeats)),
            }
    return table


def markdown(table: dict[int, dict[str, float]]) -> str:
    keys = list(next(iter(table.values())))
    lines = [
        "| measure (ms) | " + " | ".join(f"{n:,} traces" for n in table) + " |",
        "| --- | " + " | ".join("---:" for _ in table) + " |",
    ]
    for key in keys:
        lines.append(
            f"| {key.removesuffix('_ms')} | "
            + " | ".join(f"{table[n][key]:.1f}" for n in table)
            + " |"
        )
    return "\n".join(lines)


@pytest.mark.benchmark
def test_key_latency_does_not_grow_with_dump_size():
    table = run(repeats=5)
    small, big = table[SIZES[0]], table[SIZES[-1]]
    print("\n" + markdown(table))
    for key in (
        "down_median_ms",
        "pagedown_median_ms",
        "end_median_ms",
        "goto_median_ms",
        "end_handle_and_paint_median_ms",
        "goto_handle_and_paint_median_ms",
    ):
        # Flat latency: a dump 100x bigger may not be more than 3x slower per key
        # (plus 20 ms of slack for a shared, noisy machine).
        assert big[key] <= 3 * small[key] + 20, (key, small[key], big[key])


if __name__ == "__main__":
    print(markdown(run()))
