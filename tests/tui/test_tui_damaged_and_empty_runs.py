"""A damaged dump opens with a notice and what is readable; an empty run opens and
every key is harmless."""

from __future__ import annotations

import time

import msgpack
import pytest

from instrument.dump.writer import DumpWriter
from reader import format as fmt
from tests.peak_memory import peak_memory
from tests.reader.hostile_dumps import CASES
from tests.reader.test_hostile_values import DAMAGED
from tests.synthetic import add_step, make_run, write_nan_dump
from tests.tui.tui_helpers import make_app, screen_text, wait_for, wait_for_hunt
from tfdbg_tui.panes.graph_execution import GraphExecutionList


async def test_damaged_dump_opens_with_a_notice_and_what_is_readable(tmp_path):
    write_nan_dump(tmp_path)
    segment = next(tmp_path.glob("*/graph_traces.000000.tfdbg"))
    with open(segment, "ab") as file:
        file.write(msgpack.packb([1, 2, 3]))
        file.write(msgpack.packb({"k": "traces", "i": 999}))
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait_for_hunt(pilot)
        await wait_for(pilot, lambda: "Damaged dump" in screen_text(app), what="the notice")
        assert "not a map" in screen_text(app)
        assert app.screen.query_one(GraphExecutionList).row_count == 18


async def test_a_hostile_index_is_damage_with_the_same_notice(tmp_path):
    """A trace chunk numbered past 2**63 (valid msgpack, a value no writer writes)."""
    write_nan_dump(tmp_path)
    segment = next(tmp_path.glob("*/graph_traces.000000.tfdbg"))
    with open(segment, "ab") as file:
        file.write(
            msgpack.packb(
                {
                    "k": "traces",
                    "i": (1 << 63) + 7,
                    "n": 1,
                    "x": 1,
                    "tp": bytes(4),
                    "sc": 9,
                    "s": bytes(72),
                }
            )
        )
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait_for_hunt(pilot)
        await wait_for(pilot, lambda: "Damaged dump" in screen_text(app), what="the notice")
        assert "bad i, n or tp" in screen_text(app)
        assert app.screen.query_one(GraphExecutionList).row_count == 18


# How far the app may make the process's memory peak on one of these dumps (a few
# kilobytes; an honest one peaks at tens of MiB). The reader's own allocations on the
# same dumps, with every query asked, are bounded more tightly under tracemalloc
# (tests/reader/test_hostile_values.py); here the whole app's resident peak is.
HOSTILE_PEAK_BYTES = 256 << 20


@pytest.mark.parametrize("case", sorted(CASES))
async def test_every_hostile_value_opens_on_the_root_cause_in_bounded_memory(tmp_path, case):
    """Each hostile dump of the reader's tests opens in the TUI on its root cause (Log;
    the FULL_TENSOR runs holding a value bomb have no alert), says "Damaged dump"
    whenever the reader counts damage, answers the keys that read more of the dump, and
    stays under a memory bound."""
    CASES[case](str(tmp_path / "hostile"))
    write_nan_dump(tmp_path / "honest")
    honest = list(str(next((tmp_path / "honest").iterdir())))
    app = make_app(tmp_path / "hostile")
    started = time.monotonic()
    with peak_memory() as peak:
        async with app.run_test(size=(120, 30), notifications=True) as pilot:
            if "bomb" in case:
                await wait_for(
                    pilot, lambda: "no NaN or inf" in screen_text(app), what="the empty alert list"
                )
            else:
                await wait_for_hunt(pilot)
                await wait_for(pilot, lambda: "Log" in screen_text(app), what="the root cause")
            if case in DAMAGED:
                await wait_for(
                    pilot, lambda: "Damaged dump" in screen_text(app), what="the damage notice"
                )
            for key in ("3", "end", "home", "i", "v", "escape", "2", "end", "6", "5"):
                await pilot.press(key)
            await pilot.pause()
            await _every_screen(pilot, honest)
            assert app.is_running
    assert peak.growth < HOSTILE_PEAK_BYTES, f"{case}: {peak.growth / 2**20:.0f} MiB"
    assert time.monotonic() - started < 90


async def _every_screen(pilot, honest) -> None:
    """Open every screen a user can reach on the run, and close it again: the
    diagnosis and its chain, the notices, Trends (stepping through its series, layers
    and steps), the run picker, and the comparison with an honest run (typed as a
    path: the logdir holds one run) with its divergences."""
    app = pilot.app
    for key in ("1", "e", "escape", "u", "u", "!", "escape", "w"):
        await pilot.press(key)
    await pilot.pause()
    for key in ("t", "s", "s", "down", "right", "end", "home", "a", "t"):
        await pilot.press(key)
    await pilot.pause()
    await pilot.press("r")
    await pilot.pause()
    await pilot.press("escape")
    await pilot.press("c")
    await pilot.pause()
    await pilot.press(*honest)
    await pilot.press("enter")
    await wait_for(
        pilot, lambda: " vs A: " in screen_text(app), what="the comparison with the honest run"
    )
    for key in ("F", "d", "D", "3", "end", "escape"):
        await pilot.press(key)
    await pilot.pause()


async def test_an_empty_run_opens_and_every_key_is_harmless(tmp_path):
    DumpWriter(
        tmp_path, {"tensor_debug_mode": fmt.NO_TENSOR, "eager_mode": True}, flush_interval_s=None
    ).close()
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(
            pilot, lambda: "no NaN or inf so far" in screen_text(app), what="the empty alert list"
        )
        for key in (
            "3",
            "f",
            "full_stop",
            "comma",
            "a",
            "a",
            "i",
            "v",
            "n",
            "end",
            "2",
            "right",
            "end",
            "1",
            "enter",
            "4",
            "enter",
            "6",
            "l",
            "5",
            "pagedown",
            "right_square_bracket",
            "z",
            "z",
        ):
            await pilot.press(key)
        assert app.is_running and "exec 0 trace 0" in screen_text(app)


async def test_curt_health_alerts_show_no_counts_the_mode_did_not_record(tmp_path):
    """CURT_HEALTH records only "has NaN or inf": the alert rows give no counts (the
    reader's -1 for an unknown count is never shown)."""
    run = make_run(str(tmp_path), mode=fmt.CURT_HEALTH)
    add_step(run, [[0.0], [1.0], [1.0]])
    run.writer.close()
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for_hunt(pilot)
        rows = [line for line in screen_text(app).splitlines() if "graph #" in line]
        assert rows and all("-1" not in row and "NaN 1" not in row for row in rows), rows
