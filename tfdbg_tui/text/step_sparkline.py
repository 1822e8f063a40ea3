"""Alerts per step as a sparkline, one line of text: when trouble started, at a glance.

Used by `tfdbg-tui report` and the TUI's Alerts pane (`panes/alerts.py`). The
steps, their alert counts and what is kept come from `reader.analysis.hunt.steps.Steps`; this
module only draws them.
"""

from __future__ import annotations

import math

import numpy as np

from reader.analysis.hunt.steps import Steps

# Cells: steps kept without alerts, steps not kept, and alerts on a log scale.
NO_ALERTS = "·"
NOT_KEPT = " "
LEVELS = "▁▂▃▄▅▆▇█"


def step_range(steps: Steps) -> tuple[int, int] | None:
    """The first and last step the sparkline spans (kept steps), or None."""
    kept = steps.kept_steps()
    if not kept:
        return None
    return min(first for first, _ in kept), max(last for _, last in kept)


def sparkline(steps: Steps, width: int) -> str:
    """At most ``width`` cells over the kept steps; each cell shows the most alerts of
    its steps. Empty when the run has no steps."""
    span = step_range(steps)
    if span is None or width <= 0:
        return ""
    first, last = span
    count = last - first + 1
    cells = min(width, count)
    kept = np.zeros(cells, dtype=bool)
    for a, b in steps.kept_steps():
        kept[_cell(a, first, count, cells) : _cell(b, first, count, cells) + 1] = True
    most = np.zeros(cells, dtype=np.int64)
    inside = (steps.alert_steps >= first) & (steps.alert_steps <= last)
    np.maximum.at(
        most, _cell(steps.alert_steps[inside], first, count, cells), steps.alert_counts[inside]
    )
    top = max(int(most.max(initial=0)), 1)
    text = []
    for cell in range(cells):
        if most[cell]:
            level = math.log1p(int(most[cell])) / math.log1p(top)
            text.append(LEVELS[min(int(level * len(LEVELS)), len(LEVELS) - 1)])
        else:
            text.append(NO_ALERTS if kept[cell] else NOT_KEPT)
    return "".join(text)


def _cell(step, first: int, count: int, cells: int):
    return (np.asarray(step) - first) * cells // count
