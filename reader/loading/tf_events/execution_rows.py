"""A scanned block of executions (`execution_block`) as the index's rows and the
definitions they bring, with the same meaning `events.execution_record` gives one
record: op types and graph ids as strings, stacks and graphs numbered by `Ids` in
record order, the calls of each step function numbered.

What is decoded is only what differs: the op types, graph ids and code locations of
a block are a handful of distinct strings, each decoded once (a code location once
per run), and a record finds its own among them by numpy when it repeats the step
before (`repeating_spans`). A record whose strings are not UTF-8, or whose code
location does not parse, is not ``readable``: the record-at-a-time path skips it with
a notice, as it skips any record protobuf rejects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from reader import format as fmt
from reader.loading.tf_events.events import Ids, function_name_record
from reader.loading.tf_events.execution_block import ExecutionColumns, scan
from reader.loading.tf_events.repeating_spans import RepeatingSpans, intern_bytes
from reader.loading.tf_events.schema import CodeLocation
from reader.loading.tf_events.tfrecord import FOOTER_BYTES, HEADER_BYTES
from reader.summary_rows import with_magnitudes


@dataclass(frozen=True)
class Rows:
    """Consecutive readable executions of a block, as `ExecutionIndex.add_records` and
    `Definitions.add` take them."""

    first: int
    op_types: list[str]
    op: np.ndarray
    has_graph: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    out_start: np.ndarray
    out: np.ndarray
    summaries: np.ndarray | None
    has_summary: np.ndarray
    times: np.ndarray
    definitions: list[dict[str, Any]]


@dataclass(frozen=True)
class Block:
    """One block scanned, its strings interned: per record a code into each table."""

    columns: ExecutionColumns
    starts: np.ndarray
    lengths: np.ndarray
    readable: np.ndarray
    op: np.ndarray
    op_types: list[str | None]
    graph: np.ndarray  # -1: none
    graph_ids: list[str | None]
    code: np.ndarray
    code_locations: list[bytes]

    def runs(self) -> Iterator[tuple[int, int, bool]]:
        """``(begin, end, readable)`` of the block's runs of records alike."""
        changes = np.flatnonzero(self.readable[1:] != self.readable[:-1]) + 1
        bounds = [0, *changes.tolist(), self.readable.size]
        for begin, end in zip(bounds[:-1], bounds[1:]):
            yield begin, end, bool(self.readable[begin])


class ExecutionRows:
    """Reads blocks of one run's executions; keeps the frames of each code location
    seen (its bytes as written), so each is parsed once.

    Args:
        ids: The run's ints for TensorFlow's string ids.
        mode: The run's tensor debug mode.
    """

    def __init__(self, ids: Ids, mode: str) -> None:
        self.ids = ids
        self.mode = mode
        self._kept = fmt.TF_SUMMARY_KEPT_COLUMNS.get(mode)
        self._frames: dict[bytes, tuple[str, ...] | None] = {}

    def scan(self, data: bytes, starts: np.ndarray, lengths: np.ndarray) -> Block:
        """The records ``data[starts[r]:starts[r] + lengths[r]]``, scanned and interned."""
        columns = scan(data, starts, lengths, self._kept)
        readable = columns.readable.copy()
        spans = RepeatingSpans(data, starts, lengths)
        op, op_keys = spans.intern(columns.op_start, columns.op_stop)
        op_types = [_text(key) for key in op_keys]
        _unreadable(readable, op, op_types)
        # Only function calls name a graph: few, through a dictionary.
        graph = np.full(readable.size, -1, dtype=np.int64)
        named = np.flatnonzero(columns.graph_stop > columns.graph_start)
        graph[named], graph_keys = intern_bytes(
            data, columns.graph_start[named], columns.graph_stop[named]
        )
        graph_ids = [_text(key) for key in graph_keys]
        _unreadable(readable, graph, graph_ids)
        code, code_keys = spans.intern(columns.code_start, columns.code_stop)
        for key in code_keys:
            if key not in self._frames:
                self._frames[key] = _frames(key)
        _unreadable(readable, code, [self._frames[key] for key in code_keys])
        return Block(
            columns, starts, lengths, readable, op, op_types, graph, graph_ids, code, code_keys
        )

    def rows(self, block: Block, begin: int, end: int, first: int, base: int) -> Rows:
        """Readable records ``begin..end-1`` of ``block`` as executions ``first..``;
        ``base`` is the file offset of the block's data. Numbers their new stacks,
        graphs and calls (`Ids`), in record order."""
        columns, ids = block.columns, self.ids
        op_types, op = _in_order(block.op[begin:end], block.op_types)
        definitions = []
        for key in _first_seen(block.code[begin:end]):
            frames = self._frames[block.code_locations[key]]
            _, stack = ids.stack(frames or ())
            if stack is not None:
                definitions.append(stack)
        graph = block.graph[begin:end]
        has_graph = graph >= 0
        if has_graph.any():
            numbers = np.full(len(block.graph_ids), -1, dtype=np.int64)
            for key in _first_seen(graph[has_graph]):
                numbers[key] = ids.graph(block.graph_ids[key] or "")
            definitions.extend(_function_graphs(numbers[graph], op, op_types))
        for function, positions in _calls(op, op_types):
            ids.add_calls(function, first + positions)
        o0, o1 = int(columns.out_start[begin]), int(columns.out_start[end])
        summaries = columns.summaries
        if summaries is not None:
            summaries = with_magnitudes(self.mode, summaries[o0:o1], None)
        record_starts = base + block.starts[begin:end]
        return Rows(
            first=first,
            op_types=op_types,
            op=op,
            has_graph=has_graph,
            starts=record_starts - HEADER_BYTES,
            ends=record_starts + block.lengths[begin:end] + FOOTER_BYTES,
            out_start=columns.out_start[begin : end + 1] - o0,
            out=columns.out_ids[o0:o1],
            summaries=summaries,
            has_summary=columns.has_summary[o0:o1],
            times=columns.times[begin:end],
            definitions=definitions,
        )


def _text(key: bytes) -> str | None:
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _frames(code_location: bytes) -> tuple[str, ...] | None:
    try:
        return tuple(CodeLocation.FromString(code_location).stack_frame_ids)
    except DecodeError:
        return None


def _unreadable(readable: np.ndarray, codes: np.ndarray, table: list[Any]) -> None:
    """Records whose code stands for None in ``table`` are not readable."""
    bad = [code for code, value in enumerate(table) if value is None]
    if bad:
        readable[np.isin(codes, bad)] = False


def _first_seen(codes: np.ndarray) -> list[int]:
    """The distinct ``codes`` in the order first seen."""
    distinct, first = np.unique(codes, return_index=True)
    return distinct[np.argsort(first)].tolist()


def _in_order(codes: np.ndarray, table: list[str | None]) -> tuple[list[str], np.ndarray]:
    """The entries of ``table`` that ``codes`` use, in the order first seen (as the
    index would intern them a record at a time), and ``codes`` into that list."""
    used = _first_seen(codes)
    position = np.zeros(len(table), dtype=np.int64)
    position[used] = np.arange(len(used))
    return [table[code] or "" for code in used], position[codes]


def _function_graphs(
    graphs: np.ndarray, op: np.ndarray, op_types: list[str]
) -> list[dict[str, Any]]:
    """The graph updates the function calls among these executions bring (their graph
    is a function's, `events.execution_record`): one per graph and function, in the
    order of their last call, so the last call's function is the graph's."""
    calls = np.array([fmt.is_function_call(t) for t in op_types], dtype=bool)[op] & (graphs >= 0)
    if not calls.any():
        return []
    pairs = graphs[calls] * len(op_types) + op[calls]
    distinct, from_end = np.unique(pairs[::-1], return_index=True)
    return [
        function_name_record(int(pair) // len(op_types), op_types[int(pair) % len(op_types)])
        for pair in distinct[np.argsort(-from_end)].tolist()
    ]


def _calls(op: np.ndarray, op_types: list[str]) -> Iterator[tuple[str, np.ndarray]]:
    """(step function, positions of its calls) among these executions."""
    functions: dict[str, list[int]] = {}
    for code, op_type in enumerate(op_types):
        function = fmt.step_function_name(op_type)
        if function is not None:
            functions.setdefault(function, []).append(code)
    for function, codes in functions.items():
        yield function, np.flatnonzero(np.isin(op, codes))
