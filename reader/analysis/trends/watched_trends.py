"""A watched run's trends, from its step rows: per layer and step, the gradient norm
and the weight norm the watch tier recorded (`reader.watch_log`).

A watched run records no op, so it has no summaries for `reader.analysis.trends.trends`
to read; its rows hold, per step of each watched optimizer, the loss and each trained
variable's gradient, value and update L2 norms (docs/format.md, "The watch tier";
the value's and the update's every 16th step). A row of
the trends is a Keras layer (a variable's path without its last part, ``dense_1`` for
``dense_1/kernel``), or the variable where it has no such path; its norm is
``sqrt(sum of squares)`` over its variables' norms, infinite when one is not finite,
as in the summary trends. A loss-scaled site's rows also hold the scale (the row
"loss scale", as in the summary trends) and mark the steps the scaler skipped, whose
norms are not recorded. The series the rows do not hold (magnitudes, activations,
slots) are NaN: `Trends.available` leaves them out.
Steps are the sites' own step numbers; several optimizers (a GAN's two) count their
steps each, and share the axis by number.
"""

from __future__ import annotations

import numpy as np

from reader.analysis.trends.trend_roles import LOSS_SCALE_ROW
from reader.analysis.trends.trends import SERIES, Trends
from reader.watch_log import WatchLog

# The columns of a site's rows that make series, by prefix (`instrument.watch.gate`).
_COLUMN_SERIES = {
    "gradient_norm:": "gradient_norm",
    "weight_norm:": "weight_norm",
    "update_norm:": "update_norm",
}


def _row_of(variable: str) -> tuple[str, bool]:
    """The trends row of a variable, and whether it is a layer's."""
    name = variable.split(":", 1)[0]
    if "/" in name:
        return name.rsplit("/", 1)[0], True
    return name, False


def trends_of_watch(log: WatchLog, mode: str) -> Trends:
    """The trends of a watched run (``mode``: its tensor debug mode, said by the view)."""
    steps = np.unique(
        np.concatenate([s for s in log.steps.values()]) if log.steps else np.zeros(0, np.int64)
    ).astype(np.int64)
    rows: list[str] = []
    is_layer: list[bool] = []
    # (series, row) -> summed squares per step
    sums: dict[tuple[str, int], np.ndarray] = {}
    scale = np.full(steps.size, np.nan)  # the loss scale per step (a loss-scaled site's)
    with np.errstate(all="ignore"):
        for site_id, site in log.sites.items():
            site_steps = log.steps.get(site_id)
            values = log.rows.get(site_id)
            if site_steps is None or values is None or not site_steps.size:
                continue
            at = np.searchsorted(steps, site_steps)
            # A step the loss scaler skipped records no norm (`gate.LOSS_SCALE_COLUMNS`).
            skipped = (
                values[:, site.columns.index("skipped")] == 1.0
                if "skipped" in site.columns
                else np.zeros(site_steps.size, bool)
            )
            if "loss_scale" in site.columns:
                scale[at] = values[:, site.columns.index("loss_scale")]
            for k, column in enumerate(site.columns):
                prefix = next((p for p in _COLUMN_SERIES if column.startswith(p)), None)
                if prefix is None:
                    continue
                row_name, layer = _row_of(column[len(prefix) :])
                if row_name not in rows:
                    rows.append(row_name)
                    is_layer.append(layer)
                key = (_COLUMN_SERIES[prefix], rows.index(row_name))
                total = sums.setdefault(key, np.full(steps.size, np.nan))
                norm = values[:, k].astype(np.float64)
                square = np.where(skipped, np.nan, np.where(np.isfinite(norm), norm * norm, np.inf))
                total[at] = np.where(
                    np.isnan(square),
                    total[at],
                    np.where(np.isnan(total[at]), square, total[at] + square),
                )
    if np.isfinite(scale).any():
        rows.append(LOSS_SCALE_ROW)
        is_layer.append(False)
    shape = (len(rows), steps.size)
    series = {name: np.full(shape, np.nan) for name in SERIES}
    for (name, row), total in sums.items():
        series[name][row] = np.sqrt(total)
    if LOSS_SCALE_ROW in rows:
        series["loss_scale"][rows.index(LOSS_SCALE_ROW)] = scale
    gradient = series["gradient_norm"]
    return Trends(
        steps=steps,
        unit="step",
        rows=tuple(rows),
        row_is_layer=tuple(is_layer),
        series=series,
        unknown={},
        zero_gradients=gradient == 0.0,
        relu_zero_share=np.full(shape, np.nan),
        trace_tp=np.zeros(0, np.int64),
        trace_step=np.zeros(0, np.int64),
        trace_magnitude=np.zeros(0, np.float64),
        trace_dtype=np.zeros(0, np.int8),
        mode=mode,
    )
