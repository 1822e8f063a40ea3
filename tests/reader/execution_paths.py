"""Opening a TensorFlow dump by both execution paths and comparing every answer.

The block path (`reader.loading.tf_events.execution_block`, `execution_rows`) reads
the records TensorFlow's dumper lays out its usual way; every other record goes one
at a time through protobuf. `assert_same_answers` opens a dump twice: as it is, and
with the block scan made to read nothing (so every record takes the record-at-a-time
path), and compares every answer about the executions.
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pytest

import reader
from reader.loading.tf_events import execution_rows
from reader.loading.tf_events.tfrecord import crc32c, masked_crc


def _open(path: str, monkeypatch: pytest.MonkeyPatch, blocks: bool) -> tuple:
    """(the run opened, how many records the block path read)."""
    real_scan, real_block = execution_rows.scan, execution_rows.ExecutionRows.scan
    read = []

    def scan(data, starts, lengths, kept):
        columns = real_scan(data, starts, lengths, kept)
        return dataclasses.replace(columns, readable=np.zeros_like(columns.readable))

    def block(self, data, starts, lengths):
        scanned = real_block(self, data, starts, lengths)
        read.append(int(scanned.readable.sum()))
        return scanned

    with monkeypatch.context() as patch:
        if not blocks:
            patch.setattr(execution_rows, "scan", scan)
        patch.setattr(execution_rows.ExecutionRows, "scan", block)
        return reader.open_run(path), sum(read)


def assert_same_answers(path: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """Open ``path`` both ways and compare every answer about its executions; returns
    how many records the block path read."""
    by_block, read = _open(path, monkeypatch, blocks=True)
    by_record, _ = _open(path, monkeypatch, blocks=False)
    with by_block, by_record:
        n = by_record.num_executions
        assert by_block.num_executions == n
        assert by_block.kept_executions() == by_record.kept_executions()
        assert by_block.damage == by_record.damage
        assert by_block.execution_op_types(0, n) == by_record.execution_op_types(0, n)
        codes, types = by_block.execution_op_codes(0, n)
        assert types == by_record.execution_op_codes(0, n)[1]
        np.testing.assert_array_equal(codes, by_record.execution_op_codes(0, n)[0])
        np.testing.assert_array_equal(
            by_block.execution_alert_flags(0, n), by_record.execution_alert_flags(0, n)
        )
        np.testing.assert_array_equal(
            by_block.execution_function_flags(0, n), by_record.execution_function_flags(0, n)
        )
        counts, rows = by_block.execution_outputs(0, n)
        np.testing.assert_array_equal(counts, by_record.execution_outputs(0, n)[0])
        np.testing.assert_array_equal(rows, by_record.execution_outputs(0, n)[1])
        for ours, theirs in zip(by_block._execs.alert_rows(), by_record._execs.alert_rows()):
            np.testing.assert_array_equal(ours, theirs)
        for begin, end in by_record.kept_executions():
            for index in range(begin, end):
                execution = by_block.execution(index)
                assert execution == by_record.execution(index)
                assert by_block.execution_record(index) == by_record.execution_record(index)
                assert by_block.execution_devices(index) == by_record.execution_devices(index)
                for tensor in execution.output_ids:
                    assert by_block.producer_of(tensor) == by_record.producer_of(tensor)
                if execution.stack_id is not None:
                    assert by_block.stack(execution.stack_id) == by_record.stack(execution.stack_id)
        assert by_block.graphs() == by_record.graphs()
        assert by_block.num_traces == by_record.num_traces
        steps = [t.step for t in by_block.traces(0, by_block.num_traces)]
        assert steps == [t.step for t in by_record.traces(0, by_record.num_traces)]
        assert by_block.alerts() == by_record.alerts()
        assert by_block.root_cause() == by_record.root_cause()
        steps, record_steps = by_block.steps(), by_record.steps()
        assert steps.function == record_steps.function
        assert steps.kept_steps() == record_steps.kept_steps()
        assert steps.gaps == record_steps.gaps
        np.testing.assert_array_equal(
            steps.of_executions(np.arange(n)), record_steps.of_executions(np.arange(n))
        )
    return read


def varint(value: int) -> bytes:
    """``value`` as a protocol buffer varint."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def framed(data: bytes) -> bytes:
    """One TFRecord: length, its masked CRC-32C, the data, the data's masked CRC-32C."""
    length = struct.pack("<Q", len(data))
    return (
        length
        + struct.pack("<I", masked_crc(crc32c(length)))
        + data
        + struct.pack("<I", masked_crc(crc32c(data)))
    )
