"""The values a root-cause op read and made, as stored: what the proof reruns.

A FULL_TENSOR dump keeps every traced tensor's value; the root cause's inputs are the
values its op read (`reader.analysis.hunt.inputs`: a graph op's latest input traces
before its own, an eager op's producers). In any other mode the dump keeps summaries
only, and `CulpritValues.missing` says in one line which mode would keep the values.
One home for reading them: the proof, `tfdbg-tui repro` and ``on_alert="pdb"``'s
``culprit`` all take them from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from reader import format as fmt
from reader.errors import DumpError
from reader.model import RootCause

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

# What a run without values is told: the mode and the routes that record them.
VALUES_MODE_HINT = (
    "record in FULL_TENSOR (`tfdbg-tui run --mode FULL_TENSOR`, or "
    'enable_dump_debug_info(..., tensor_debug_mode="FULL_TENSOR")) to keep them'
)


@dataclass(frozen=True)
class StoredTensor:
    """One tensor of the culprit: its name (``op:slot``), recorded dtype and value.

    Attributes:
        name: The tensor's name as the dump gives it.
        dtype: Its dtype name ("float32", "bfloat16"): a graph tensor's as its op
            declares it, else its summary's; None when unknown.
        value: Its stored value, or None when the dump keeps none.
    """

    name: str
    dtype: str | None
    value: np.ndarray | None


@dataclass(frozen=True)
class CulpritValues:
    """The root cause's op with the values it read and made, or why there are none.

    Attributes:
        op_type: The op's type ("Log").
        op_name: Its name in its graph, or None for an eager op.
        inputs: Each input, in the op's order.
        output: The output that went non-finite.
        compiled: Whether the op ran inside an XLA-compiled function.
        missing: Why the values cannot be rerun (one line), or None when they can.
    """

    op_type: str
    op_name: str | None
    inputs: tuple[StoredTensor, ...]
    output: StoredTensor
    compiled: bool
    missing: str | None

    @property
    def complete(self) -> bool:
        """Whether every input's value is stored (the op can be rerun)."""
        return self.missing is None


def culprit_values(reader: AnalysedRun, cause: RootCause) -> CulpritValues:
    """The stored values of ``cause``'s op: its inputs and its non-finite output."""
    alert = cause.alert
    graph = alert.kind == "graph"
    mode = reader.metadata.tensor_debug_mode
    full = mode == fmt.FULL_TENSOR
    missing = None
    if not full:
        missing = f"no values: this run recorded {mode} summaries only; {VALUES_MODE_HINT}"
    inputs = []
    for (ref, summary), index in zip(cause.inputs, cause.input_indices):
        value = None
        if full and index is not None:
            value = _value(reader, graph, index, ref.slot)
        if full and value is None and missing is None:
            missing = (
                f"no value of input {ref.name}: the dump keeps none for it "
                "(made outside the recorded ops)"
            )
        dtype = _declared_dtype(reader, ref.op_id, ref.slot) if graph else None
        inputs.append(StoredTensor(ref.name, dtype or (summary.dtype if summary else None), value))
    output_summary = (
        cause.trace.summary
        if cause.trace is not None
        else (cause.execution.summary(alert.slot) if cause.execution is not None else None)
    )
    declared = None
    if graph and cause.op is not None and 0 <= alert.slot < len(cause.op.output_dtypes):
        declared = cause.op.output_dtypes[alert.slot]
    output = StoredTensor(
        alert.tensor_name,
        declared or (output_summary.dtype if output_summary else None),
        _value(reader, graph, alert.index, alert.slot) if full else None,
    )
    if missing is None and not inputs:
        missing = f"{alert.op_type} has no inputs to rerun it on"
    return CulpritValues(
        alert.op_type,
        alert.op_name if graph else None,
        tuple(inputs),
        output,
        graph and _compiled(reader, cause),
        missing,
    )


def _declared_dtype(reader: AnalysedRun, op_id: int | None, slot: int) -> str | None:
    """A graph tensor's dtype as its op declares it (a bfloat16 value is stored, and
    summarised, as float32)."""
    if op_id is None:
        return None
    try:
        dtypes = reader.op(op_id).output_dtypes
    except DumpError:
        return None
    return dtypes[slot] if 0 <= slot < len(dtypes) else None


def _value(reader: AnalysedRun, graph: bool, index: int, slot: int) -> np.ndarray | None:
    try:
        return reader.trace_value(index) if graph else reader.execution_value(index, slot)
    except DumpError:
        return None


def _compiled(reader: AnalysedRun, cause: RootCause) -> bool:
    """Whether the op's graph, or a graph around it, is a function the writer said was
    compiled with XLA (its ``xla_traced`` notice)."""
    compiled = {
        str(n.details.get("function"))
        for n in reader.notices()
        if n.kind == fmt.NOTICE_XLA_TRACED and n.details.get("function")
    }
    if not compiled or cause.op is None:
        return False
    graph_id: int | None = cause.op.graph_id
    seen: set[int] = set()
    while graph_id is not None and graph_id not in seen:
        seen.add(graph_id)
        try:
            graph = reader.graph(graph_id)
        except DumpError:
            return False
        if graph.name in compiled or graph.function_name in compiled:
            return True
        graph_id = graph.outer_id
    return False
