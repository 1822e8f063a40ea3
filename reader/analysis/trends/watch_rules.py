"""Watch rules: what in the run's trends announces trouble, before (or without) a NaN. A
list of small functions (exploding, vanishing, float16_headroom, loss_scale), their
`--rule` parameters, the first anomaly and its lead on the first harmful value.

The rules are a list (`RULES`) of small functions of the run's `Trends` (and, for the
loss scale, its harm verdict) and their parameters; each returns its hits. `watch`
runs them all; `DumpReader.watch` hands it the run's cached trends, harm verdict and
steps (this module sits below `DumpReader`, as the analyses it caches do). A `RuleHit`
names the step, the layer or the tensor, the value and the baseline it was compared
with, and the evidence in words. A run of consecutive firing steps of one subject is one
hit, at its first step. Rules only watch: a hit never makes a run "not healthy" in the
verdict (`reader.analysis.diagnosis.verdict`), it is shown. They are not the diagnosis'
`Rule`s (`reader.analysis.diagnosis.registry`): each reads the whole run's trends with its
``--rule`` parameters and returns many hits, not one finding at a root cause.

- ``exploding`` (``k``, ``window``): a finite gradient, update or activation value above
  ``k`` times the rolling median of its previous ``window`` finite values (at least 3).
  It watches the norms, and a row's gradient or update max |x| where the row has no
  such norm (FULL_HEALTH).
- ``vanishing`` (``n``, ``relu``): a layer whose gradients were all exact zeros for
  ``n`` steps in a row (value 0, baseline: its last non-zero gradient norm); a layer
  whose ReLUs gave zeros for at least a share ``relu`` of their units for ``n`` steps
  (value: the share).
- ``float16_headroom`` (``factor``): a float16 or bfloat16 tensor whose largest
  magnitude came within ``factor`` x of its dtype's largest finite value (value: the
  magnitude, baseline: the dtype's largest finite value). Under a dynamic loss scale
  the gradients are not watched: the scaler raises the scale until they overflow, by
  design, and halves it when they do (the ``loss_scale`` rule lists those steps).
- ``loss_scale``: a step the dynamic loss scaler skipped (`skipped_steps`; value: the
  scale whose gradients overflowed, where the dump records it, else the steps skipped
  so far; baseline: null). The scale itself over the steps is the trends'
  ``loss_scale`` series.

``first_anomaly`` is the first hit in step order; ``lead_steps`` is the first harmful
alert's step minus the first anomaly's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from reader import format as fmt
from reader.analysis.hunt.model_place import PlaceFinder
from reader.analysis.trends.trend_roles import LOSS_SCALE_ROW
from reader.analysis.trends.trends import DTYPE_MAX, SERIES_TITLES, Trends

if TYPE_CHECKING:
    from reader.analysis.hunt.harm import HarmVerdict
    from reader.analysis.hunt.steps import Steps
    from reader.model import Alert
    from reader.run.run_protocol import Run

# The parameters of each rule and their defaults (`--rule NAME:KEY=VALUE,...`).
DEFAULTS: dict[str, dict[str, float]] = {
    "exploding": {"k": 10.0, "window": 5},
    "vanishing": {"n": 3, "relu": 0.99},
    "float16_headroom": {"factor": 2.0},
    "loss_scale": {},
}
_INTEGER_PARAMETERS = {("exploding", "window"), ("vanishing", "n")}
# The series `exploding` watches; a magnitude series stands in for the norm its row
# lacks.
_EXPLODING_SERIES = ("gradient_norm", "update_norm", "activation_max", "gradient_max", "update_max")
_NORM_OF = {"gradient_max": "gradient_norm", "update_max": "update_norm"}
_DTYPE_ENUMS = {enum: name for enum, name in fmt.DTYPE_NAMES.items()}


class RuleSpecError(ValueError):
    """A ``--rule`` argument that cannot be read; its message is one line."""


@dataclass(frozen=True, slots=True)
class RuleHit:
    """One hit of a watch rule.

    Attributes:
        rule: The rule's name.
        step: The step (or execution index in a run without steps).
        layer: The Keras layer path, or None.
        tensor: The tensor (``op:slot``) or variable, or None.
        value: The value that fired.
        baseline: What it was compared with, or None.
        evidence: What the rule used, in words.
    """

    rule: str
    step: int
    layer: str | None
    tensor: str | None
    value: float
    baseline: float | None
    evidence: str

    def as_dict(self) -> dict[str, Any]:
        """The hit as `report --json` gives it."""
        return {
            "rule": self.rule,
            "step": self.step,
            "layer": self.layer,
            "tensor": self.tensor,
            "value": self.value,
            "baseline": self.baseline,
        }

    @property
    def subject(self) -> str:
        return self.layer or self.tensor or "the run"

    def describe(self, unit: str = "step") -> str:
        """ "step 6: exploding in sequential/dense_1: update norm 50.9 > 10 x ..."."""
        where = "" if self.layer is None and self.tensor is None else f" in {self.subject}"
        if self.layer is not None and self.tensor is not None:
            where = f" in {self.tensor} ({self.layer})"
        return f"{unit} {self.step}: {self.rule}{where}: {self.evidence}"


@dataclass(frozen=True, slots=True)
class WatchReport:
    """Every rule's hits in step order, the first anomaly and its lead time."""

    hits: tuple[RuleHit, ...]
    first_anomaly: RuleHit | None
    lead_steps: int | None
    first_harmful_step: int | None


def hits_of_row(report: WatchReport, trends: Trends, row: int) -> list[RuleHit]:
    """The hits about one row of the trends: its layer's or variable's, and for the
    loss scale's row the loss scaler's."""
    name = trends.rows[row]
    if name == LOSS_SCALE_ROW and not trends.row_is_layer[row]:
        return [hit for hit in report.hits if hit.rule == "loss_scale"]
    return [hit for hit in report.hits if name in (hit.layer, hit.tensor)]


def parse_rule_specs(specs: list[str] | None) -> dict[str, dict[str, float]]:
    """The rules' parameters: `DEFAULTS` with ``NAME:KEY=VALUE[,KEY=VALUE]`` applied.

    Raises:
        RuleSpecError: An unknown rule or parameter, or a value that is not a
            positive number.
    """
    config = {name: dict(params) for name, params in DEFAULTS.items()}
    for spec in specs or ():
        name, _, assignments = spec.partition(":")
        name = name.strip()
        if name not in config:
            raise RuleSpecError(
                f"unknown rule {name!r} in --rule {spec!r} (rules: {', '.join(DEFAULTS)})"
            )
        for assignment in filter(None, (a.strip() for a in assignments.split(","))):
            key, equals, text = assignment.partition("=")
            key = key.strip()
            if key not in config[name]:
                known = ", ".join(DEFAULTS[name]) or "none"
                raise RuleSpecError(
                    f"rule {name} has no parameter {key!r} (its parameters: {known})"
                )
            try:
                value = float(text) if equals else float("nan")
            except ValueError:
                value = float("nan")
            integer = (name, key) in _INTEGER_PARAMETERS
            if not value > 0 or not np.isfinite(value) or integer and value != int(value):
                kind = "a positive integer" if integer else "a positive number"
                raise RuleSpecError(f"--rule {spec!r}: {key} must be {kind}, not {text.strip()!r}")
            config[name][key] = int(value) if integer else value
    return config


def _runs(flags: np.ndarray) -> list[int]:
    """Positions where a run of True begins."""
    if not flags.size:
        return []
    starts = flags & ~np.concatenate([[False], flags[:-1]])
    return np.flatnonzero(starts).tolist()


def _subject(trends: Trends, row: int) -> tuple[str | None, str | None]:
    name = trends.rows[row]
    return (name, None) if trends.row_is_layer[row] else (None, name)


def _rolling_medians(values: np.ndarray, window: int) -> np.ndarray:
    """Per position: the median of the up to ``window`` values before it (NaN with
    fewer than 3 before it)."""
    out = np.full(values.size, np.nan)
    for i in range(3, min(window, values.size)):
        out[i] = np.median(values[:i])
    if values.size > window:
        out[window:] = np.median(sliding_window_view(values, window)[:-1], axis=1)
    return out


def exploding(
    reader: Run, trends: Trends, harm: HarmVerdict, k: float, window: int
) -> list[RuleHit]:
    hits = []
    for series in _EXPLODING_SERIES:
        table = trends.series[series]
        norms = trends.series.get(_NORM_OF.get(series, ""))
        for row in range(table.shape[0]):
            if norms is not None and not np.isnan(norms[row]).all():
                continue
            values = table[row]
            finite = np.flatnonzero(np.isfinite(values))
            if finite.size <= 3:
                continue
            medians = _rolling_medians(values[finite], int(window))
            fired = np.zeros(values.size, bool)
            baselines = np.full(values.size, np.nan)
            with np.errstate(invalid="ignore"):
                firing = (medians > 0) & (values[finite] > k * medians)
            fired[finite[firing]] = True
            baselines[finite] = medians
            for start in _runs(fired):
                layer, tensor = _subject(trends, row)
                hits.append(
                    RuleHit(
                        "exploding",
                        int(trends.steps[start]),
                        layer,
                        tensor,
                        float(values[start]),
                        float(baselines[start]),
                        f"{SERIES_TITLES[series]} {values[start]:.4g} > {k:g} x the median "
                        f"{baselines[start]:.4g} of its previous {int(window)} values",
                    )
                )
    return hits


def vanishing(reader: Run, trends: Trends, harm: HarmVerdict, n: int, relu: float) -> list[RuleHit]:
    hits = []
    gradient = trends.series["gradient_norm"]
    for row in range(gradient.shape[0]):
        layer, tensor = _subject(trends, row)
        zero = trends.zero_gradients[row]
        for start in _runs(zero):
            end = start
            while end + 1 < zero.size and zero[end + 1]:
                end += 1
            if end - start + 1 < n:
                continue
            before = gradient[row, :start]
            nonzero = before[np.isfinite(before) & (before > 0)]
            baseline = float(nonzero[-1]) if nonzero.size else None
            at = start + n - 1
            hits.append(
                RuleHit(
                    "vanishing",
                    int(trends.steps[at]),
                    layer,
                    tensor,
                    0.0,
                    baseline,
                    f"every gradient value exactly 0 for "
                    f"{end - start + 1} steps from step {trends.steps[start]}",
                )
            )
        share = trends.relu_zero_share[row]
        dead = np.nan_to_num(share, nan=0.0) >= relu
        for start in _runs(dead):
            end = start
            while end + 1 < dead.size and dead[end + 1]:
                end += 1
            if end - start + 1 < n:
                continue
            at = start + n - 1
            hits.append(
                RuleHit(
                    "vanishing",
                    int(trends.steps[at]),
                    layer,
                    tensor,
                    float(share[at]),
                    None,
                    f"{share[at]:.0%} of the ReLU outputs exactly 0 for "
                    f"{end - start + 1} steps (dead units)",
                )
            )
    return hits


def float16_headroom(
    reader: Run, trends: Trends, harm: HarmVerdict, factor: float
) -> list[RuleHit]:
    hits = []
    places = PlaceFinder(reader)
    scaled = trends.loss_scale() is not None
    for enum in np.unique(trends.trace_dtype).tolist():
        dtype = _DTYPE_ENUMS.get(int(enum))
        if dtype not in ("float16", "bfloat16"):
            continue
        limit = DTYPE_MAX[dtype]
        close = (
            (trends.trace_dtype == enum)
            & (trends.trace_magnitude >= limit / factor)
            & (trends.trace_step >= 0)
        )
        rows = np.flatnonzero(close)
        if not rows.size:
            continue
        tps, first = np.unique(trends.trace_tp[rows], return_index=True)
        for tp, position in zip(tps.tolist(), rows[first].tolist()):
            op_id, slot = reader.trace_point(int(tp))
            name, layer = f"trace point {tp}", None
            if op_id is not None:
                op = reader.op(op_id)
                if scaled and places.phase_of_op(op) == "gradient":
                    continue  # the loss scaler's own probe of the headroom
                name = f"{op.name}:{slot}"
                layer = places.of_op(op).layer
            value = float(trends.trace_magnitude[position])
            hits.append(
                RuleHit(
                    "float16_headroom",
                    int(trends.steps[trends.trace_step[position]]),
                    layer,
                    name,
                    value,
                    limit,
                    f"{dtype} max |x| {value:.6g}, within {factor:g}x of "
                    f"{dtype}'s largest finite value {limit:.6g}",
                )
            )
    return hits


def skipped_steps(trends: Trends, harm: HarmVerdict) -> list[int]:
    """The steps the dynamic loss scaler skipped: where the dump records the scale,
    each step after which it halved (and the run's last step when the harm analysis
    says it was skipped); else the harm analysis' steps
    (`reader.analysis.hunt.harm`, from the gradients' overflow)."""
    by_harm = [int(step) for step in harm.skipped_step_numbers]
    scale = trends.loss_scale()
    if scale is None or not np.isfinite(scale).any():
        return by_harm
    with np.errstate(invalid="ignore"):
        halved = np.flatnonzero(scale[1:] == scale[:-1] / 2)
    steps = [int(trends.steps[i]) for i in halved.tolist()]
    last = int(trends.steps[-1])
    return steps + ([last] if last in by_harm and last not in steps else [])


def loss_scale(reader: Run, trends: Trends, harm: HarmVerdict) -> list[RuleHit]:
    scale = trends.loss_scale()
    hits = []
    for count, step in enumerate(skipped_steps(trends, harm), start=1):
        position = int(np.searchsorted(trends.steps, step))
        value = (
            float(scale[position])
            if scale is not None and position < trends.steps.size and trends.steps[position] == step
            else float("nan")
        )
        if np.isfinite(value):
            hits.append(
                RuleHit(
                    "loss_scale",
                    step,
                    None,
                    None,
                    value,
                    None,
                    f"scale {value:.4g} overflowed: step skipped, scale halved "
                    f"({count} skipped so far)",
                )
            )
        else:
            hits.append(
                RuleHit(
                    "loss_scale",
                    step,
                    None,
                    None,
                    float(count),
                    None,
                    f"the loss scaler skipped step {step} ({count} skipped so far) "
                    f"and lowered its scale",
                )
            )
    return hits


RULES: dict[str, Callable[..., list[RuleHit]]] = {
    "exploding": exploding,
    "vanishing": vanishing,
    "float16_headroom": float16_headroom,
    "loss_scale": loss_scale,
}


def watch(
    reader: Run,
    trends: Trends,
    harm: HarmVerdict,
    steps: Steps,
    first_alert: Alert | None,
    config: dict[str, dict[str, float]] | None = None,
    *,
    harmful_step: int | None = None,
) -> WatchReport:
    """Every rule's hits over the run, in step order (ties: `RULES`' order), the first
    anomaly and its lead on the first harmful alert (`DumpReader.watch` passes the
    run's own trends, harm verdict, steps and first harmful alert).

    Args:
        config: Each rule's parameters (`parse_rule_specs`); None: `DEFAULTS`.
        harmful_step: The step of the first harmful value where no alert says it (a
            watched run's hit step).
    """
    config = config or parse_rule_specs(None)
    hits: list[RuleHit] = []
    for name, rule in RULES.items():
        hits.extend(rule(reader, trends, harm, **config[name]))
    order = list(RULES)
    hits.sort(key=lambda h: (h.step, order.index(h.rule)))
    first = hits[0] if hits else None
    harmful = harmful_step
    if first_alert is not None:
        harmful = steps.of_execution(first_alert.step) if steps.has_steps else first_alert.step
    lead = harmful - first.step if first is not None and harmful is not None else None
    return WatchReport(tuple(hits), first, lead, harmful)
