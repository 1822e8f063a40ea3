"""`tfdbg-tui report`: human and JSON output, exit statuses, no tracebacks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

from reader import format as fmt
from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run, segment_path
from tfdbg_tui.commands.report import main
from tfdbg_tui.exit_codes import EXIT_DAMAGED, EXIT_NEWER_FORMAT, EXIT_NO_DUMP, EXIT_OK


@pytest.fixture
def logdir(tmp_path):
    return str(tmp_path / "logdir")


def _nan_run(logdir, op_name="Log"):
    run = make_run(logdir)
    add_step(run, [FINITE, FINITE, FINITE])
    add_step(run, [FINITE, NEG_INF, NAN])
    run.writer.close()
    return run


def test_json_report_has_the_issue_keys(logdir, capsys):
    run = _nan_run(logdir)
    assert main([logdir, "--json"]) == EXIT_OK
    out = capsys.readouterr().out
    report = json.loads(out)  # exactly one JSON object, nothing else
    assert report["run"] == run.writer.run_id
    assert report["tensor_debug_mode"] == "FULL_HEALTH"
    assert (report["num_executions"], report["num_graph_traces"], report["num_alerts"]) == (2, 6, 3)
    first = report["first_alert"]
    assert {k: first[k] for k in ("kind", "index", "op_type", "op_name", "graph_name")} == {
        "kind": "graph",
        "index": 4,
        "op_type": "Log",
        "op_name": "Log",
        "graph_name": "step",
    }
    assert first["device"].endswith("CPU:0")
    assert first["counts"] == {"nan": 0, "neg_inf": 1, "pos_inf": 0}
    assert {k: first["source"][k] for k in ("file", "line", "function")} == {
        "file": "/home/me/project/train.py",
        "line": 4,
        "function": "step",
    }
    # This synthetic dump records no expression spans (as format 1.0 dumps): null fields.
    assert (
        first["source"]["column"],
        first["source"]["end_column"],
        first["source"]["expression"],
    ) == (None, None, None)
    assert report["diagnosis"]["pattern"] in ("log_of_nonpositive", "unknown")


def test_json_report_without_alerts_has_null_first_alert(logdir, capsys):
    run = make_run(logdir)
    add_step(run, [FINITE, FINITE, FINITE])
    run.writer.close()
    assert main([logdir, "--json", "--run", run.writer.run_id]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert report["num_alerts"] == 0 and report["first_alert"] is None


def test_human_report_names_op_line_and_escapes_markup(logdir, capsys):
    run = make_run(logdir)
    w = run.writer
    evil = w.add_source_file(
        "/home/me/[red]evil[/red].py", ["x = [bold]boom[/bold](y)"], library=False
    )
    frame = w.add_frame(evil, 1, "[link=http://x]f[/link]")
    stack = w.add_stack([frame])
    op = w.add_op(
        graph_id=run.graph,
        op_type="Log",
        op_name="scope/[b]log[/b]",
        inputs=["x:0"],
        num_outputs=1,
        output_dtypes=[1],
        device_id=None,
        stack_id=stack,
        trace_points=[7],
    )
    import numpy as np

    w.add_traces(np.array([0, 7], np.int32), summaries=np.array([FINITE, NEG_INF], float))
    w.close()
    assert main([logdir]) == EXIT_OK
    out = capsys.readouterr().out
    assert "Root cause" in out and "scope/[b]log[/b]" in out
    assert "/home/me/[red]evil[/red].py:1" in out and "[link=http://x]f[/link]" in out
    assert "x = [bold]boom[/bold](y)" in out
    assert op == 3


@pytest.mark.parametrize(
    "layout,status",
    [
        ("missing", EXIT_NO_DUMP),
        ("empty", EXIT_NO_DUMP),
        ("foreign", EXIT_NO_DUMP),
        ("newer", EXIT_NEWER_FORMAT),
        ("damaged", EXIT_DAMAGED),
    ],
)
def test_error_exits_are_one_line_without_traceback(tmp_path, layout, status):
    logdir = str(tmp_path / "logdir")
    if layout == "empty":
        os.makedirs(logdir)
    elif layout == "foreign":
        os.makedirs(os.path.join(logdir, "x"))
        open(os.path.join(logdir, "x", "notes.txt"), "w").write("hi")
    elif layout in ("newer", "damaged"):
        run = _nan_run(logdir)
        with open(segment_path(run.path, fmt.STREAM_METADATA), "wb") as f:
            if layout == "newer":
                f.write(
                    msgpack.packb(
                        {
                            "k": "header",
                            "format": fmt.FORMAT_NAME,
                            "version": [9, 0],
                            "stream": "metadata",
                        }
                    )
                )
            else:
                f.write(b"\x00\xc1\xc1")
    result = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "report", logdir], capture_output=True, text=True
    )
    assert result.returncode == status, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfdbg-tui report: "), result.stderr
    assert "Traceback" not in result.stderr


def test_help_documents_exit_statuses(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert "--json" in out and "--run" in out and f"{EXIT_NEWER_FORMAT}" in out


def documented_json_keys() -> list[str]:
    """The keys docs/keys.md lists for `report --json`, in order."""
    docs = (Path(__file__).resolve().parents[1] / "docs" / "keys.md").read_text()
    section = docs.split("## `report --json`", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)


def test_json_keys_are_the_documented_ones_and_first_alert_is_the_root_cause(logdir, capsys):
    _nan_run(logdir)
    assert main([logdir, "--json"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert list(report) == documented_json_keys()
    # first_alert is the root cause: the op whose inputs were finite (the -inf maker,
    # not the NaN after it), as the human report's "Root cause" names it.
    assert main([logdir]) == EXIT_OK
    human = capsys.readouterr().out
    cause = report["first_alert"]
    assert "Root cause" in human and cause["op_name"] in human
    assert cause["counts"]["neg_inf"] > 0 and cause["counts"]["nan"] == 0


def test_every_key_of_first_alert_is_documented(logdir, capsys):
    """docs/keys.md's `first_alert` row names each key the report gives the root cause
    (a key added to the report without its words there fails here)."""
    _nan_run(logdir)
    assert main([logdir, "--json"]) == EXIT_OK
    first = json.loads(capsys.readouterr().out)["first_alert"]
    docs = (Path(__file__).resolve().parents[1] / "docs" / "keys.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith("| `first_alert` |"))
    assert [key for key in first if f"`{key}`" not in row] == []


def test_a_generic_dump_error_has_one_status_in_report_and_app(logdir, monkeypatch, capsys):
    """`tfdbg_tui.exit_codes.exit_code_for` is the one mapping: the app's `fail` and
    the report both use it, so any other `DumpError` is "damaged" in both."""
    import reader
    from reader.errors import DumpError, UnknownIdError
    from tfdbg_tui.exit_codes import exit_code_for

    assert exit_code_for(DumpError("x")) == exit_code_for(UnknownIdError("x")) == EXIT_DAMAGED

    def vanished(*args, **kwargs):
        raise UnknownIdError("execution 3 is not on disk")

    from tfdbg_tui.commands import report

    monkeypatch.setattr(reader, "open_run", vanished)
    monkeypatch.setattr(report, "open_landing_run", vanished)  # the run opened without --run
    assert main([logdir]) == EXIT_DAMAGED
    assert capsys.readouterr().err.strip() == "tfdbg-tui report: execution 3 is not on disk"


def test_notices_in_the_human_and_json_report(logdir, capsys):
    run = make_run(logdir)
    add_step(run, [FINITE, FINITE, FINITE])
    run.writer.add_notice(
        fmt.NOTICE_XLA_UNTRACED,
        "[bold]step[/] is compiled with XLA\x1b[2J",
        details={"function": "step"},
    )
    run.writer.add_notice(
        fmt.NOTICE_CIRCULAR_BUFFER,
        "circular buffer of 1,000",
        level=fmt.NOTICE_INFO,
        details={"size": 1000},
    )
    run.writer.close()
    assert main([logdir, "--json"]) == EXIT_OK
    notices = json.loads(capsys.readouterr().out)["notices"]
    assert [(n["kind"], n["level"], n["details"]) for n in notices] == [
        ("xla_untraced", "warning", {"function": "step"}),
        ("circular_buffer", "info", {"size": 1000}),
    ]
    assert main([logdir]) == EXIT_OK
    out = capsys.readouterr().out
    # Dump text is never markup, and control characters are shown, not sent.
    assert "⚠ warning: [bold]step[/] is compiled with XLA" in out
    assert "\x1b" not in out
    assert "info: circular buffer of 1,000" in out


def test_curt_health_alerts_have_no_count_columns(logdir, capsys):
    """CURT_HEALTH records only "has NaN or inf": the alert table gives no counts (the
    reader's -1 for an unknown count is never printed), as the TUI's Alerts rows."""
    run = make_run(logdir, mode=fmt.CURT_HEALTH)
    add_step(run, [[0.0], [1.0], [1.0]])
    run.writer.close()
    assert main([logdir]) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("kind "))
    rows = [line for line in lines if line.startswith(("graph ", "eager "))]
    assert len(rows) == 3 and header.split()[-1] == "graph"
    assert not any(word in header for word in ("nan", "-inf", "+inf"))
    assert all("-1" not in row and "?" not in row for row in rows), rows
