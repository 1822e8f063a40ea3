"""The definitions' kinds (`FileRecord`, `FrameRecord`, `StackRecord`, `GraphRecord`,
`OpRecord`): source files, stack frames, stacks, graphs and ops, each written once
with an id before anything refers to it (docs/format.md section 4)."""

from __future__ import annotations

from typing import Final

from reader.contract.fields import RecordKind, field


class FileRecord(RecordKind):
    """A source file and the snapshot of its lines (source_files stream)."""

    KIND = "file"
    ID: Final = field("id", int, "file id")
    PATH: Final = field("path", str, "absolute, as the frames name it")
    HOST: Final = field("host", str, "the host it was read on")
    LIBRARY: Final = field("library", bool, "Python's, a library's or the dumper's own")
    LINES: Final = field("lines", list, "its lines without line ends", nullable=True)
    OMITTED: Final = field("omitted", str, "why lines is nil", nullable=True)


class FrameRecord(RecordKind):
    """One stack frame: a line of a file, and the expression it was running."""

    KIND = "frame"
    ID: Final = field("id", int, "frame id")
    FILE: Final = field("file", int, "file id")
    LINE: Final = field("line", int, "1-based line")
    FUNCTION: Final = field("func", str, "the function's name (nil: a lambda)", nullable=True)
    COLUMN: Final = field("col", int, "0-based column where the expression starts", since=(1, 1))
    END_LINE: Final = field("end_line", int, "1-based line where it ends", since=(1, 1))
    END_COLUMN: Final = field("end_col", int, "0-based column just past its end", since=(1, 1))


class StackRecord(RecordKind):
    """A stack: frame ids from the outermost call to the innermost."""

    KIND = "stack"
    ID: Final = field("id", int, "stack id")
    FRAMES: Final = field("frames", list, "frame ids, outermost first")


class GraphRecord(RecordKind):
    """A graph (a FuncGraph, a while or cond body, a TF1 graph); written again with
    ``update`` to add the function name its eager calls carry."""

    KIND = "graph"
    ID: Final = field("id", int, "graph id")
    NAME: Final = field("name", str, "the FuncGraph's name", nullable=True)
    OUTER: Final = field("outer", int, "the enclosing graph's id", nullable=True)
    FUNCTION: Final = field("function", str, "the name its eager calls carry", nullable=True)
    UPDATE: Final = field("update", bool, "adds keys to a graph already written")


class OpRecord(RecordKind):
    """An op created while a graph was built (graphs stream)."""

    KIND = "op"
    ID: Final = field("id", int, "op id")
    GRAPH: Final = field("graph", int, "graph id")
    TYPE: Final = field("type", str, "op type")
    NAME: Final = field("name", str, "op name, unique in its graph")
    INPUTS: Final = field("inputs", list, 'input tensor names, "<op name>:<slot>"')
    NUM_OUTPUTS: Final = field("num_outputs", int, "outputs")
    DTYPES: Final = field("dtypes", list, "TF DataType enum of each output")
    DEVICE: Final = field("device", int, "device id of its placement", nullable=True)
    STACK: Final = field("stack", int, "stack id of its creation", nullable=True)
    TRACE_POINTS: Final = field("tps", list, "per output slot, its trace point id or nil")
    LAYER: Final = field("layer", str, "the Keras layer whose call built it", since=(2, 2))
    CONSTANT_NAN: Final = field("cnan", bool, "a Const whose value holds a NaN", since=(2, 6))
    VARIABLE: Final = field("var", str, "the variable it reads or writes", since=(2, 4))
