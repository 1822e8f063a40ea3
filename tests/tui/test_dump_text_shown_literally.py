"""Text from the dump is shown, never obeyed: `tfdbg-tui report` and every TUI surface
turn terminal sequences (CSI, OSC 8 links, OSC 52 clipboard writes, BEL, C1 controls)
and bidi overrides into visible escapes, and never read Rich markup.

The dump is written with the real `DumpWriter`; every string the program controls
carries the sequences: the run id, host and argv, a source file's path and lines, a
frame's function, a graph's name, op types and names, an eager call's function name.
"""

from __future__ import annotations

import json
import re

import numpy as np

from instrument.dump.writer import DumpWriter
from reader import format as fmt
from tests.synthetic import FLOAT32, health_row
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for, wait_for_workers
from tfdbg_tui.commands.report import main as report_main

# One of each: a CSI colour, an OSC 8 hyperlink, an OSC 52 clipboard write ended by BEL,
# a lone BEL, the one-byte C1 CSI and OSC, NEL, a right-to-left override, Rich markup.
# No "/": it also names a directory (the run id) and a file.
HOSTILE = (
    "\x1b[31mRED\x1b]8;;https:evil.example\x1b\\link\x1b]8;;\x1b\\"
    "\x1b]52;c;cHduZWQ=\x07\x07\x9b2J\x9d0;title\x9c\x85\u202e[bold red]b"
)
# What must never reach the terminal: C0 (but newline), DEL, C1, bidi controls.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
USER_FILE = f"/home/user/{HOSTILE}.py"
SOURCE = [
    "import tensorflow as tf",
    "",
    "@tf.function",
    f"def step{HOSTILE}(x):",
    f"    y = tf.math.log(x)  # {HOSTILE}",
    "    return -y",
]


def write_hostile_dump(logdir, run_id: str | None = None) -> str:
    """A finished FULL_HEALTH run whose `Log` makes a -inf, every string hostile."""
    writer = DumpWriter(
        logdir,
        {
            "run": run_id,
            "host": f"gpu{HOSTILE}",
            "start_time": 1_700_000_000.0,
            "tensor_debug_mode": fmt.FULL_HEALTH,
            "argv": [f"train{HOSTILE}.py", HOSTILE],
            "tf_version": "2.21.0",
        },
        circular_buffer_size=-1,
        flush_interval_s=None,
    )
    user = writer.add_source_file(USER_FILE, SOURCE, library=False)
    outer = writer.add_frame(user, 6, "<module>")
    log_frame = writer.add_frame(user, 5, f"step{HOSTILE}", (8, 5, 22))
    stack = writer.add_stack([outer, log_frame])
    call_stack = writer.add_stack([outer])
    device = writer.add_device(f"/device:CPU:0{HOSTILE}")
    graph = writer.add_graph(f"step{HOSTILE}", None)
    function = f"__inference_step{HOSTILE}_7"
    writer.set_graph_function_name(graph, function)
    x = writer.add_op(
        graph_id=graph,
        op_type=f"Placeholder{HOSTILE}",
        op_name=f"x{HOSTILE}",
        inputs=[],
        num_outputs=1,
        output_dtypes=[FLOAT32],
        device_id=device,
        stack_id=stack,
        trace_points=[0],
    )
    writer.add_op(
        graph_id=graph,
        op_type="Log",
        op_name=f"Log{HOSTILE}",
        inputs=[f"x{HOSTILE}:0"],
        num_outputs=1,
        output_dtypes=[FLOAT32],
        device_id=device,
        stack_id=stack,
        trace_points=[1],
    )
    writer.add_op(
        graph_id=graph,
        op_type=f"Neg{HOSTILE}",
        op_name=f"Neg{HOSTILE}",
        inputs=[f"Log{HOSTILE}:0"],
        num_outputs=1,
        output_dtypes=[FLOAT32],
        device_id=device,
        stack_id=stack,
        trace_points=[2],
    )
    assert x == 0
    values = np.array([0.0, 1.0, 2.0])
    log = np.log(values, where=values > 0, out=np.full(3, -np.inf))
    writer.add_execution(
        op_type=f"Const{HOSTILE}",
        graph_id=None,
        input_ids=[],
        output_ids=[100],
        device_ids=[device],
        output_dtypes=[FLOAT32],
        stack_id=call_stack,
        summaries=[health_row(values)],
    )
    writer.add_traces(
        np.array([0, 1, 2], np.int32),
        summaries=np.array([health_row(values), health_row(log), health_row(-log)]),
    )
    writer.add_execution(
        op_type=function,
        graph_id=graph,
        input_ids=[100],
        output_ids=[200],
        device_ids=[device],
        output_dtypes=[FLOAT32],
        stack_id=call_stack,
        summaries=[health_row(-log)],
    )
    writer.close()
    return writer.run_id


def assert_shown_literally(text: str) -> None:
    raw = RAW.findall(text)
    assert not raw, f"raw control characters reached the terminal: {raw!r}"
    assert "[bold red]b" in text  # markup shown as typed, not obeyed


def test_human_report_shows_every_dump_string_escaped(tmp_path, capsys):
    write_hostile_dump(tmp_path, run_id=f"run{HOSTILE}")
    assert report_main([str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert_shown_literally(captured.out + captured.err)
    out = captured.out
    for surface in (
        f"Run run{HOSTILE}",
        f"host gpu{HOSTILE}",  # run id, host
        f"Log 'Log{HOSTILE}:0' in graph 'step{HOSTILE}'",  # op type/name, graph
        f"{USER_FILE}:5 in step{HOSTILE}",  # path, frame, function
        f"# {HOSTILE}",
    ):  # the source line
        from tfdbg_tui.text.literal import literal

        assert literal(surface) in out, surface


def test_json_report_escapes_control_characters(tmp_path, capsys):
    write_hostile_dump(tmp_path)
    assert report_main([str(tmp_path), "--json"]) == 0
    out = capsys.readouterr().out
    assert not RAW.search(out) and "\\u001b[31m" in out
    assert json.loads(out)["first_alert"]["source"]["file"] == USER_FILE


def test_report_error_message_is_escaped(tmp_path, capsys):
    assert report_main([str(tmp_path / HOSTILE)]) != 0
    assert_shown_literally(capsys.readouterr().err + "[bold red]b")


async def test_tui_shows_every_dump_string_escaped(tmp_path):
    write_hostile_dump(tmp_path, run_id=f"run-a{HOSTILE}")
    write_hostile_dump(tmp_path, run_id=f"run-b{HOSTILE}")
    async with hunted_app(tmp_path, size=(200, 50)) as (app, pilot):
        await wait_for_workers(pilot)
        text = screen_text(app)
        assert_shown_literally(text)
        # The hunt's screen: status line (run id), Graph Execution (op names and types),
        # Graph Structure, Stack Trace (path, function), Source Code (line, file name).
        for surface in (
            f"run-a{HOSTILE}"[:4],
            f"Log{HOSTILE}"[:20],
            f"Neg{HOSTILE}"[:20],
            f"step{HOSTILE}"[:20],
            f"# {HOSTILE}"[:20],
        ):
            from tfdbg_tui.text.literal import literal

            assert literal(surface) in text, surface
        # The timeline's detail of the eager call: its function and the input's producer.
        await pilot.press("2")
        await pilot.press("end")
        await wait_for(pilot, lambda: "function call" in screen_text(app), what="the call's detail")
        await wait_for_workers(pilot)
        assert_shown_literally(screen_text(app))
        # The diagnosis screen, then the run picker (run ids, hosts).
        await pilot.press("e")
        await pilot.pause()
        assert_shown_literally(screen_text(app))
        await pilot.press("escape")
        await pilot.press("r")
        await wait_for(
            pilot, lambda: "runs in this logdir" in screen_text(app), what="the run picker"
        )
        await wait_for_workers(pilot)
        text = screen_text(app)
        assert_shown_literally(text)
        assert "gpu\\x1b[31m" in text
