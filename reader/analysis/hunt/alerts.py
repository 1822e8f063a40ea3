"""Alerts: every tensor that held NaN or infinity, counted by type, in true execution
order.

Eager alerts come from the execution index's alert rows, graph alerts from the trace
index's alert column (the run's `execution_alert_rows` and `trace_alert_rows`; the run
is a `reader.run.run_protocol.Run`, whose record queries also build the listed ones).
Both are merged by one sort key: a graph trace of step ``x`` ran inside the call
recorded as execution ``x``, before that execution was recorded, so it sorts just
before execution ``x``. Only the alerts listed (a per-type cap) become objects;
counting works on the columns.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from reader.errors import DumpError
from reader.model import ALERT_TYPES, CONTAINED_REASONS, HARMFUL, Alert, AlertSummary

if TYPE_CHECKING:
    from reader.run.run_protocol import Run


def _type_codes(counts: np.ndarray) -> np.ndarray:
    """Per (nan, neg_inf, pos_inf) row, the position of its type in `ALERT_TYPES`."""
    nan, neg, pos = counts[:, 0] > 0, counts[:, 1] > 0, counts[:, 2] > 0
    codes = np.full(counts.shape[0], ALERT_TYPES.index("inf/NaN"), dtype=np.int64)
    codes[pos] = ALERT_TYPES.index("+inf")
    codes[neg] = ALERT_TYPES.index("-inf")
    codes[neg & pos] = ALERT_TYPES.index("±inf")
    codes[nan] = ALERT_TYPES.index("NaN")
    return codes


def collect_alerts(
    run: Run,
    builder: AlertBuilder,
    limit_per_type: int,
    harm: tuple[np.ndarray, np.ndarray] | None = None,
) -> AlertSummary:
    """Count every alert and list the first ``limit_per_type`` of each type in order.

    Args:
        run: The run whose alert rows are read.
        builder: Makes the listed `Alert` objects (it decodes what each one needs).
        limit_per_type: How many alerts of each type to list; totals stay exact.
        harm: Per eager and per graph alert (as the indexes list them), `HARMFUL` or
            1 + the position of its reason in `CONTAINED_REASONS`
            (`reader.analysis.hunt.harm`): listed alerts carry their reason, the summary
            counts them apart.
    """
    eager_index, eager_slot, eager_counts = run.execution_alert_rows()
    graph_index, graph_step, graph_counts = run.trace_alert_rows()
    n_eager = eager_index.size
    order, counts = _merged_order(
        eager_index, eager_slot, eager_counts, graph_index, graph_step, graph_counts
    )
    codes = _type_codes(counts)
    harm_codes = np.concatenate(harm) if harm is not None else None

    totals = np.bincount(codes, minlength=len(ALERT_TYPES))
    by_type = {ALERT_TYPES[c]: int(totals[c]) for c in range(len(ALERT_TYPES)) if totals[c]}
    chosen = []
    sorted_codes = codes[order]
    for code in range(len(ALERT_TYPES)):
        chosen.append(order[sorted_codes == code][: max(limit_per_type, 0)])
    selected = np.sort(np.concatenate(chosen)) if chosen else np.empty(0, np.int64)
    # Back to execution order: positions of the selected rows within `order`.
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    selected = selected[np.argsort(rank[selected], kind="stable")]

    alerts = []
    for row in selected.tolist():
        nan, neg, pos = (int(c) for c in counts[row])
        if row < n_eager:
            alert = builder.eager(int(eager_index[row]), int(eager_slot[row]), nan, neg, pos)
        else:
            g = row - n_eager
            alert = builder.graph(int(graph_index[g]), int(graph_step[g]), nan, neg, pos)
        code = HARMFUL if harm_codes is None else int(harm_codes[row])
        alerts.append(
            alert if code == HARMFUL else replace(alert, contained=CONTAINED_REASONS[code - 1])
        )
    if harm_codes is None:
        return AlertSummary(total=int(codes.size), counts=by_type, alerts=alerts)
    found = np.bincount(harm_codes.astype(np.int64), minlength=len(CONTAINED_REASONS) + 1)
    return AlertSummary(
        total=int(codes.size),
        counts=by_type,
        alerts=alerts,
        contained={r: int(found[i + 1]) for i, r in enumerate(CONTAINED_REASONS)},
        harmful=int(found[HARMFUL]),
    )


def _merged_order(
    eager_index: np.ndarray,
    eager_slot: np.ndarray,
    eager_counts: np.ndarray,
    graph_index: np.ndarray,
    graph_step: np.ndarray,
    graph_counts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """One table of all alerts, eager rows first, then graph rows: its rows in true
    execution order, and its (n, 3) counts."""
    primary = np.concatenate([eager_index, graph_step]).astype(np.int64)
    secondary = np.concatenate(
        [np.ones(eager_index.size, np.int64), np.zeros(graph_index.size, np.int64)]
    )
    tertiary = np.concatenate([eager_slot, graph_index])
    counts = np.concatenate([eager_counts, graph_counts]).reshape(-1, 3)
    return np.lexsort((tertiary, secondary, primary)), counts


def first_harmful(
    run: Run, builder: AlertBuilder, harm: tuple[np.ndarray, np.ndarray]
) -> Alert | None:
    """The first harmful alert in true execution order, or None (``harm``: the codes
    of `collect_alerts`). Linear: the earliest step first, then a sort of its rows."""
    eager_index, eager_slot, eager_counts = run.execution_alert_rows()
    graph_index, graph_step, graph_counts = run.trace_alert_rows()
    eager_harmful, graph_harmful = (codes == HARMFUL for codes in harm)
    candidates = [
        p[h] for p, h in ((eager_index, eager_harmful), (graph_step, graph_harmful)) if h.any()
    ]
    if not candidates:
        return None
    first = min(int(c.min()) for c in candidates)
    eager_rows = np.flatnonzero(eager_harmful & (eager_index == first))
    graph_rows = np.flatnonzero(graph_harmful & (graph_step == first))
    order, counts = _merged_order(
        eager_index[eager_rows],
        eager_slot[eager_rows],
        eager_counts[eager_rows],
        graph_index[graph_rows],
        graph_step[graph_rows],
        graph_counts[graph_rows],
    )
    row = int(order[0])
    nan, neg, pos = (int(c) for c in counts[row])
    if row < eager_rows.size:
        e = eager_rows[row]
        return builder.eager(int(eager_index[e]), int(eager_slot[e]), nan, neg, pos)
    g = graph_rows[row - eager_rows.size]
    return builder.graph(int(graph_index[g]), int(graph_step[g]), nan, neg, pos)


class AlertBuilder:
    """Turns alert rows into `Alert` objects, decoding only what each one needs.

    It asks the reader through its public methods only (`execution`,
    `execution_devices`, `trace_op`, `op`, `graph`, `execution_op_types`).
    """

    def __init__(self, reader: Run) -> None:
        self._reader = reader
        self._step_devices: dict[int, str | None] = {}

    def eager(self, index: int, slot: int, nan: int, neg: int, pos: int) -> Alert:
        reader = self._reader
        device = graph_name = None
        op_type = reader.execution_op_types(index, index + 1)[0]
        try:
            execution = reader.execution(index)
            if 0 <= slot < len(execution.devices):
                device = execution.devices[slot]
            if execution.graph_id is not None:
                graph_name = reader.graph(execution.graph_id).name
        except DumpError:
            pass  # the record left the disk or its graph is not read yet: leave them unknown
        return Alert(
            kind="eager",
            index=index,
            op_type=op_type,
            op_name=None,
            slot=slot,
            graph_name=graph_name,
            device=device,
            nan=nan,
            neg_inf=neg,
            pos_inf=pos,
            step=index,
        )

    def graph(self, index: int, step: int, nan: int, neg: int, pos: int) -> Alert:
        reader = self._reader
        op_id, slot = reader.trace_op(index)
        op_type, op_name, graph_name, device = "?", None, None, None
        if op_id is not None:
            op = reader.op(op_id)
            op_type, op_name, device = op.op_type, op.name, op.device
            try:
                graph_name = reader.graph(op.graph_id).name
            except DumpError:
                graph_name = None  # the op's graph record is not read yet
        if device is None:
            device = self._step_device(step)
        return Alert(
            kind="graph",
            index=index,
            op_type=op_type,
            op_name=op_name,
            slot=slot,
            graph_name=graph_name,
            device=device,
            nan=nan,
            neg_inf=neg,
            pos_inf=pos,
            step=step,
        )

    def _step_device(self, step: int) -> str | None:
        """Ops placed at run time carry no device: take the device of their call."""
        if step not in self._step_devices:
            device = None
            try:
                devices = self._reader.execution_devices(step)
                device = next((d for d in devices if d), None)
            except DumpError:
                pass  # the call is not recorded yet (still running) or left the disk
            self._step_devices[step] = device
        return self._step_devices[step]
