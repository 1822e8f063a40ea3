"""What the Trends view draws, as data: steps fitted to columns, values to shade levels
and bar heights, on a log scale (norms span orders of magnitude).

Pure functions of numpy arrays (`reader.analysis.trends.trends.Trends`' series); the widgets
in `tfdbg_tui.widgets.trend_charts` only paint them.
"""

from __future__ import annotations

import numpy as np

# Heatmap cells: a level per shade, from the smallest value to the largest.
SHADES = "░▒▓█"
LEVEL_COLOURS = ("blue", "cyan", "green", "yellow", "red")
ZERO_GLYPH = "0"
NONFINITE_GLYPH = "×"
MISSING_GLYPH = " "
# Chart bars: eighths of a row.
BAR_EIGHTHS = " ▁▂▃▄▅▆▇█"


def step_columns(steps: int, width: int) -> np.ndarray:
    """Per column, the first step position it covers: ``steps`` fitted into at most
    ``width`` columns (several steps a column when they do not fit)."""
    columns = max(1, min(width, steps))
    return (np.arange(columns) * steps) // columns


def column_steps(steps: int, width: int, widest: int) -> np.ndarray:
    """Per column, the step position it shows: a step takes up to ``widest`` columns
    when the steps fit, else `step_columns` (several steps a column)."""
    if 0 < steps <= width:
        return np.repeat(np.arange(steps), min(widest, width // steps))
    return step_columns(steps, width)


def fold_columns(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """A row of per-step values folded into columns (`step_columns`): a column holds its
    steps' largest value, inf if any is non-finite, NaN if none is known."""
    if not values.size:
        return values
    ends = np.append(starts[1:], values.size)
    out = np.full(starts.size, np.nan)
    for i, (a, b) in enumerate(zip(starts.tolist(), ends.tolist())):
        part = values[a:b]
        if np.isinf(part).any():
            out[i] = np.inf
        elif np.isfinite(part).any():
            out[i] = np.nanmax(part)
    return out


def log_range(table: np.ndarray) -> tuple[float, float] | None:
    """(low, high) of log10 of the table's finite positive values, or None."""
    good = table[np.isfinite(table) & (table > 0)]
    if not good.size:
        return None
    logs = np.log10(good)
    return float(logs.min()), float(logs.max())


def levels(values: np.ndarray, span: tuple[float, float] | None, count: int) -> np.ndarray:
    """Per value, its level 0..count-1 on the log scale ``span``; -1 missing, -2 exact
    zero, -3 non-finite."""
    out = np.full(values.shape, -1, dtype=np.int64)
    out[values == 0] = -2
    out[np.isinf(values)] = -3
    good = np.isfinite(values) & (values > 0)
    if span is not None and good.any():
        low, high = span
        scaled = (
            (np.log10(values[good]) - low) / (high - low)
            if high > low
            else np.ones(int(good.sum()))
        )
        out[good] = np.clip((scaled * count).astype(np.int64), 0, count - 1)
    return out


def bar_eighths(values: np.ndarray, span: tuple[float, float] | None, height: int) -> np.ndarray:
    """Per value, its bar's height in eighths of a row (0..8*height) on the log scale
    ``span``; a value at the bottom of the span still gets one eighth; -1 missing,
    -2 exact zero, -3 non-finite."""
    out = np.full(values.shape, -1, dtype=np.int64)
    out[np.isinf(values)] = -3
    out[values == 0] = -2
    good = np.isfinite(values) & (values > 0)
    if span is not None and good.any():
        low, high = span
        scaled = (
            (np.log10(values[good]) - low) / (high - low)
            if high > low
            else np.ones(int(good.sum()))
        )
        out[good] = np.clip(1 + (scaled * (8 * height - 1)).astype(np.int64), 1, 8 * height)
    return out


def number(value: float) -> str:
    """A value in at most 8 characters: "2.28e+06", "0.0250", "inf"."""
    if not np.isfinite(value):
        return "nan" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}"
    return f"{value:.2e}"
