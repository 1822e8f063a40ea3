"""The events' kinds, what happened in the order it ran: eager executions (`ExecRecord`,
then columnar `ExecsChunk`), graph execution traces (`TracesChunk`) and the
FULL_TENSOR values both hold (`ValueMap`; docs/format.md sections 4 and 6)."""

from __future__ import annotations

from typing import Final

from reader.contract.fields import FieldTable, RecordKind, field


class ExecRecord(RecordKind):
    """One eager op or eager call of a tf.function (dumps before format 2.0; the reader
    hands out an execution of an `ExecsChunk` as the ``exec`` record it stands for)."""

    KIND = "exec"
    INDEX: Final = field("i", int, "execution index")
    OP_TYPE: Final = field("op", str, "op type, or the function's name")
    GRAPH: Final = field("graph", int, "a function call's graph id", nullable=True)
    INPUTS: Final = field("in", list, "input tensor ids")
    OUTPUTS: Final = field("out", list, "output tensor ids")
    DEVICES: Final = field("dev", list, "device id of each output")
    DTYPES: Final = field("dtypes", list, "TF DataType enum of each output")
    STACK: Final = field("stack", int, "stack id of the call", nullable=True)
    TIME: Final = field("t", float, "Unix time recorded")
    THREAD: Final = field("th", str, "its thread, when not the enabling one", since=(1, 2))
    CALL: Final = field("c", int, "a function call's ordinal among its function's", since=(1, 1))
    SUMMARIES: Final = field("s", list, "per output, its summary row or nil")
    VALUES: Final = field("v", list, "FULL_TENSOR: per output, its value (`ValueMap`) or nil")
    NAMES: Final = field(
        "nm", list, "the names it carries: a variable's, a restore's keys", since=(2, 8)
    )


class ExecsChunk(RecordKind):
    """The executions between two flushes, as little-endian columns: one entry per
    execution (``n``) or per output (the sum of ``no``)."""

    KIND = "execs"
    SINCE = (2, 0)
    INDEX: Final = field("i", int, "the first execution's index")
    COUNT: Final = field("n", int, "executions")
    OP_TYPES: Final = field("ops", list, "the chunk's op types, each once")
    OP_CODES: Final = field("op", bytes, "per execution, its index into ops", column="<i4")
    GRAPH: Final = field("graph", bytes, "per execution, graph id or -1", column="<i8")
    STACK: Final = field("stack", bytes, "per execution, stack id or -1", column="<i8")
    TIME: Final = field("t", bytes, "per execution, Unix time", column="<f8")
    CALL: Final = field("c", bytes, "per execution, call ordinal or -1", column="<i8")
    THREAD_NAMES: Final = field("ths", list, "thread names")
    THREAD: Final = field("th", bytes, "per execution, index into ths or -1", column="<i4")
    NUM_INPUTS: Final = field("ni", bytes, "per execution, input count", column="<i4")
    INPUTS: Final = field("in", bytes, "input tensor ids", column="<i8")
    NUM_OUTPUTS: Final = field("no", bytes, "per execution, output count", column="<i4")
    OUTPUTS: Final = field("out", bytes, "per output, tensor id", column="<i8")
    DEVICES: Final = field("dev", bytes, "per output, device id", column="<i4")
    DTYPES: Final = field("dtypes", bytes, "per output, TF DataType enum", column="<i4")
    SUMMARY_WIDTH: Final = field("sc", int, "summary columns")
    SUMMARIES: Final = field("s", bytes, "per output, a summary row of sc", column="<f8")
    MAGNITUDES: Final = field("m", bytes, "per output, its magnitude", since=(2, 2), column="<f8")
    VALUES: Final = field("v", list, "FULL_TENSOR: per output, its value or nil")
    NAMES: Final = field("nm", list, "[row, [str]] per execution that names", since=(2, 8))


class TracesChunk(RecordKind):
    """A chunk of graph execution traces, as little-endian columns, one entry per trace."""

    KIND = "traces"
    INDEX: Final = field("i", int, "the first trace's index")
    COUNT: Final = field("n", int, "traces")
    STEP: Final = field("x", int, "the step (execution index) they ran in")
    STEP_RUNS: Final = field("xr", bytes, "(step, count) runs", since=(2, 0), column="<i8")
    TRACE_POINTS: Final = field("tp", bytes, "per trace, its trace point", column="<i4")
    SUMMARY_WIDTH: Final = field("sc", int, "summary columns")
    SUMMARIES: Final = field("s", bytes, "per trace, a summary row of sc", column="<f8")
    MAGNITUDES: Final = field("m", bytes, "per trace, its magnitude", since=(2, 2), column="<f8")
    VALUES: Final = field("v", list, "FULL_TENSOR: per trace, its value")


class ValueMap(FieldTable):
    """A FULL_TENSOR value, in an ``exec`` record's, an ``execs`` or a ``traces``
    chunk's ``v``."""

    DTYPE: Final = field("dtype", str, 'numpy dtype string ("<f4"); nil: strings', nullable=True)
    SHAPE: Final = field("shape", list, "its shape")
    CODEC: Final = field("codec", str, "how data is encoded; nil: raw", nullable=True)
    DATA: Final = field("data", bytes, "the elements", nullable=True)
    REPR: Final = field("repr", list, "strings: the element strings")
