"""The run's trends: per step, each layer's gradient, update and weight norms and its
activations' largest magnitude, from the summary rows alone.

Tensors are sorted once per dump state into **roles** by the graph around them (their
phase and Keras layer from `reader.analysis.model_place`):

- **weight**: a forward ``ReadVariableOp`` of a *trained* variable (one whose write an
  optimizer computes from a gradient), one read per variable;
- **gradient**: the gradient handed to the optimizer for a trained variable: walking
  back from the variable's write (``AssignSubVariableOp``...) through the optimizer's
  ops (``IdentityN`` by its slot, a slot variable's read to that slot's own write) to
  the nearest gradient-phase tensors;
- **update**: the value an ``AssignSub``/``AssignAdd`` write subtracts or adds: the
  weight after minus the weight before;
- **slot**: an optimizer's own variable (Adam's m and v) where the step reads it;
- **activation**: any other forward tensor made inside a layer's call; a ``Relu``'s
  output also gives the share of zero units.

A series row is a Keras layer (its path), or, for a variable read outside any layer
(a custom loop without Keras), the variable. Per row and step: norms are
``sqrt(sum of squares)`` over the row's tensors, a tensor's own from FULL_STATS
(``n (std^2 + mean^2)`` over its ``n`` finite elements); the activation's largest
magnitude is ``max(|min|, |max|)`` (FULL_STATS) or FULL_HEALTH's ``max_abs`` column
where the dump has it. A tensor holding NaN or infinity makes its cell infinite. What a
mode cannot give is NaN (FULL_HEALTH gives magnitudes and exact zeros, no norms).

Computed once per state of the dump (`DumpReader.trends`), vectorised over traces: the
per-op walk is over the graphs' ops, not over traces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from reader import format as fmt
from reader.analysis.model_place import PlaceFinder
from reader.analysis.steps import NO_STEP
from reader.errors import DumpError
from reader.summary_rows import row_columns

if TYPE_CHECKING:
    from reader.model import Op
    from reader.run.indexed_run import IndexedRun

# The series, in the order the Trends view cycles them (the first is its default).
SERIES = ("gradient_norm", "update_norm", "weight_norm", "activation_max", "slot_norm")
SERIES_TITLES = {"gradient_norm": "gradient norm", "update_norm": "update norm",
                 "weight_norm": "weight norm", "activation_max": "activation max |x|",
                 "slot_norm": "optimizer slot norm"}
_ROLES = ("none", "gradient", "update", "weight", "activation", "slot")
_ROLE_SERIES = {1: "gradient_norm", 2: "update_norm", 3: "weight_norm", 4: "activation_max",
                5: "slot_norm"}
_DELTA_WRITES = frozenset({"AssignSubVariableOp", "AssignAddVariableOp"})
_WRITES = _DELTA_WRITES | {"AssignVariableOp"}
_READS = frozenset({"ReadVariableOp"})
_NOT_ACTIVATIONS = frozenset({"ReadVariableOp", "Const", "Placeholder", "Shape", "Cast"})
# How far back from a variable's write its gradient is looked for, in ops.
_GRADIENT_DEPTH = 12
# Largest finite value per floating dtype (for `float16_headroom`).
DTYPE_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
             "float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}


@dataclass(frozen=True, eq=False)
class Trends:
    """Series over the run's steps, one row per layer (or variable).

    Attributes:
        steps: The step axis, ascending (execution indices when ``unit`` is
            "execution": a run without steps).
        unit: "step" or "execution".
        rows: Row names: Keras layer paths, or variable names outside layers.
        row_is_layer: Per row: True for a layer, False for a variable.
        series: Per name of `SERIES`: a float64 (rows, steps) array; NaN where the row
            has no such tensor in that step (or the mode cannot say), inf where one
            held NaN or infinity.
        zero_gradients: bool (rows, steps): every gradient value of the row was an
            exact zero that step (False where there was no gradient).
        relu_zero_share: float64 (rows, steps): the share of zero outputs of the row's
            ReLUs (NaN: no ReLU).
        trace_tp, trace_step, trace_magnitude, trace_dtype: Per trace on disk (in
            order): its trace point, its position on the step axis (-1: no step),
            its largest finite magnitude (NaN: unknown or not all finite) and its
            dtype enum (0: unknown), for rules over single tensors.
        mode: The dump's tensor debug mode.
    """

    steps: np.ndarray
    unit: str
    rows: tuple[str, ...]
    row_is_layer: tuple[bool, ...]
    series: dict[str, np.ndarray]
    zero_gradients: np.ndarray
    relu_zero_share: np.ndarray
    trace_tp: np.ndarray = field(repr=False)
    trace_step: np.ndarray = field(repr=False)
    trace_magnitude: np.ndarray = field(repr=False)
    trace_dtype: np.ndarray = field(repr=False)
    mode: str = fmt.FULL_STATS

    @property
    def empty(self) -> bool:
        return not self.rows or not self.steps.size

    def available(self) -> tuple[str, ...]:
        """The series with at least one value."""
        return tuple(name for name in SERIES
                     if np.isfinite(self.series[name]).any() or
                     np.isinf(self.series[name]).any())


@dataclass
class _Roles:
    """Per trace point: role code and row; the row names in model order."""

    role: dict[int, int] = field(default_factory=dict)
    row: dict[int, int] = field(default_factory=dict)
    relu: set[int] = field(default_factory=set)
    names: list[str] = field(default_factory=list)
    is_layer: list[bool] = field(default_factory=list)
    _index: dict[str, int] = field(default_factory=dict)

    def row_of(self, name: str, is_layer: bool) -> int:
        if name not in self._index:
            self._index[name] = len(self.names)
            self.names.append(name)
            self.is_layer.append(is_layer)
        return self._index[name]

    def set(self, tp: int | None, role: int, name: str, is_layer: bool) -> None:
        if tp is not None and tp not in self.role:
            self.role[tp] = role
            self.row[tp] = self.row_of(name, is_layer)


def variable_name(resource: str) -> str:
    """A variable named by its resource tensor: "dense/kernel/ReadVariableOp/resource:0"
    -> "dense/kernel"."""
    name = resource.rsplit(":", 1)[0]
    for suffix in ("/resource", "/ReadVariableOp", "/Cast", "_readvariableop_resource"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or resource


def _graph_roles(reader: IndexedRun, places: PlaceFinder, ops: list[Op], roles: _Roles) -> None:
    """Sort one graph's traced tensors into roles."""
    by_name = {op.name: op for op in ops}
    reads: dict[str, list[Op]] = {}
    writes: dict[str, list[Op]] = {}
    for op in ops:
        if op.op_type in _READS and op.inputs:
            reads.setdefault(op.inputs[0].name, []).append(op)
        elif op.op_type in _WRITES and len(op.inputs) >= 2:
            writes.setdefault(op.inputs[0].name, []).append(op)

    def phase(op: Op) -> str:
        return places.phase_of_op(op)

    def gradients_of(write: Op) -> list[tuple[Op, int]]:
        """The nearest gradient-phase tensors behind a write's value."""
        frontier = [(write.inputs[1].name.rsplit(":", 1)[0],
                     write.inputs[1].slot if write.inputs[1].slot is not None else 0)]
        seen: set[tuple[str, int]] = set()
        for _ in range(_GRADIENT_DEPTH):
            found: list[tuple[Op, int]] = []
            nxt: list[tuple[str, int]] = []
            for name, slot in frontier:
                if (name, slot) in seen or name not in by_name:
                    continue
                seen.add((name, slot))
                op = by_name[name]
                if phase(op) == "gradient":
                    found.append((op, slot))
                    continue
                if op.op_type == "IdentityN":
                    inputs = op.inputs[slot:slot + 1]
                elif op.op_type in _READS and op.inputs:
                    inputs = tuple(w.inputs[1] for w in writes.get(op.inputs[0].name, ()))
                else:
                    inputs = op.inputs
                nxt.extend((ref.name.rsplit(":", 1)[0], ref.slot or 0) for ref in inputs)
            if found:
                return found
            frontier = nxt
        return []

    layer_of_resource: dict[str, str | None] = {}
    for resource, readers in reads.items():
        forward = [op for op in readers if phase(op) == "forward"]
        if forward:
            layer_of_resource[resource] = places.of_op(forward[0]).layer
    for resource, written in writes.items():
        gradient = [g for w in written for g in gradients_of(w)]
        if resource in layer_of_resource:
            if not gradient:
                continue  # a forward-read variable no gradient writes: a metric's
            layer = layer_of_resource[resource]
            name, is_layer = (layer, True) if layer else (variable_name(resource), False)
            for op, slot in gradient:
                roles.set(op.trace_points[slot] if slot < len(op.trace_points) else None,
                          1, name, is_layer)
            for w in written:
                if w.op_type in _DELTA_WRITES:
                    producer = by_name.get(w.inputs[1].name.rsplit(":", 1)[0])
                    if producer is not None:
                        slot = w.inputs[1].slot or 0
                        roles.set(producer.trace_points[slot]
                                  if slot < len(producer.trace_points) else None,
                                  2, name, is_layer)
            first = next(op for op in reads[resource] if phase(op) == "forward")
            roles.set(first.trace_points[0] if first.trace_points else None, 3, name, is_layer)
        elif gradient and resource in reads:
            first = reads[resource][0]
            if phase(first) == "optimizer" and first.trace_points:
                roles.set(first.trace_points[0], 5, variable_name(resource), False)
    for op in ops:
        if op.op_type in _NOT_ACTIVATIONS or not op.trace_points:
            continue
        if phase(op) != "forward":
            continue
        layer = places.of_op(op).layer
        if layer is None:
            continue
        for tp in op.trace_points:
            roles.set(tp, 4, layer, True)
            if op.op_type == "Relu" and tp is not None:
                roles.relu.add(tp)


def _assign_roles(reader: IndexedRun) -> _Roles:
    """Every graph's roles, the rows in model order (by their first trace point)."""
    roles = _Roles()
    places = PlaceFinder(reader)
    for graph in reader.graphs():
        try:
            ops = reader.graph_ops(graph.id)
        except DumpError:
            continue
        if any(tp is not None for op in ops for tp in op.trace_points):
            _graph_roles(reader, places, ops, roles)
    first = [min((tp for tp, row in roles.row.items() if row == r), default=0)
             for r in range(len(roles.names))]
    order = sorted(range(len(roles.names)), key=lambda r: first[r])
    new_row = {old: new for new, old in enumerate(order)}
    ordered = _Roles(role=roles.role, row={tp: new_row[r] for tp, r in roles.row.items()},
                     relu=roles.relu)
    for r in order:
        ordered.row_of(roles.names[r], roles.is_layer[r])
    return ordered


@dataclass(frozen=True, slots=True)
class _Measures:
    """What the series and rules need of each trace, from its summary row."""

    norm2: np.ndarray  # float64 squared L2 norm of the finite elements; inf: non-finite
    magnitude: np.ndarray  # float64 largest finite |x|; NaN: unknown or non-finite
    nonfinite: np.ndarray  # bool
    all_zero: np.ndarray  # bool: every element exactly 0
    zero_share: np.ndarray  # float32 share of exact zeros (NaN: unknown)
    dtype: np.ndarray  # int8 TensorFlow dtype enum (0: unknown)

    @staticmethod
    def join(parts: list[_Measures], n: int) -> _Measures:
        if not parts:
            nan = np.full(n, np.nan)
            return _Measures(nan, nan.copy(), np.zeros(n, bool), np.zeros(n, bool),
                             np.full(n, np.nan, np.float32), np.zeros(n, np.int8))
        return _Measures(*(np.concatenate([getattr(p, f) for p in parts])
                           for f in _Measures.__slots__))


def _block_measures(mode: str, rows: np.ndarray) -> _Measures:
    """`_Measures` of a block of summary rows (read in place: nothing of ``rows`` is
    kept), NaN where the mode cannot say."""
    n = rows.shape[0]
    columns = row_columns(mode)
    if "size" not in columns or "nan" not in columns:
        return _Measures.join([], n)
    col = {name: i for i, name in enumerate(columns)}
    size = rows[:, col["size"]]
    bad = rows[:, col["nan"]] + rows[:, col["neg_inf"]]
    bad += rows[:, col["pos_inf"]]
    nonfinite = bad > 0
    zero = rows[:, col["zero"]] if "zero" in col else np.full(n, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (zero / size).astype(np.float32)
    magnitude_column = fmt.MAGNITUDE_COLUMN
    if "std" in col:
        mean, std = rows[:, col["mean"]], rows[:, col["std"]]
        norm2 = std * std
        norm2 += mean * mean
        norm2 *= size - bad
        norm2[nonfinite] = np.inf
        magnitude = np.maximum(np.abs(rows[:, col["min"]]), np.abs(rows[:, col["max"]]))
    else:
        norm2 = np.full(n, np.nan)
        magnitude = rows[:, col[magnitude_column]].copy() if magnitude_column in col \
            else np.full(n, np.nan)
    magnitude[nonfinite] = np.nan
    return _Measures(norm2, magnitude, nonfinite, (size > 0) & (zero == size) & ~nonfinite,
                     share, rows[:, col["dtype"]].astype(np.int8) if "dtype" in col
                     else np.zeros(n, np.int8))


def compute_trends(reader: IndexedRun, steps_of_executions, has_steps: bool) -> Trends:
    """The run's trends from the traces on disk now (build through `DumpReader.trends`).

    Args:
        reader: The run.
        steps_of_executions: Maps int64 execution indices to step numbers
            (`Steps.of_executions`).
        has_steps: Whether the run has steps (else the axis is execution indices).
    """
    mode = reader.mode
    roles = _assign_roles(reader)
    indices, tps, executions, _ = reader.trace_columns(reader.first_trace, reader.num_traces,
                                                       summaries=False)
    n = indices.size
    measures = _Measures.join(reader.map_trace_summaries(
        reader.first_trace, reader.num_traces, partial(_block_measures, mode)), n)
    step_of = steps_of_executions(executions) if has_steps else executions
    keep = step_of != NO_STEP
    kept = step_of[keep]
    if kept.size and np.all(kept[1:] >= kept[:-1]):  # in order, as traces usually are
        axis = kept[np.concatenate(([True], kept[1:] != kept[:-1]))]
    else:
        axis = np.unique(kept)
    position = np.where(keep, np.searchsorted(axis, step_of), -1)
    size = int(tps.max()) + 1 if n else 0
    size = max(size, max(roles.role, default=-1) + 1)
    role_of = np.zeros(size, np.int8)
    row_of = np.zeros(size, np.int32)
    relu_of = np.zeros(size, bool)
    for tp, code in roles.role.items():
        role_of[tp], row_of[tp] = code, roles.row[tp]
    relu_of[list(roles.relu)] = True
    role = role_of[tps] if n else np.empty(0, np.int8)
    dtype = measures.dtype
    norm2, magnitude, nonfinite = measures.norm2, measures.magnitude, measures.nonfinite
    nrows, nsteps = len(roles.names), axis.size
    row = row_of[tps] if n else np.empty(0, np.int32)
    cells = nrows * nsteps
    series: dict[str, np.ndarray] = {}
    for code, name in _ROLE_SERIES.items():
        mask = (role == code) & keep
        cell = row[mask] * nsteps + position[mask]
        if name == "activation_max":
            values = np.full(cells, np.nan)
            np.fmax.at(values, cell, magnitude[mask])
            bad = np.bincount(cell, weights=nonfinite[mask], minlength=cells) > 0
            values[bad] = np.inf
        else:
            total = np.bincount(cell, weights=norm2[mask], minlength=cells)
            count = np.bincount(cell, minlength=cells)
            with np.errstate(invalid="ignore"):
                values = np.where(count > 0, np.sqrt(total), np.nan)
        series[name] = values.reshape(nrows, nsteps)
    gradient = np.flatnonzero((role == 1) & keep)
    cell = row[gradient] * nsteps + position[gradient]
    count = np.bincount(cell, minlength=cells)
    zeros = np.bincount(cell, weights=measures.all_zero[gradient], minlength=cells)
    zero_gradients = ((count > 0) & (zeros == count)).reshape(nrows, nsteps)
    relus = np.flatnonzero(relu_of[tps] & keep) if n else np.zeros(0, np.int64)
    cell = row[relus] * nsteps + position[relus]
    count = np.bincount(cell, minlength=cells)
    total = np.bincount(cell, weights=np.nan_to_num(measures.zero_share[relus]),
                        minlength=cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        relu_share = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return Trends(axis.astype(np.int64), "step" if has_steps else "execution",
                  tuple(roles.names), tuple(roles.is_layer), series, zero_gradients,
                  relu_share.reshape(nrows, nsteps), tps, position, magnitude, dtype, mode)
