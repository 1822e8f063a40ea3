"""Eager executions of TensorFlow's dumps read a block at a time give the answers of
the record-at-a-time path, on real dumps and on damaged ones.

Each test opens a dump both ways (`tests/reader/execution_paths.py`) and compares
every answer about the executions. The dumps are the session fixtures'
(`tf_written`: one small program in every mode; `harm_tf_dumps`: Keras fits and
eager loops in FULL_HEALTH, CURT_HEALTH and FULL_TENSOR), and copies of one of them
with many records, some damaged, framed here.
"""

from __future__ import annotations

import glob
import os
import shutil
import struct

import pytest

import reader
from reader.loading.tf_events.schema import DebugEvent
from reader.loading.tf_events.tfrecord import FOOTER_BYTES, HEADER_BYTES
from tests.conftest import HARM_TF_CASES
from tests.reader.execution_paths import assert_same_answers, framed, varint

MODES = ("NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "SHAPE", "FULL_TENSOR")


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_as_record_by_record(tf_written, monkeypatch, mode):
    read = assert_same_answers(os.path.join(tf_written, mode), monkeypatch)
    # FULL_TENSOR's values are decoded record by record; every other mode's block.
    assert read == (0 if mode == "FULL_TENSOR" else 4)


@pytest.mark.parametrize("case", HARM_TF_CASES)
def test_real_programs_as_record_by_record(harm_tf_dumps, monkeypatch, case):
    path = os.path.join(harm_tf_dumps, case.replace(":", "-"))
    with reader.open_run(path) as dump:
        executions = dump.num_executions
    read = assert_same_answers(path, monkeypatch)
    assert read == (0 if case.endswith("FULL_TENSOR") else executions)


# -- damage in the middle of a block -----------------------------------------------------


def _records(path: str) -> list[bytes]:
    with open(path, "rb") as f:
        data = f.read()
    records, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        records.append(data[pos + HEADER_BYTES : pos + HEADER_BYTES + length])
        pos += HEADER_BYTES + length + FOOTER_BYTES
    return records


@pytest.fixture
def long_block(tf_written, tmp_path) -> tuple[str, str, list[bytes]]:
    """A copy of the FULL_HEALTH dump whose execution file holds its records 60 times
    over (240 records, one block): (logdir, execution file, its records)."""
    logdir = str(tmp_path / "logdir")
    shutil.copytree(os.path.join(tf_written, "FULL_HEALTH"), logdir)
    (path,) = glob.glob(os.path.join(logdir, "tfdbg_events.*.execution"))
    records = _records(path) * 60
    with open(path, "wb") as f:
        f.write(b"".join(map(framed, records)))
    return logdir, path, records


def _write(path: str, records: list[bytes]) -> None:
    with open(path, "wb") as f:
        f.write(b"".join(map(framed, records)))


def test_a_long_block_as_record_by_record(long_block, monkeypatch):
    logdir, _, records = long_block
    assert assert_same_answers(logdir, monkeypatch) == len(records)


def test_a_record_cut_short_inside_a_block_is_a_notice(long_block, monkeypatch):
    """A record whose framing is whole but whose event is cut inside its code
    location: skipped with a notice (its index stays a gap); the records around it
    are read by the block path."""
    logdir, path, records = long_block
    records[101] = records[101][:-40]
    _write(path, records)
    read = assert_same_answers(logdir, monkeypatch)
    assert read == len(records) - 1
    with reader.open_run(logdir) as dump:
        assert dump.kept_executions() == [(0, 101), (102, 240)]
        (notice,) = dump.damage
        assert "not a DebugEvent" in notice and "record skipped" in notice
        assert dump.execution(102).op_type == dump.execution(2).op_type


def test_a_record_laid_out_otherwise_is_read_by_protobuf(long_block, monkeypatch):
    """A valid event whose fields come in another order (protobuf accepts any): the
    block path leaves it, the record path reads it, with no notice."""
    logdir, path, records = long_block
    event = DebugEvent.FromString(records[50])
    execution = event.execution.SerializeToString()
    # The execution first, then the wall time: the reverse of TensorFlow's order.
    records[50] = (
        bytes([9 << 3 | 2])
        + varint(len(execution))
        + execution
        + bytes([1 << 3 | 1])
        + struct.pack("<d", event.wall_time)
    )
    _write(path, records)
    read = assert_same_answers(logdir, monkeypatch)
    assert read == len(records) - 1
    with reader.open_run(logdir) as dump:
        assert dump.damage == () and dump.kept_executions() == [(0, 240)]
        assert dump.execution(50).op_type == DebugEvent.FromString(records[50]).execution.op_type


def test_an_invalid_op_type_is_skipped_as_protobuf_skips_it(long_block, monkeypatch):
    """An op type that is not UTF-8 (protobuf rejects the event): a notice, a gap."""
    logdir, path, records = long_block
    event = DebugEvent.FromString(records[7])
    op_type = event.execution.op_type.encode()
    records[7] = records[7].replace(op_type, b"\xff" * len(op_type), 1)
    _write(path, records)
    assert assert_same_answers(logdir, monkeypatch) == len(records) - 1
    with reader.open_run(logdir) as dump:
        assert dump.kept_executions() == [(0, 7), (8, 240)]
        assert any("not a DebugEvent" in notice for notice in dump.damage)


def test_bytes_lost_inside_a_block_keep_what_is_before(long_block, monkeypatch):
    """Bytes missing from a record in the middle: its length no longer frames the
    file, the next header fails its CRC: a notice, and every record before it."""
    logdir, path, records = long_block
    with open(path, "rb") as f:
        data = f.read()
    at = sum(HEADER_BYTES + len(r) + FOOTER_BYTES for r in records[:120]) + HEADER_BYTES + 30
    with open(path, "wb") as f:
        f.write(data[:at] + data[at + 25 :])
    assert_same_answers(logdir, monkeypatch)
    with reader.open_run(logdir) as dump:
        assert dump.kept_executions()[0][0] == 0
        assert dump.num_executions <= 121
        assert any("fails its CRC" in notice for notice in dump.damage)
        assert dump.execution(119).op_type == dump.execution(3).op_type
