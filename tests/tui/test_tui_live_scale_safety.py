"""The live-update path, a dump of a million traces, and dump text shown literally."""

from __future__ import annotations

import signal

from synthetic_dumps import FLOAT32, NanModelDump, health_row, write_nan_dump
from tui_helpers import hunted_app, make_app, screen_text, wait_for

import reader
from instrument.writer import DumpWriter
from reader import format as fmt
from reader import liveness
from tests.reader.synthetic import start_writer
from tfdbg_tui.context_loader import load_execution_context
from tfdbg_tui.panes.alerts import AlertList
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.source_code import highlight_source
from tfdbg_tui.panes.timeline import TimelineCells


async def test_live_dump_updates_counts_alerts_and_lists(tmp_path):
    dump = NanModelDump(tmp_path)
    dump.add_step(0)
    dump.flush()
    app = make_app(tmp_path, poll_interval_s=0.05)
    async with app.run_test(size=(100, 30)) as pilot:
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(pilot, lambda: graph_list.row_count == 6, what="first step")
        await wait_for(pilot, lambda: "alerts 0" in screen_text(app), what="no alerts yet")
        assert "LIVE" in screen_text(app)
        dump.add_step(1)
        dump.flush()
        await wait_for(pilot, lambda: "executions 4  traces 12  alerts 4" in screen_text(app),
                       what="counts of step 1")
        assert graph_list.row_count == 12
        assert app.screen.query_one(TimelineCells).count == 4
        assert len(app.screen.query_one(AlertList).alerts) == 4
        # The first alert arrived while the app ran: the hunt selects its root cause.
        await wait_for(pilot, lambda: graph_list.selected_trace == 9, what="root cause")
        dump.close()
        await wait_for(pilot, lambda: "finished" in screen_text(app), what="finished")
        assert "LIVE" not in screen_text(app)


async def test_million_traces_open_scroll_and_jump(big_logdir):
    app = make_app(big_logdir)
    async with app.run_test(size=(100, 30)) as pilot:
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(pilot, lambda: graph_list.row_count == 1_000_000, what="1M rows")
        # One NaN every 100,000 traces: the first is trace 99,999.
        await wait_for(pilot, lambda: graph_list.selected_trace == 99_999, what="first NaN")
        await pilot.press("3", "end")
        assert graph_list.selected_trace == 999_999
        await wait_for(pilot, lambda: "999999 layer_99/op:0" in screen_text(app), what="last")
        await pilot.press("g", *"500000", "enter")
        await wait_for(pilot, lambda: graph_list.selected_trace == 500_000, what="#500000")
        await pilot.press("comma")
        assert graph_list.selected_trace == 499_999
        await pilot.press("a")
        assert graph_list.row_count == 10
        await pilot.press("pageup", "pagedown")
        await wait_for(pilot, lambda: "499999 layer_99/op:0" in screen_text(app), what="row")


INJECTED = "[red]Log[/red]\x1b[31m\x07"


async def test_markup_and_escapes_in_op_names_are_shown_literally(tmp_path):
    write_nan_dump(tmp_path, op_names={"log": INJECTED, "probs": "[bold]soft[/]"})
    async with hunted_app(tmp_path, (160, 40)) as (app, pilot):
        literal_name = "[red]Log[/red]\\x1b[31m\\x07:0"
        await wait_for(pilot, lambda: literal_name in screen_text(app), what="literal name")
        text = screen_text(app)
        assert "[bold]soft[/]:0" in text
        assert "\x1b" not in text and "\x07" not in text
        await pilot.press("e")  # the whole diagnosis quotes the names too
        await wait_for(pilot, lambda: "Evidence:" in screen_text(app), what="diagnosis")
        text = screen_text(app)
        assert "input `[bold]soft[/]:0`" in text
        assert "Log [red]Log[/red]\\x1b[31m\\x07:0, graph #9" in text
        assert "\x1b" not in text and "\x07" not in text


def test_source_text_is_escaped_and_never_markup():
    lines = highlight_source(("x = '[red]hi[/red]'  # \x1b[2J", "\tindented"), "a.py")
    assert lines[0].plain == "x = '[red]hi[/red]'  # \\x1b[2J"
    assert lines[1].plain == "        indented"


async def test_a_live_run_that_stopped_writing_is_flagged_as_maybe_killed(tmp_path):
    dump = NanModelDump(tmp_path)
    dump.add_step(0)
    dump.flush()  # never closed: like a process killed with SIGKILL
    app = make_app(tmp_path, poll_interval_s=0.05)
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "● LIVE" in screen_text(app), what="live")
        app.screen.last_growth -= 60  # as if nothing had been written for a minute
        app.screen.update_status()
        await wait_for(pilot, lambda: "s (running, or killed)" in
                       screen_text(app) and "LIVE? idle 6" in screen_text(app),
                       what="the idle warning")
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: "LIVE? idle 6" in screen_text(app)
                       and "s, killed?  exec 2" in screen_text(app),
                       what="the idle warning at 80 columns")


def test_execution_detail_finds_an_input_produced_long_before(tmp_path):
    """The timeline's detail names an input's producer however far back it ran."""
    writer = DumpWriter(tmp_path, {"tensor_debug_mode": fmt.FULL_HEALTH},
                        flush_interval_s=None)
    row = health_row([1.0, 2.0])

    def execute(op_type, inputs, outputs):
        return writer.add_execution(op_type=op_type, graph_id=None, input_ids=inputs,
                                    output_ids=outputs, device_ids=[],
                                    output_dtypes=[FLOAT32] * len(outputs), stack_id=None,
                                    summaries=[row] * len(outputs))

    execute("ReadVariableOp", [], [7])
    for i in range(2000):
        execute("AddV2", [], [100 + i])
    consumer = execute("MatMul", [7, 2099, 5], [9999])
    writer.close()
    context = load_execution_context(reader.open_run(tmp_path), consumer)
    assert [(i.tensor_id, i.producer_index, i.producer_op_type) for i in context.inputs] == [
        (7, 0, "ReadVariableOp"), (2099, 2000, "AddV2"), (5, None, None)]


async def test_a_run_whose_process_is_killed_is_said_to_be_killed(tmp_path):
    """A run written on this host: once its process is gone without an `end`, the
    status line says it was killed (not "running, or killed")."""
    child, path = start_writer(tmp_path)
    try:
        app = make_app(tmp_path, poll_interval_s=0.05)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: "● LIVE" in screen_text(app), what="live")
            child.send_signal(signal.SIGKILL)
            await wait_for(pilot, lambda: f"KILLED (pid {child.pid} gone" in screen_text(app),
                           what="the killed run")
            assert "LIVE" not in screen_text(app)
        # Opened after the kill, it says so at once.
        app = make_app(tmp_path)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.screen.reader is not None, what="opened")
            # Known when the run opened: never shown as live.
            assert app.screen.run_state == liveness.KILLED and not app.screen.live
            await wait_for(pilot, lambda: f"KILLED (pid {child.pid} gone" in screen_text(app),
                           what="the killed run")
    finally:
        child.kill()
        child.wait()
