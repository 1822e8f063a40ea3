"""TensorFlow's own dumps, read without TensorFlow.

The session fixture `tf_written` (tests/conftest.py) runs tests/programs/tf_dumper.py: a
small program (eager ops, then a tf.function whose `tf.math.log` makes -inf and whose
`Sub` makes NaN) dumped by `tf.debugging.experimental.enable_dump_debug_info` in every
mode, each dump then read back by TensorFlow's own `DebugDataReader`. A second subprocess, where
`import tensorflow` fails, reads the same dumps with `reader`; the tests compare the
two. The rest (damage, truncation, live growth, two hosts, the CLI) copy one dump and
read it in this process.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import reader
from reader.loading.tf_events.schema import DebugEvent
from reader.loading.tf_events.tfrecord import FOOTER_BYTES, HEADER_BYTES, RecordFile
from tests.present import present

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAMS = os.path.join(REPO, "tests", "programs")
MODES = ("NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "SHAPE", "FULL_TENSOR")
ALERT_MODES = ("CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "FULL_TENSOR")


def _env() -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="session")
def read_back(tf_written) -> dict[str, tuple[dict, dict]]:
    """Per mode: (what TensorFlow's reader said, what `reader` says without TF)."""
    done = subprocess.run(
        [sys.executable, os.path.join(PROGRAMS, "read_tf_dumps.py"), tf_written, *MODES],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ours = json.loads(done.stdout)
    expected = {}
    for mode in MODES:
        with open(os.path.join(tf_written, f"{mode}.expected.json"), encoding="utf-8") as f:
            expected[mode] = json.load(f)
    return {mode: (expected[mode], ours[mode]) for mode in MODES}


@pytest.fixture
def dump_copy(tf_written, tmp_path) -> str:
    """A copy of the FULL_HEALTH dump, to damage or grow."""
    target = str(tmp_path / "logdir")
    shutil.copytree(os.path.join(tf_written, "FULL_HEALTH"), target)
    return target


def _file(logdir: str, suffix: str) -> str:
    (path,) = glob.glob(os.path.join(logdir, f"tfdbg_events.*{suffix}"))
    return path


def _record_spans(path: str) -> list[tuple[int, int]]:
    """(header offset, end offset) of each record of a TFRecord file."""
    spans = []
    for _, base, starts, lengths in RecordFile(path).read_new():
        for start, length in zip(starts.tolist(), lengths.tolist()):
            spans.append((base + start - HEADER_BYTES, base + start + length + FOOTER_BYTES))
    return spans


# -- every mode, read without TensorFlow -------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_records_match_tensorflows_reader(read_back, mode):
    expected, ours = read_back[mode]
    assert not ours["tensorflow_imported"]
    assert ours["mode"] == mode and ours["damage"] == []
    assert ours["runs"] == [
        [
            ours["runs"][0][0],
            "vm" if ours["runs"][0][1] == "vm" else ours["runs"][0][1],
            mode,
            "tensorflow",
        ]
    ]
    assert ours["executions"] == expected["executions"]
    assert ours["traces"] == expected["traces"]
    assert ours["devices"] == expected["devices"]
    assert ours["tf_version"] == expected["tf_version"]
    assert ours["log_stack"] == expected["log_stack"]
    assert ours["first_execution_stack"] == expected["first_execution_stack"]
    assert ours["function_graph"] == "step" and ours["steps"] == "step"
    # Each call's traces belong to it: the first call is execution 1, the second 3.
    assert set(ours["trace_steps"]) == {1, 3}


@pytest.mark.parametrize("mode", ALERT_MODES)
def test_first_alert_and_root_cause(read_back, tf_written, mode):
    expected, ours = read_back[mode]
    assert ours["first_alert"] == expected["first_trace_alert"] == ["Log", 0, "Log"]
    # -inf from Log, carried by Mul; NaN from Sub, Sum and the call's output.
    assert ours["num_alerts"] == 5
    bug_line = next(
        n
        for n, line in enumerate(open(os.path.join(PROGRAMS, "tf_dumper.py"), encoding="utf-8"), 1)
        if line.rstrip().endswith("# BUG")
    )
    cause = ours["root_cause"]
    assert cause["op"] == "Log" and cause["line"] == bug_line
    assert cause["path"].endswith("tf_dumper.py") and "tf.math.log(p)" in cause["text"]


@pytest.mark.parametrize(
    "mode,kept",
    [("CURT_HEALTH", slice(1, 2)), ("CONCISE_HEALTH", slice(1, 5)), ("FULL_HEALTH", slice(2, 11))],
)
def test_summaries_are_tensorflows_columns(read_back, mode, kept):
    expected, ours = read_back[mode]
    names = {
        "CURT_HEALTH": ("has_inf_or_nan",),
        "CONCISE_HEALTH": ("size", "neg_inf", "pos_inf", "nan"),
        "FULL_HEALTH": ("dtype", "rank", "size", "neg_inf", "pos_inf", "nan", "neg", "zero", "pos"),
    }[mode]
    for theirs, mine in zip(expected["trace_summaries"], ours["trace_summaries"]):
        row = [float({"float32": 1}.get(mine[n], mine[n])) for n in names]
        assert row == theirs[kept]
    for theirs, mine in zip(expected["execution_summaries"], ours["execution_summaries"]):
        assert [[float({"float32": 1}.get(s[n], s[n])) for n in names] for s in mine] == [
            t[kept] for t in theirs
        ]


def test_shape_and_full_tensor(read_back):
    expected, ours = read_back["SHAPE"]
    for theirs, shape in zip(expected["trace_summaries"], ours["trace_shapes"]):
        assert shape == [int(d) for d in theirs[4 : 4 + int(theirs[2])]]
    expected, ours = read_back["FULL_TENSOR"]
    for theirs, mine in zip(expected["trace_values"], ours["trace_values"]):
        np.testing.assert_array_equal(np.array(mine, dtype=float), np.array(theirs, dtype=float))


def test_no_tensor_has_no_alerts(read_back):
    _, ours = read_back["NO_TENSOR"]
    assert ours["num_alerts"] == 0 and ours["root_cause"] is None
    assert all(s is None for s in ours["trace_summaries"])


# -- damage, truncation, growth ----------------------------------------------------------


def test_truncated_traces_are_a_tail_then_followed(dump_copy):
    """A trace file cut inside a record opens with the records before the cut and no
    damage (a live writer may complete it); appending the rest is read by update()."""
    path = _file(dump_copy, ".graph_execution_traces")
    with open(path, "rb") as f:
        whole = f.read()
    spans = _record_spans(path)
    cut = spans[4][0] + 30  # inside the fifth record
    with open(path, "wb") as f:
        f.write(whole[:cut])
    with reader.open_run(dump_copy) as dump:
        assert dump.num_traces == 4 and dump.damage == ()
        assert present(dump.first_alert()).op_name == "Log"
        with open(path, "ab") as f:
            f.write(whole[cut:])
        report = dump.update()
        assert report.new_traces == 6 and report.new_alerts == 1  # the first call's Sum
        assert dump.num_traces == 10 and dump.alerts().total == 5


def test_growing_dump_is_followed_from_empty(dump_copy):
    """Executions and traces appended after opening are read by update() (the mode
    learnt from the first record that names it). Traces read while their call is
    still running (its execution not written yet) belong to the next execution."""
    executions = _file(dump_copy, ".execution")
    traces = _file(dump_copy, ".graph_execution_traces")
    saved = {}
    for path in (executions, traces):
        with open(path, "rb") as f:
            saved[path] = f.read()
        open(path, "wb").close()
    with reader.open_run(dump_copy) as dump:
        assert dump.num_executions == 0 and dump.num_traces == 0
        # Sub, the first call, AddV2; the second call is still running.
        before_second_call = _record_spans_of(saved[executions])[2][1]
        with open(executions, "ab") as f:
            f.write(saved[executions][:before_second_call])
        with open(traces, "ab") as f:
            f.write(saved[traces])
        report = dump.update()
        assert dump.mode == "FULL_HEALTH"
        assert report.new_executions == 3 and report.new_traces == 10
        assert [t.step for t in dump.traces(0, 10)] == [1] * 5 + [3] * 5
        with open(executions, "ab") as f:
            f.write(saved[executions][before_second_call:])
        assert dump.update().new_executions == 1
        assert dump.execution(3).op_type.startswith("__inference_step")
        assert present(present(dump.root_cause()).op).name == "Log"


def _record_spans_of(data: bytes) -> list[tuple[int, int]]:
    spans, pos = [], 0
    while pos + HEADER_BYTES <= len(data):
        length = int.from_bytes(data[pos : pos + 8], "little")
        spans.append((pos, pos + HEADER_BYTES + length + FOOTER_BYTES))
        pos = spans[-1][1]
    return spans


def test_damaged_length_is_a_notice_and_keeps_what_is_before(dump_copy):
    path = _file(dump_copy, ".graph_execution_traces")
    spans = _record_spans(path)
    with open(path, "r+b") as f:
        f.seek(spans[3][0] + 2)
        f.write(b"\x7f")  # the fourth record's length, no longer matching its CRC
    with reader.open_run(dump_copy) as dump:
        assert dump.num_traces == 3
        (notice,) = dump.damage
        assert "fails its CRC" in notice and f"byte {spans[3][0]}" in notice
        assert present(present(dump.root_cause()).op).name == "Log"


def test_undecodable_record_is_skipped_with_a_notice(dump_copy):
    path = _file(dump_copy, ".graph_execution_traces")
    spans = _record_spans(path)
    start = spans[1][0] + HEADER_BYTES
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(b"\xff" * 12)  # framing intact, the DebugEvent not
    with reader.open_run(dump_copy) as dump:
        assert dump.num_traces == 10
        assert dump.kept_traces() == [(0, 1), (2, 10)]
        assert any("not a DebugEvent" in d for d in dump.damage)
        assert present(dump.first_alert()).op_name == "Log"


def test_data_crc_checked_when_a_record_is_read(dump_copy):
    """A bit flipped inside an execution's summary still parses, so it is indexed; its
    data CRC fails when the record itself is read, which says so."""
    path = _file(dump_copy, ".execution")
    spans = _record_spans(path)
    with open(path, "rb") as f:
        data = f.read()
    record = DebugEvent.FromString(data[spans[0][0] + HEADER_BYTES : spans[0][1] - FOOTER_BYTES])
    content = record.execution.tensor_protos[0].tensor_content
    at = data.index(content, spans[0][0]) + 8
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(bytes([data[at] ^ 0x01]))
    with reader.open_run(dump_copy) as dump:
        assert dump.num_executions == 4
        with pytest.raises(reader.DamagedDumpError, match="no longer readable"):
            dump.execution(0)
        assert dump.execution(1).op_type.startswith("__inference_step")


def test_unreadable_metadata_is_one_line_in_the_cli(dump_copy):
    open(_file(dump_copy, ".metadata"), "wb").close()
    done = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "report", dump_copy],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "metadata is unreadable" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# -- two hosts ---------------------------------------------------------------------------


def test_two_hosts_are_two_runs(dump_copy):
    """A multi-host job leaves a file set per host in one logdir: each is a run (the
    host name may hold dots), ordered by start time; report opens the newest."""
    prefix = _file(dump_copy, ".metadata")[: -len(".metadata")]
    stamp = int(os.path.basename(prefix).split(".")[1])
    other = os.path.join(dump_copy, f"tfdbg_events.{stamp + 5}.worker-1.example.com")
    for path in glob.glob(prefix + ".*"):
        shutil.copy(path, other + path[len(prefix) :])
    runs = reader.list_runs(dump_copy)
    assert [r.host for r in runs] == [
        "vm" if runs[0].host == "vm" else runs[0].host,
        "worker-1.example.com",
    ]
    assert all(r.dumper == "tensorflow" and r.tensor_debug_mode == "FULL_HEALTH" for r in runs)
    with reader.open_run(dump_copy) as newest:
        assert newest.run_id == os.path.basename(other)
        assert present(present(newest.root_cause()).op).name == "Log"
    with reader.open_run(dump_copy, runs[0].run_id) as first:
        assert first.num_traces == 10
    done = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "report", "--json", dump_copy],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["dumper"] == "tensorflow" and summary["run"] == os.path.basename(other)
    assert summary["num_alerts"] == 5
