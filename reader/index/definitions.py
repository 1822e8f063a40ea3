"""Definitions of a run: devices, source files, frames, stacks, graphs, ops, trace
points (small tuples; objects built on demand), and which paths are library code.

Definitions are few next to executions and traces, so they are kept as small raw
tuples and dicts. The value objects (`Op`, `Frame`) are built when asked for, so a
reference to something not read yet resolves by itself once its definition arrives.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from reader import format as fmt
from reader.contract import (
    KIND_KEY,
    DeviceRecord,
    FileRecord,
    FrameRecord,
    GraphRecord,
    OpRecord,
    StackRecord,
)
from reader.errors import MalformedRecordError, UnknownIdError
from reader.index.columns import Column
from reader.limits import (
    DENSE_SLACK,
    MAX_LAYER_CHARS,
    MAX_OP_OUTPUTS,
    MAX_TRACE_POINT,
    is_id,
    is_int,
    is_opt_ref,
)
from reader.model import Frame, Graph, Op, SourceFile, TensorRef

# Paths of code the user did not write, for a file record without the writer's
# `library` flag. The flag, where recorded, wins: the writer knows its own install
# prefixes, and a user's checkout may well sit under a path holding `/keras/` or
# `/instrument/`.
_LIBRARY_PATH = re.compile(
    r"[\\/](site-packages|dist-packages)[\\/]"
    r"|[\\/]lib[\\/]python\d+(\.\d+)?[\\/]"
    r"|[\\/]Lib[\\/]"
    r"|[\\/](tensorflow|tensorflow_core|keras|tf_keras)[\\/]"
    r"|^<frozen "
    # AutoGraph's converted code (a tf.function's body, a MirroredStrategy replica
    # function): the writer maps its frames back to the user's lines; one it could not
    # map is generated code, never what the user wrote.
    r"|[\\/]__autograph_generated_file[^\\/]*\.py$"
)
# Our own instrumentation: the modules of the `instrument` package itself and of its
# sub-packages, not its example programs (which stand in for user code) nor a user's
# own files under some other directory called `instrument` (a/instrument/programs/train.py).
_INSTRUMENT_PATH = re.compile(
    r"[\\/]instrument[\\/](?:(?:dump|repro|summaries|tf_internals|tracing|watch)[\\/])?[A-Za-z_][A-Za-z0-9_]*\.py$"
)


def is_library_path(path: str) -> bool:
    """True for Python's own files, site-packages, TensorFlow, Keras, `instrument` and
    AutoGraph's generated files."""
    return bool(_LIBRARY_PATH.search(path) or _INSTRUMENT_PATH.search(path))


def is_library_file(record: dict[str, Any], path: str) -> bool:
    """Whether a ``file`` record is library code: its ``library`` flag when recorded,
    else `is_library_path`."""
    flag = record.get(FileRecord.LIBRARY)
    return flag if isinstance(flag, bool) else is_library_path(path)


def _opt_int(value: Any) -> bool:
    return is_opt_ref(value)


def _trace_point_ok(value: Any) -> bool:
    """None (an untraced output), or an int a ``traces`` chunk's int32 ``tp`` can hold
    (a negative one means untraced)."""
    return value is None or (is_int(value) and -MAX_TRACE_POINT - 1 <= value <= MAX_TRACE_POINT)


def _opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _span(record: dict[str, Any], line: int) -> tuple[int | None, int | None, int | None]:
    """A frame's expression span (format 1.1); (None, None, None) when absent or unusable."""
    column, end_line, end_column = (
        record.get(FrameRecord.COLUMN),
        record.get(FrameRecord.END_LINE, line),
        record.get(FrameRecord.END_COLUMN),
    )
    if (
        is_int(column)
        and is_int(end_line)
        and is_int(end_column)
        and column >= 0
        and (end_line > line or (end_line == line and end_column > column))
    ):
        return column, end_line, end_column
    return None, None, None


def parse_tensor_name(name: str) -> tuple[str, int]:
    """Split ``"op_name:slot"``; a name without a numeric slot is slot 0."""
    op_name, sep, slot = name.rpartition(":")
    if sep and slot.isdigit():
        return op_name, int(slot)
    return name, 0


class Definitions:
    """Every definition read so far, with lookups by id and by name."""

    def __init__(self) -> None:
        self.devices: dict[int, str] = {}
        self.files: dict[int, SourceFile] = {}
        # id -> (file id, line, function, column, end line, end column)
        self.frames: dict[int, tuple[int, int, str, int | None, int | None, int | None]] = {}
        self.stacks: dict[int, tuple[int, ...]] = {}
        self._graphs: dict[int, dict[str, Any]] = {}
        self._ops: dict[int, dict[str, Any]] = {}
        self._op_ids_by_name: dict[tuple[int, str], int] = {}
        # (graph id, producer op name) -> [(consumer op id, input index, producer slot)]
        self._consumers: dict[tuple[int, str], list[tuple[int, int, int]]] = {}
        self._op_cache: dict[int, Op] = {}
        self.tp_op = Column(np.int64)  # trace point id -> op id, -1 while undefined
        self.tp_slot = Column(np.int32)
        # Trace points whose ids are too far past those defined for the dense columns
        # (`limits.DENSE_SLACK`): id -> (op id, slot). Empty for a writer's dumps.
        self.sparse_tps: dict[int, tuple[int, int]] = {}
        self._num_tps = 0

    # -- reading -----------------------------------------------------------------------

    def add(self, record: dict[str, Any]) -> str | None:
        """Take one definition record; returns its kind, or None for a kind not ours.

        Raises:
            MalformedRecordError: The record's fields have the wrong types.
        """
        kind = record[KIND_KEY]
        if kind not in (
            fmt.KIND_DEVICE,
            fmt.KIND_FILE,
            fmt.KIND_FRAME,
            fmt.KIND_STACK,
            fmt.KIND_GRAPH,
            fmt.KIND_OP,
        ):
            return None
        ident = record.get(DeviceRecord.ID)
        if not is_id(ident):
            raise MalformedRecordError(f"a {kind} record without an integer id in range")
        if kind == fmt.KIND_DEVICE:
            name = record.get(DeviceRecord.NAME)
            if not isinstance(name, str):
                raise MalformedRecordError(f"device {ident} without a name")
            self.devices[ident] = name
        elif kind == fmt.KIND_FILE:
            self._add_file(ident, record)
        elif kind == fmt.KIND_FRAME:
            file_id, line, func = (
                record.get(FrameRecord.FILE),
                record.get(FrameRecord.LINE),
                record.get(FrameRecord.FUNCTION),
            )
            if (
                func is None and FrameRecord.FUNCTION in record
            ):  # a lambda, by earlier writers (format.md)
                func = "<lambda>"
            if not (is_int(file_id) and is_int(line) and isinstance(func, str)):
                raise MalformedRecordError(f"frame {ident} with a bad file, line or func")
            self.frames[ident] = (file_id, line, func, *_span(record, line))
        elif kind == fmt.KIND_STACK:
            frames = record.get(StackRecord.FRAMES)
            if not isinstance(frames, list) or not all(is_int(f) for f in frames):
                raise MalformedRecordError(f"stack {ident} with bad frames")
            self.stacks[ident] = tuple(frames)
        elif kind == fmt.KIND_GRAPH:
            self._add_graph(ident, record)
        elif kind == fmt.KIND_OP:
            self._add_op(ident, record)
        else:
            return None
        return kind

    def _add_file(self, ident: int, record: dict[str, Any]) -> None:
        path, lines = record.get(FileRecord.PATH), record.get(FileRecord.LINES)
        lines_ok = lines is None or (
            isinstance(lines, list) and all(isinstance(x, str) for x in lines)
        )
        if not isinstance(path, str) or not lines_ok:
            raise MalformedRecordError(f"source file {ident} with a bad path or lines")
        host, omitted = record.get(FileRecord.HOST), record.get(FileRecord.OMITTED)
        self.files[ident] = SourceFile(
            id=ident,
            path=path,
            host=host if isinstance(host, str) else None,
            lines=tuple(lines) if lines is not None else None,
            is_library=is_library_file(record, path),
            omitted=omitted if isinstance(omitted, str) else None,
        )

    def _add_graph(self, ident: int, record: dict[str, Any]) -> None:
        name, outer, function = GraphRecord.NAME, GraphRecord.OUTER, GraphRecord.FUNCTION
        fields: dict[str, Any] = {
            key: record[key] for key in (name, outer, function) if key in record
        }
        if not (
            _opt_str(fields.get(name))
            and _opt_int(fields.get(outer))
            and _opt_str(fields.get(function))
        ):
            raise MalformedRecordError(f"graph {ident} with a bad name, outer or function")
        merged = self._graphs.setdefault(ident, {name: None, outer: None, function: None})
        if record.get(GraphRecord.UPDATE):
            # An update only adds what is set; it never erases a known field.
            merged.update({k: v for k, v in fields.items() if v is not None})
        else:
            merged.update(fields)

    def _add_op(self, ident: int, record: dict[str, Any]) -> None:
        graph, op_type, name = (
            record.get(OpRecord.GRAPH),
            record.get(OpRecord.TYPE),
            record.get(OpRecord.NAME),
        )
        inputs, tps = record.get(OpRecord.INPUTS), record.get(OpRecord.TRACE_POINTS)
        dtypes = record.get(OpRecord.DTYPES, [])
        if not (
            is_id(graph)
            and isinstance(op_type, str)
            and isinstance(name, str)
            and isinstance(inputs, list)
            and all(isinstance(x, str) for x in inputs)
            and isinstance(tps, list)
            and all(_trace_point_ok(t) for t in tps)
            and isinstance(dtypes, list)
            and all(is_int(d) for d in dtypes)
            and _opt_int(record.get(OpRecord.DEVICE))
            and _opt_int(record.get(OpRecord.STACK))
            and is_int(num_outputs := record.get(OpRecord.NUM_OUTPUTS, 0))
            and 0 <= num_outputs <= MAX_OP_OUTPUTS
        ):
            raise MalformedRecordError(f"op {ident} with fields of the wrong type")
        self._ops[ident] = record
        self._op_cache.pop(ident, None)
        self._op_ids_by_name[(graph, name)] = ident
        for position, tensor in enumerate(inputs):
            producer, slot = parse_tensor_name(tensor.lstrip("^"))
            self._consumers.setdefault((graph, producer), []).append((ident, position, slot))
        for slot, tp in enumerate(tps):
            if tp is None or tp < 0:
                continue
            self._num_tps += 1
            if tp >= self._num_tps + DENSE_SLACK and tp >= self.tp_op.size:
                # Far past the ids defined so far: a map, not a table of its size.
                self.sparse_tps[tp] = (ident, slot)
                continue
            self.sparse_tps.pop(tp, None)
            if tp >= self.tp_op.size:
                missing = tp + 1 - self.tp_op.size
                self.tp_op.extend(np.full(missing, -1, dtype=np.int64))
                self.tp_slot.extend(np.full(missing, -1, dtype=np.int32))
            self.tp_op.view[tp] = ident
            self.tp_slot.view[tp] = slot

    # -- lookups -----------------------------------------------------------------------

    def device_name(self, device_id: Any) -> str | None:
        """A device's name; None for no device or one not read yet."""
        return self.devices.get(device_id) if is_int(device_id) else None

    def graph(self, graph_id: int) -> Graph:
        """A graph by id; raises `UnknownIdError` when not defined (yet)."""
        fields = self._graphs.get(graph_id)
        if fields is None:
            raise UnknownIdError(f"graph {graph_id} is not defined in this dump (yet)")
        return Graph(
            id=graph_id,
            name=fields.get(GraphRecord.NAME),
            outer_id=fields.get(GraphRecord.OUTER),
            function_name=fields.get(GraphRecord.FUNCTION),
        )

    def graph_ids(self) -> list[int]:
        """Ids of every graph read, ascending."""
        return sorted(self._graphs)

    @property
    def num_graphs(self) -> int:
        return len(self._graphs)

    @property
    def num_ops(self) -> int:
        return len(self._ops)

    def op_ids(self) -> list[int]:
        """Ids of every op read, ascending."""
        return sorted(self._ops)

    def has_op(self, op_id: int) -> bool:
        return op_id in self._ops

    def op(self, op_id: int) -> Op:
        """An op by id, its inputs resolved as far as the definitions read allow."""
        cached = self._op_cache.get(op_id)
        if cached is not None:
            return cached
        record = self._ops.get(op_id)
        if record is None:
            raise UnknownIdError(f"op {op_id} is not defined in this dump (yet)")
        graph = record[OpRecord.GRAPH]
        refs = []
        for tensor in record[OpRecord.INPUTS]:
            producer, slot = parse_tensor_name(tensor.lstrip("^"))
            refs.append(
                TensorRef(name=tensor, op_id=self._op_ids_by_name.get((graph, producer)), slot=slot)
            )
        device_id = record.get(OpRecord.DEVICE)
        op = Op(
            id=op_id,
            graph_id=graph,
            op_type=record[OpRecord.TYPE],
            name=record[OpRecord.NAME],
            inputs=tuple(refs),
            num_outputs=int(record.get(OpRecord.NUM_OUTPUTS, len(record[OpRecord.TRACE_POINTS]))),
            output_dtypes=tuple(
                fmt.DTYPE_NAMES.get(d, f"dtype{d}") for d in record.get(OpRecord.DTYPES, [])
            ),
            device=self.device_name(device_id),
            stack_id=record.get(OpRecord.STACK),
            trace_points=tuple(record[OpRecord.TRACE_POINTS]),
            layer=_name(record.get(OpRecord.LAYER)),
            variable=_name(record.get(OpRecord.VARIABLE)),
            constant_nan=record.get(OpRecord.CONSTANT_NAN) is True,
        )
        # Cache only what can no longer change: every reference resolved.
        if all(r.op_id is not None for r in refs) and (device_id is None or op.device is not None):
            self._op_cache[op_id] = op
        return op

    def op_id_by_name(self, graph_id: int, name: str) -> int | None:
        return self._op_ids_by_name.get((graph_id, name))

    def consumers(self, op_id: int) -> list[tuple[Op, int]]:
        """(consumer op, input index) for every op reading an output of ``op_id``."""
        op = self.op(op_id)
        found = self._consumers.get((op.graph_id, op.name), [])
        return [(self.op(consumer), position) for consumer, position, _ in found]

    def trace_point(self, tp: int) -> tuple[int | None, int]:
        """(op id, slot) of a trace point; (None, -1) while its op is not read."""
        if 0 <= tp < self.tp_op.size:
            op_id = int(self.tp_op.view[tp])
            if op_id >= 0:
                return op_id, int(self.tp_slot.view[tp])
        return self.sparse_tps.get(tp, (None, -1))

    def traced_op_ids(self) -> list[int]:
        """Ids of the ops with a trace point, ascending."""
        ids = set(np.unique(self.tp_op.view).tolist())
        ids.update(op_id for op_id, _ in self.sparse_tps.values())
        ids.discard(-1)
        return sorted(ids)

    def trace_points_of(self, op_ids: list[int]) -> np.ndarray:
        """The trace points of the ops ``op_ids``, ascending (int64)."""
        dense = np.flatnonzero(np.isin(self.tp_op.view, op_ids))
        wanted = set(op_ids)
        sparse = [tp for tp, (op_id, _) in self.sparse_tps.items() if op_id in wanted]
        return np.union1d(dense, np.array(sparse, dtype=np.int64)) if sparse else dense

    def source_file(self, file_id: int) -> SourceFile:
        found = self.files.get(file_id)
        if found is None:
            raise UnknownIdError(f"source file {file_id} is not defined in this dump (yet)")
        return found

    def frame(self, frame_id: int) -> Frame:
        """A frame; one not read yet (or of an unread file) is a placeholder."""
        known = self.frames.get(frame_id)
        if known is None:
            return Frame(
                id=frame_id,
                file_id=-1,
                path=f"<frame {frame_id} not read yet>",
                line=0,
                function="?",
                is_user=False,
            )
        file_id, line, function, column, end_line, end_column = known
        source = self.files.get(file_id)
        if source is None:
            return Frame(
                id=frame_id,
                file_id=file_id,
                path=f"<file {file_id} not read yet>",
                line=line,
                function=function,
                is_user=False,
            )
        return Frame(
            id=frame_id,
            file_id=file_id,
            path=source.path,
            line=line,
            function=function,
            is_user=not source.is_library,
            column=column,
            end_line=end_line,
            end_column=end_column,
        )

    def stack(self, stack_id: int) -> list[Frame]:
        """A stack's frames, outermost first."""
        frames = self.stacks.get(stack_id)
        if frames is None:
            raise UnknownIdError(f"stack {stack_id} is not defined in this dump (yet)")
        return [self.frame(f) for f in frames]

    def line_text(self, frame: Frame) -> str | None:
        """The frame's line from its file's snapshot, or None."""
        source = self.files.get(frame.file_id)
        if source is None or source.lines is None or not 1 <= frame.line <= len(source.lines):
            return None
        return source.lines[frame.line - 1]


def _name(value: object) -> str | None:
    """An op record's ``layer`` or ``var``: a name of at most `MAX_LAYER_CHARS`
    characters, or None."""
    if isinstance(value, str) and 0 < len(value) <= MAX_LAYER_CHARS:
        return value
    return None
