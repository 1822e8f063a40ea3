"""The Trends view on a FULL_STATS dump of 1,000,000 graph traces (20 layers, 10,000
steps, `tests.synthetic_trends`, no TensorFlow).

    python tests/benchmarks/bench_trends.py        # prints a Markdown table
    pytest -m benchmark tests/benchmarks/bench_trends.py

- open: `reader.open_run` (indexing the dump);
- trends: `DumpReader.trends()`, the roll-ups by layer and step, the first time (the
  roles of the graph's ops, then numpy over the traces);
- rules: `DumpReader.watch()` on the cached trends (every rule, the alerts' harm
  verdict it needs for the first harmful step and the loss scale);
- trends again: the cached call;
- app to Trends: from creating the app (120x40, headless) to the Trends screen's
  heatmap painted, `t` pressed as soon as the run is open: the whole wait a user sees.
"""

from __future__ import annotations

import asyncio
import tempfile
import time

import pytest

import reader
from tests.synthetic_trends import TRACES_PER_LAYER, write_trends_dump
from tests.tui.tui_helpers import make_app, screen_text

LAYERS = 20
NUM_TRACES = 1_000_000
TARGET_S = 2.0


def write(logdir: str) -> None:
    steps = NUM_TRACES // (LAYERS * TRACES_PER_LAYER)
    write_trends_dump(logdir, layers=LAYERS, steps=steps, explode=steps - 20, nan=steps - 10)


def measure_reader(logdir: str) -> dict[str, float]:
    results = {}
    start = time.perf_counter()
    dump = reader.open_run(logdir, None)
    results["open"] = time.perf_counter() - start
    with dump:
        start = time.perf_counter()
        trends = dump.trends()
        results["trends"] = time.perf_counter() - start
        start = time.perf_counter()
        report = dump.watch()
        results["rules"] = time.perf_counter() - start
        start = time.perf_counter()
        dump.trends()
        results["trends again"] = time.perf_counter() - start
        assert trends.steps.size == NUM_TRACES // (LAYERS * TRACES_PER_LAYER)
        assert report.first_anomaly is not None and report.lead_steps == 10
    return results


async def measure_app(logdir: str) -> float:
    start = time.perf_counter()
    app = make_app(logdir)
    async with app.run_test(size=(120, 40)) as pilot:
        while getattr(app.screen, "reader", None) is None:
            await pilot.pause()
        await pilot.press("t")
        while "model/dense_0" not in screen_text(app):
            await pilot.pause()
        return time.perf_counter() - start


def run() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as logdir:
        write(logdir)
        results = measure_reader(logdir)
        results["app to Trends"] = asyncio.run(measure_app(logdir))
    return results


def markdown(results: dict[str, float]) -> str:
    lines = ["| 1M FULL_STATS traces | seconds |", "| --- | ---: |"]
    lines += [f"| {name} | {seconds:.3f} |" for name, seconds in results.items()]
    return "\n".join(lines)


@pytest.mark.benchmark
def test_trends_view_opens_a_million_traces_within_two_seconds():
    results = run()
    print("\n" + markdown(results))
    assert results["app to Trends"] < TARGET_S * 3, results  # loose: a shared machine


if __name__ == "__main__":
    print(markdown(run()))
