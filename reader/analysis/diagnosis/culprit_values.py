"""The values a root-cause op read and made, as stored: what the proof reruns.

A FULL_TENSOR dump keeps every traced tensor's value; the root cause's inputs are the
values its op read (`reader.analysis.hunt.inputs`: a graph op's latest input traces
before its own, an eager op's producers). The replay of a watched step records
FULL_HEALTH, and keeps its root cause's values in a values replay beside it
(`reader.run.watch_pair.replay_values_path`), read here as if the replay held them. In
any other case the dump keeps summaries only, and `CulpritValues.missing` says in one
line how to keep the values. One home for reading them: the proof, `tfdbg-tui repro`,
`report --json`, the diagnosis view and ``on_alert="pdb"``'s ``culprit`` all take them
from here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from reader import format as fmt
from reader.errors import DumpError
from reader.model import Alert, RootCause

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

# What a run without values is told: the mode and the routes that record them.
VALUES_MODE_HINT = (
    "record in FULL_TENSOR (`tfdbg-tui run --mode FULL_TENSOR`, or "
    'enable_dump_debug_info(..., tensor_debug_mode="FULL_TENSOR")) to keep them'
)
# What it is told when the op ran compiled with XLA: FULL_TENSOR records no value
# inside an XLA-compiled function (the writer's `xla_untraced` notice), so the values
# need the function run without XLA.
VALUES_XLA_HINT = (
    "the op ran compiled with XLA, where FULL_TENSOR records no values: record in "
    "FULL_TENSOR with the function not compiled (jit_compile=False) to keep them"
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
        origin: Where the values were kept, in words ("FULL_TENSOR", "the replay's
            values run <id>"), or None when none were.
    """

    op_type: str
    op_name: str | None
    inputs: tuple[StoredTensor, ...]
    output: StoredTensor
    compiled: bool
    missing: str | None
    origin: str | None = None

    @property
    def complete(self) -> bool:
        """Whether every input's value is stored (the op can be rerun)."""
        return self.missing is None

    @property
    def kept(self) -> bool:
        """Whether any of the op's values is kept (an input's or the output's)."""
        return any(t.value is not None for t in (*self.inputs, self.output))

    def with_values(
        self, inputs: list[np.ndarray | None], output: np.ndarray | None, origin: str
    ) -> CulpritValues:
        """These values with the ones held elsewhere (the eager op's own tensors, which
        ``on_alert="pdb"`` has at hand) filling those the dump does not keep."""
        merged = tuple(
            t if t.value is not None or held is None else dataclasses.replace(t, value=held)
            for t, held in zip(self.inputs, [*inputs, *[None] * len(self.inputs)])
        )
        out = (
            self.output
            if self.output.value is not None or output is None
            else dataclasses.replace(self.output, value=output)
        )
        lacking = [t.name for t in merged if t.value is None]
        missing = None
        if lacking:
            missing = f"no value of input {lacking[0]}: neither the dump nor the op's call kept one"
        elif not merged:
            missing = f"{self.op_type} has no inputs to rerun it on"
        return dataclasses.replace(
            self, inputs=merged, output=out, missing=missing, origin=self.origin or origin
        )

    def as_dict(self) -> dict[str, Any]:
        """``report --json``'s ``first_alert.values``: where they were kept, why any is
        missing, and each tensor (`tensor_dict`)."""
        return {
            "origin": self.origin,
            "missing": self.missing,
            "inputs": [tensor_dict(t) for t in self.inputs],
            "output": tensor_dict(self.output),
        }

    def lines(self) -> list[str]:
        """One line per tensor: the inputs, then the output, each with its value in
        short (`value_preview`) or "no value"."""
        lines = []
        for role, tensor in [*(("input", t) for t in self.inputs), ("output", self.output)]:
            value = "no value" if tensor.value is None else value_preview(tensor.value)
            dtype = f" ({tensor.dtype})" if tensor.dtype else ""
            lines.append(f"{role} {tensor.name}{dtype}: {value}")
        return lines


# A tensor's elements in `report --json` up to this many; a larger value is left out
# (its shape is given, and `reader` reads it whole from the run that keeps it).
JSON_ELEMENTS = 4096


def tensor_dict(tensor: StoredTensor) -> dict[str, Any]:
    """A stored tensor for JSON: ``name``, ``dtype``, ``shape`` (null without a value)
    and ``value`` (nested lists; null without one, or past `JSON_ELEMENTS`)."""
    value = tensor.value
    shown = value is not None and value.size <= JSON_ELEMENTS and value.dtype.kind in "biufc"
    return {
        "name": tensor.name,
        "dtype": tensor.dtype,
        "shape": None if value is None else list(value.shape),
        "value": _plain(value) if shown and value is not None else None,
    }


def _plain(value: np.ndarray) -> Any:
    """Nested lists of Python numbers (complex values as [real, imaginary] pairs)."""
    if value.dtype.kind == "c":
        return np.stack([value.real, value.imag], axis=-1).tolist()
    if value.dtype.kind == "f":
        return value.astype(np.float64).tolist()  # bfloat16 and float16 too
    return value.tolist()


def value_preview(value: np.ndarray) -> str:
    """A value on one line: its shape, then its elements in short (the first and last
    three of each axis past 12)."""
    array = np.asarray(value)
    shape = "x".join(str(d) for d in array.shape) or "scalar"
    if array.dtype.name == "bfloat16" or (array.dtype.kind == "f" and array.dtype.itemsize < 4):
        array = array.astype(np.float32)  # printed as float32 is
    text = np.array2string(array, threshold=12, edgeitems=3, max_line_width=10**6)
    return f"[{shape}] " + " ".join(text.split())


def culprit_values(reader: AnalysedRun, cause: RootCause) -> CulpritValues:
    """The stored values of ``cause``'s op: its inputs and its non-finite output (a
    replay's from its values replay)."""
    alert = cause.alert
    graph = alert.kind == "graph"
    mode = reader.metadata.tensor_debug_mode
    full = mode == fmt.FULL_TENSOR
    missing = None
    compiled = graph and _compiled(reader, cause)
    if not full and reader.metadata.replay_of is not None:
        kept, missing = _replay_values(reader, cause)
        if kept is not None:
            return kept
    elif not full:
        hint = VALUES_XLA_HINT if compiled else VALUES_MODE_HINT
        missing = f"no values: this run recorded {mode} summaries only; {hint}"
    elif _untraced_call(reader, cause):
        missing = (
            f"no values of the ops inside {alert.op_type}: it ran compiled with XLA, where "
            "FULL_TENSOR records no values: record with the function not compiled "
            "(jit_compile=False) to keep them"
        )
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
        compiled,
        missing,
        fmt.FULL_TENSOR if full else None,
    )


def _replay_values(reader: AnalysedRun, cause: RootCause) -> tuple[CulpritValues | None, str]:
    """The values of ``cause``'s op from the values replay beside the replay ``reader``
    (docs/format.md, "The watch tier"); else None and why there are none."""
    from reader.analysis.dump_reader import DumpReader
    from reader.run.watch_pair import replay_values_path, watch_pair

    alert = cause.alert
    replay_of = reader.metadata.replay_of
    assert replay_of is not None
    if replay_of.xla:
        return None, (
            "no values: this replay ran compiled with XLA, where FULL_TENSOR traces "
            "nothing; the replay without XLA keeps them when it reproduces the hit"
        )
    none_kept = (
        f"no values: this replay recorded {reader.metadata.tensor_debug_mode} summaries, "
        "and no values replay of its root cause was kept beside it"
    )
    path = replay_values_path(reader) if alert.kind == "graph" else None
    if path is None:
        return None, none_kept
    try:
        with DumpReader(path) as values_run:
            found = _same_alert(values_run.alerts(limit_per_type=1000).alerts, alert)
            values_cause = None if found is None else values_run.root_cause(found)
            if values_cause is None:
                return None, (
                    f"no values: the values replay {values_run.metadata.run_id} holds no "
                    f"non-finite {alert.tensor_name}"
                )
            kept = culprit_values(values_run, values_cause)
            origin = f"the replay's values run {values_run.metadata.run_id}"
        # The watched step ran compiled when it was replayed with XLA too (its hit
        # names that replay): the values come from the replay without XLA, and the
        # proof reruns the op compiled, as it ran.
        pair = watch_pair(reader)
        hit = pair.log.hit if pair is not None else None
        compiled = kept.compiled or (hit is not None and hit.xla_replay_run is not None)
    except DumpError as error:
        return None, f"no values: the values replay cannot be read ({error})"
    return dataclasses.replace(kept, origin=origin, compiled=compiled), ""


def _same_alert(alerts: list[Alert], alert: Alert) -> Alert | None:
    """The first of ``alerts`` of the same graph op (name and type) and slot."""
    for other in alerts:
        if (other.kind, other.op_name, other.op_type, other.slot) == (
            "graph",
            alert.op_name,
            alert.op_type,
            alert.slot,
        ):
            return other
    return None


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


def _xla_functions(reader: AnalysedRun, kind: str) -> set[str]:
    """The functions the writer's notices of ``kind`` say were compiled with XLA
    (``xla_traced``: traced inside; ``xla_untraced``: not)."""
    return {
        str(n.details.get("function"))
        for n in reader.notices()
        if n.kind == kind and n.details.get("function")
    }


def _untraced_call(reader: AnalysedRun, cause: RootCause) -> bool:
    """Whether the root cause is a function call whose function ran compiled with XLA
    untraced (FULL_TENSOR): the op inside that made the values has none recorded."""
    call = cause.execution
    if cause.op is not None or call is None or call.graph_id is None:
        return False
    untraced = _xla_functions(reader, fmt.NOTICE_XLA_UNTRACED)
    try:
        graph = reader.graph(call.graph_id)
    except DumpError:
        return False
    return graph.name in untraced or graph.function_name in untraced


def _compiled(reader: AnalysedRun, cause: RootCause) -> bool:
    """Whether the op's graph, or a graph around it, is a function the writer said was
    compiled with XLA (its ``xla_traced`` notice)."""
    compiled = _xla_functions(reader, fmt.NOTICE_XLA_TRACED)
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
