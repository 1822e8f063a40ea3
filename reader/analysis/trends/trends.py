"""The run's trends: per layer (or variable) and step, the gradient, update, weight and
slot norms, the activations' largest magnitude and the loss scale, rolled up with
numpy from the summary rows alone.

Tensors are sorted once per dump state into **roles** (weight, gradient, update,
optimizer slot, activation, loss scale) by the graph around them
(`reader.analysis.trends.trend_roles`).

A series row is a Keras layer (its path), or, for a variable read outside any layer
(a custom loop without Keras), the variable. Per row and step: norms are
``sqrt(sum of squares)`` over the row's tensors, a tensor's own from FULL_STATS
(``n (std^2 + mean^2)`` over its ``n`` finite elements); the activation's largest
magnitude is ``max(|min|, |max|)`` (FULL_STATS) or FULL_HEALTH's ``max_abs`` column
where the dump has it; so are the gradients', updates' and weights' largest
magnitudes, the series FULL_HEALTH gives for them. A tensor holding NaN or infinity makes its cell
infinite. What a mode cannot give is NaN (FULL_HEALTH gives magnitudes and exact
zeros, no norms); a magnitude cell one of whose finite tensors has no magnitude (a
large tensor FULL_HEALTH summarised the stock way, TensorFlow's own dumps) is NaN too,
never the largest of the others, and marked in ``unknown``.

The loss scale is one row (`trend_roles.LOSS_SCALE_ROW`): per step, the value of the
scale variable's first read in the step (the scale that step's loss was multiplied
by), from FULL_STATS' min/max or FULL_HEALTH's magnitude.

Computed once per state of the dump (`DumpReader.trends`), vectorised over traces: the
per-op walk is over the graphs' ops, not over traces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from reader import format as fmt
from reader.analysis.hunt.steps import NO_STEP
from reader.analysis.trends import trend_roles as roles_
from reader.limits import MAX_TRACE_POINT
from reader.summary_rows import row_columns

if TYPE_CHECKING:
    from collections.abc import Callable

    from reader.run.run_protocol import Run

# The series, in the order the Trends view cycles them (the first is its default).
SERIES = (
    "gradient_norm",
    "update_norm",
    "weight_norm",
    "gradient_max",
    "update_max",
    "weight_max",
    "activation_max",
    "slot_norm",
    "loss_scale",
)
SERIES_TITLES = {
    "gradient_norm": "gradient norm",
    "update_norm": "update norm",
    "weight_norm": "weight norm",
    "gradient_max": "gradient max |x|",
    "update_max": "update max |x|",
    "weight_max": "weight max |x|",
    "activation_max": "activation max |x|",
    "slot_norm": "optimizer slot norm",
    "loss_scale": "loss scale",
}
# Per series: the role of its tensors, and how a cell is made of them: "norm" (the
# root of the summed squared norms), "max" (the largest magnitude), "first" (the
# step's first value).
_SERIES_OF = {
    "gradient_norm": (roles_.GRADIENT, "norm"),
    "update_norm": (roles_.UPDATE, "norm"),
    "weight_norm": (roles_.WEIGHT, "norm"),
    "gradient_max": (roles_.GRADIENT, "max"),
    "update_max": (roles_.UPDATE, "max"),
    "weight_max": (roles_.WEIGHT, "max"),
    "activation_max": (roles_.ACTIVATION, "max"),
    "slot_norm": (roles_.SLOT, "norm"),
    "loss_scale": (roles_.LOSS_SCALE, "first"),
}
# Largest finite value per floating dtype (for `float16_headroom`).
DTYPE_MAX = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": 3.4028234663852886e38,
    "float64": 1.7976931348623157e308,
}


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
        unknown: Per magnitude series: bool (rows, steps), True where a cell is NaN
            because a finite tensor of it has no magnitude recorded.
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
    unknown: dict[str, np.ndarray]
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

    def loss_scale(self) -> np.ndarray | None:
        """The loss scale per step (NaN: not read that step), or None without one."""
        if roles_.LOSS_SCALE_ROW not in self.rows:
            return None
        return self.series["loss_scale"][self.rows.index(roles_.LOSS_SCALE_ROW)]

    def available(self) -> tuple[str, ...]:
        """The series with at least one value: a finite one, or, where no magnitude
        was unknown, a non-finite one (a series of unknown magnitudes and infinities
        alone, as TensorFlow's own FULL_HEALTH dumps give, says nothing of size)."""
        out = []
        for name in SERIES:
            table, unknown = self.series[name], self.unknown.get(name)
            if np.isfinite(table).any() or (
                np.isinf(table).any() and (unknown is None or not unknown.any())
            ):
                out.append(name)
        return tuple(out)


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
            return _Measures(
                nan,
                nan.copy(),
                np.zeros(n, bool),
                np.zeros(n, bool),
                np.full(n, np.nan, np.float32),
                np.zeros(n, np.int8),
            )
        return _Measures(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in _Measures.__slots__)
        )


def _block_measures(mode: str, rows: np.ndarray) -> _Measures:
    """`_Measures` of a block of summary rows (read in place: nothing of ``rows`` is
    kept), NaN where the mode cannot say.

    The rows are the dump's word: a norm of values near float64's limit overflows to
    inf, a count may be NaN, and numpy is told not to warn of it (on a command's
    stderr, beside its result); a dtype that is no TensorFlow enum is unknown (0).
    """
    with np.errstate(all="ignore"):
        return _measures_of_rows(mode, rows)


def _measures_of_rows(mode: str, rows: np.ndarray) -> _Measures:
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
        magnitude = (
            rows[:, col[magnitude_column]].copy() if magnitude_column in col else np.full(n, np.nan)
        )
    magnitude[nonfinite] = np.nan
    dtype = np.zeros(n, np.int8)
    if "dtype" in col:
        enum = rows[:, col["dtype"]]
        known = (enum > 0) & (enum <= np.iinfo(np.int8).max) & (enum == np.floor(enum))
        dtype[known] = enum[known]
    return _Measures(
        norm2, magnitude, nonfinite, (size > 0) & (zero == size) & ~nonfinite, share, dtype
    )


def _roles_of_traces(
    roles: roles_.Roles, tps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per trace: its role code (0: none), its row and whether it is a ReLU's output,
    looked up by trace point among the points that have a role.

    The tables are as long as the roles, never as the largest trace point: a trace
    chunk's int32 ``tp`` is the dump's word (a flipped bit makes it 2**31 - 1 or
    negative), and a point outside ``0..MAX_TRACE_POINT`` (damage, or an op's output
    left untraced) has no role.
    """
    points = np.array(sorted(tp for tp in roles.role if 0 <= tp <= MAX_TRACE_POINT), np.int64)
    codes = np.array([roles.role[tp] for tp in points.tolist()], np.int8)
    rows = np.array([roles.row[tp] for tp in points.tolist()], np.int32)
    relus = np.isin(points, np.fromiter(roles.relu, np.int64, len(roles.relu)))
    if not points.size or not tps.size:
        return (np.zeros(tps.size, np.int8), np.zeros(tps.size, np.int32), np.zeros(tps.size, bool))
    at = np.minimum(np.searchsorted(points, tps), points.size - 1)
    found = points[at] == tps
    return (
        np.where(found, codes[at], 0).astype(np.int8),
        np.where(found, rows[at], 0).astype(np.int32),
        found & relus[at],
    )


def compute_trends(
    reader: Run, steps_of_executions: Callable[[np.ndarray], np.ndarray], has_steps: bool
) -> Trends:
    """The run's trends from the traces on disk now (build through `DumpReader.trends`).

    Args:
        reader: The run.
        steps_of_executions: Maps int64 execution indices to step numbers
            (`Steps.of_executions`).
        has_steps: Whether the run has steps (else the axis is execution indices).
    """
    mode = reader.mode
    roles = roles_.assign_roles(reader)
    indices, tps, executions, _ = reader.trace_columns(
        reader.first_trace, reader.num_traces, summaries=False
    )
    n = indices.size
    measures = _Measures.join(
        reader.map_trace_summaries(
            reader.first_trace, reader.num_traces, partial(_block_measures, mode)
        ),
        n,
    )
    step_of = steps_of_executions(executions) if has_steps else executions
    keep = step_of != NO_STEP
    kept = step_of[keep]
    if kept.size and np.all(kept[1:] >= kept[:-1]):  # in order, as traces usually are
        axis = kept[np.concatenate(([True], kept[1:] != kept[:-1]))]
    else:
        axis = np.unique(kept)
    position = np.where(keep, np.searchsorted(axis, step_of), -1)
    role, row, relu = _roles_of_traces(roles, tps)
    dtype = measures.dtype
    norm2, magnitude, nonfinite = measures.norm2, measures.magnitude, measures.nonfinite
    nrows, nsteps = len(roles.names), axis.size
    cells = nrows * nsteps
    series: dict[str, np.ndarray] = {}
    unknown: dict[str, np.ndarray] = {}
    kept_role = np.where(keep, role, 0)
    of_role: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # code: (traces, their cells)
    for name, (code, how) in _SERIES_OF.items():
        if code not in of_role:
            at = np.flatnonzero(kept_role == code)
            of_role[code] = at, row[at] * nsteps + position[at]
        mask, cell = of_role[code]
        if how == "norm":
            total = np.bincount(cell, weights=norm2[mask], minlength=cells)
            count = np.bincount(cell, minlength=cells)
            with np.errstate(invalid="ignore"):
                values = np.where(count > 0, np.sqrt(total), np.nan)
        elif how == "max":
            values = np.full(cells, np.nan)
            np.fmax.at(values, cell, magnitude[mask])
            bad = np.bincount(cell, weights=nonfinite[mask], minlength=cells) > 0
            blind = (
                np.bincount(
                    cell, weights=np.isnan(magnitude[mask]) & ~nonfinite[mask], minlength=cells
                )
                > 0
            )
            values[blind] = np.nan
            values[bad] = np.inf
            unknown[name] = (blind & ~bad).reshape(nrows, nsteps)
        else:  # the first value of the cell, in trace order
            first = np.full(cells, n)
            np.minimum.at(first, cell, mask)
            values = np.full(cells, np.nan)
            known = first < n
            at = first[known]
            values[known] = np.where(nonfinite[at], np.inf, magnitude[at])
        series[name] = values.reshape(nrows, nsteps)
    gradient, cell = of_role[roles_.GRADIENT]
    count = np.bincount(cell, minlength=cells)
    zeros = np.bincount(cell, weights=measures.all_zero[gradient], minlength=cells)
    zero_gradients = ((count > 0) & (zeros == count)).reshape(nrows, nsteps)
    relus = np.flatnonzero(relu & keep)
    cell = row[relus] * nsteps + position[relus]
    count = np.bincount(cell, minlength=cells)
    total = np.bincount(cell, weights=np.nan_to_num(measures.zero_share[relus]), minlength=cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        relu_share = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return Trends(
        axis.astype(np.int64),
        "step" if has_steps else "execution",
        tuple(roles.names),
        tuple(roles.is_layer),
        series,
        unknown,
        zero_gradients,
        relu_share.reshape(nrows, nsteps),
        tps,
        position,
        magnitude,
        dtype,
        mode,
    )
