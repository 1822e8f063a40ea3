"""Logdirs with several runs, foreign content, and the import boundary in practice."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import reader
from reader import NoRunsError
from reader import format as fmt
from tests.synthetic import FINITE, NEG_INF, add_step, make_run


def _three_runs(logdir):
    runs = []
    for n, stamp in enumerate(("20260101T000000", "20260102T000000", "20260103T000000")):
        run = make_run(logdir, run_id=f"{stamp}-host{n}-{100 + n}-abcdef", start_time=1.7e9 + n)
        add_step(run, [FINITE] * (n + 1))
        run.writer.flush()
        if n != 1:  # the middle run is still running: no end record
            run.writer.close()
        runs.append(run)
    return runs


def test_several_runs_listed_oldest_first_and_newest_opened(logdir):
    runs = _three_runs(logdir)
    os.makedirs(os.path.join(logdir, "plugins"))  # foreign directory
    open(os.path.join(logdir, "events.out.tfevents.1"), "wb").write(b"x")  # foreign file
    listed = reader.list_runs(logdir)
    assert [r.run_id for r in listed] == [r.writer.run_id for r in runs]
    assert [r.finished for r in listed] == [True, False, True]
    assert listed[0].tensor_debug_mode == "FULL_HEALTH"
    assert listed[0].format_version == fmt.LOCAL_FORMAT_VERSION
    newest = reader.open_run(logdir)
    assert newest.run_id == runs[2].writer.run_id and newest.num_traces == 3
    assert reader.open_run(logdir, runs[0].writer.run_id).num_traces == 1
    assert reader.open_run(logdir, "20260102").num_traces == 2  # unique prefix
    assert reader.open_run(runs[1].path).num_traces == 2  # a run directory itself
    assert [r.run_id for r in reader.list_runs(runs[1].path)] == [runs[1].writer.run_id]
    with pytest.raises(NoRunsError, match="ambiguous"):
        reader.open_run(logdir, "2026")
    with pytest.raises(NoRunsError, match="no run"):
        reader.open_run(logdir, "nope")
    runs[1].writer.close()


@pytest.mark.parametrize("layout", ["missing", "file", "empty", "foreign"])
def test_missing_empty_or_foreign_logdir(tmp_path, layout):
    path = tmp_path / "logdir"
    if layout == "file":
        path.write_text("not a dir")
    elif layout == "empty":
        path.mkdir()
    elif layout == "foreign":
        (path / "run1").mkdir(parents=True)
        (path / "run1" / "metadata.txt").write_text("hello")
    with pytest.raises(NoRunsError) as caught:
        reader.list_runs(str(path))
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(NoRunsError):
        reader.open_run(str(path))


def test_reader_works_with_tensorflow_textual_and_rich_unimportable(logdir):
    run = make_run(logdir)
    add_step(run, [FINITE, NEG_INF, NEG_INF])
    run.writer.close()
    program = textwrap.dedent(f"""
        import sys
        for name in ("tensorflow", "keras", "textual", "rich"):
            sys.modules[name] = None  # any import of it now raises ImportError
        import reader
        dump = reader.open_run({logdir!r})
        cause = dump.root_cause()
        assert cause.op.name == "Log" and cause.frame.line == 4, cause
        assert not any(m.split(".")[0] in ("tensorflow", "textual", "rich")
                       for m in sys.modules if sys.modules[m] is not None)
        print("ok", dump.num_traces)
    """)
    result = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok 3"


def test_runs_started_in_the_same_second_are_listed_in_start_order(logdir):
    """Run ids order runs to the second; within it, their random suffixes do not."""
    later = make_run(logdir, run_id="20261123T143021-vm-11544-000000", start_time=1000.75)
    earlier = make_run(logdir, run_id="20261123T143021-vm-11544-ffffff", start_time=1000.25)
    for run in (later, earlier):
        run.writer.close()
    assert [r.run_id for r in reader.list_runs(logdir)] == [
        "20261123T143021-vm-11544-ffffff",
        "20261123T143021-vm-11544-000000",
    ]
