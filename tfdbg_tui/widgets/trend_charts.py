"""The Trends view's charts, drawn with Textual's Line API (one `Strip` a line): a
layer x step heatmap, one row's series over steps, and a value's histogram.

The widgets hold what the screen sets on them and paint it; the scales are computed
by `tfdbg_tui.models.trend_cells`. Every colour is one of the 16 ANSI colours, and
every mark has a glyph of its own, so the charts read without colour too.
"""

from __future__ import annotations

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from tfdbg_tui.models import trend_cells as cells
from tfdbg_tui.text.literal import literal
from tfdbg_tui.text.text_fit import cut_start

_DIM = Style(dim=True)
_BOLD = Style(bold=True)
_CURSOR = Style(reverse=True, bold=True)
_NONFINITE = Style(color="bright_red", bold=True)
_ANOMALY = Style(color="yellow", bold=True)
_HARMFUL = Style(color="red", bold=True)
ANOMALY_MARK = "▼"
HARMFUL_MARK = "✖"
LABEL_WIDTH = 22
# Columns a step's cell takes at most when the steps fit with room to spare.
MAX_CELL = 3


def _pad(segments: list[Segment], width: int) -> Strip:
    return Strip(segments).crop_extend(0, width, None)


class TrendHeatmap(Widget):
    """Rows of a series (layers) by steps: a shaded cell per step (or per few steps),
    the selected row and step in reverse, a line of marks above (the first anomaly
    ``▼``, the first harmful value ``✖``) and the step axis below."""

    DEFAULT_CSS = "TrendHeatmap { height: auto; max-height: 14; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rows: tuple[str, ...] = ()
        self.table = np.zeros((0, 0))
        self.steps = np.zeros(0, np.int64)
        self.unit = "step"
        self.row = 0
        self.step = 0
        self.anomaly: int | None = None  # a step position
        self.harmful: int | None = None

    def show(
        self,
        rows: tuple[str, ...],
        table: np.ndarray,
        steps: np.ndarray,
        unit: str,
        row: int,
        step: int,
        anomaly: int | None,
        harmful: int | None,
    ) -> None:
        self.rows, self.table, self.steps, self.unit = rows, table, steps, unit
        self.row, self.step, self.anomaly, self.harmful = row, step, anomaly, harmful
        self.refresh(layout=True)

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.rows) + 2

    def _label_width(self, width: int) -> int:
        longest = max((len(r) for r in self.rows), default=0)
        return max(6, min(LABEL_WIDTH, longest, width // 3))

    def _columns(self, width: int) -> tuple[int, np.ndarray]:
        """The label's width, and per column the step position it shows (a step takes
        up to `MAX_CELL` columns when there is room)."""
        label = self._label_width(width)
        return label, cells.column_steps(self.steps.size, max(1, width - label - 1), MAX_CELL)

    def _column_of(self, starts: np.ndarray, position: int | None) -> int | None:
        """The first column showing step ``position``."""
        if position is None or not starts.size:
            return None
        last = int(np.searchsorted(starts, position, side="right")) - 1
        return int(np.searchsorted(starts, starts[max(0, last)], side="left"))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if not self.rows or not self.steps.size:
            return _pad([Segment("no series to show" if y == 0 else "", _DIM)], width)
        label, starts = self._columns(width)
        visible = max(1, self.size.height - 2)
        first = max(0, self.row - visible + 1)
        if y == 0:
            return _pad([Segment(" " * (label + 1))] + self._marks(starts), width)
        if y == self.size.height - 1 or y - 1 + first >= len(self.rows):
            if y - 1 + first < len(self.rows):
                return Strip.blank(width)
            return self._axis(label, starts, width)
        row = y - 1 + first
        name = cut_start(literal(self.rows[row]), label).ljust(label)
        segments = [Segment(name, _CURSOR if row == self.row else _BOLD), Segment(" ")]
        span = cells.log_range(self.table)
        unique = np.unique(starts)
        folded = cells.fold_columns(self.table[row], unique)
        level = cells.levels(folded, span, len(cells.SHADES))[np.searchsorted(unique, starts)]
        for column, code in enumerate(level.tolist()):
            glyph, style = self._cell(code)
            if row == self.row and self._covers(starts, column, self.step):
                style = style + _CURSOR
            segments.append(Segment(glyph, style))
        return _pad(segments, width)

    @staticmethod
    def _covers(starts: np.ndarray, column: int, position: int) -> bool:
        """Whether ``column`` shows step ``position`` (alone or among others)."""
        end = starts[column + 1] if column + 1 < starts.size else np.iinfo(np.int64).max
        return bool(starts[column] <= position < max(end, starts[column] + 1))

    @staticmethod
    def _cell(code: int) -> tuple[str, Style]:
        if code == -1:
            return cells.MISSING_GLYPH, _DIM
        if code == -2:
            return cells.ZERO_GLYPH, _DIM
        if code == -3:
            return cells.NONFINITE_GLYPH, _NONFINITE
        return cells.SHADES[code], Style(color=cells.LEVEL_COLOURS[code])

    def _marks(self, starts: np.ndarray) -> list[Segment]:
        marks = [Segment(" ")] * starts.size
        anomaly = self._column_of(starts, self.anomaly)
        harmful = self._column_of(starts, self.harmful)
        if anomaly is not None:
            marks[anomaly] = Segment(ANOMALY_MARK, _ANOMALY)
        if harmful is not None:
            marks[harmful] = Segment(HARMFUL_MARK, _HARMFUL)
        return marks

    def _axis(self, label: int, starts: np.ndarray, width: int) -> Strip:
        first = f"{self.unit} {self.steps[0]}"
        last = f"{self.steps[-1]}"
        room = starts.size - len(first) - len(last)
        text = (first + " " * room + last) if room > 0 else first
        return _pad([Segment(" " * (label + 1)), Segment(text[: starts.size], _DIM)], width)


class SeriesChart(Widget):
    """One row's series over the steps as bars (log scale), its largest and smallest
    value on the left, the selected step's bar in reverse, non-finite steps as ``×``."""

    DEFAULT_CSS = "SeriesChart { height: 1fr; min-height: 4; max-height: 14; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.values = np.zeros(0)
        self.step = 0

    def show(self, values: np.ndarray, step: int) -> None:
        self.values, self.step = values, step
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width, height = self.size.width, self.size.height
        if not self.values.size:
            return Strip.blank(width)
        span = cells.log_range(self.values)
        label = 9
        starts = cells.column_steps(self.values.size, max(1, width - label), MAX_CELL)
        unique = np.unique(starts)
        folded = cells.fold_columns(self.values, unique)
        eighths = cells.bar_eighths(folded, span, height)[np.searchsorted(unique, starts)]
        cursor = TrendHeatmap._covers
        text = ""
        if span is not None and y == 0:
            text = cells.number(10 ** span[1])
        elif span is not None and y == height - 1:
            text = cells.number(10 ** span[0])
        segments = [Segment(text.rjust(label - 1)[: label - 1] + "│", _DIM)]
        floor = (height - 1 - y) * 8
        for column, bar in enumerate(eighths.tolist()):
            if bar == -3:
                glyph, style = (cells.NONFINITE_GLYPH if y == 0 else " "), _NONFINITE
            elif bar == -2:
                glyph, style = (cells.ZERO_GLYPH if y == height - 1 else " "), _DIM
            elif bar <= floor:
                glyph, style = " ", Style()
            else:
                glyph, style = cells.BAR_EIGHTHS[min(8, bar - floor)], Style(color="cyan")
            if cursor(starts, column, self.step):
                style = style + Style(reverse=True)
            segments.append(Segment(glyph, style))
        return _pad(segments, width)


class ValueHistogram(Widget):
    """A tensor value's finite elements in bins (a column each), bars on a linear scale,
    the range below and what is not finite beside it."""

    DEFAULT_CSS = "ValueHistogram { height: 6; }"

    def __init__(self, value: np.ndarray, **kwargs) -> None:
        super().__init__(**kwargs)
        flat = np.asarray(value).reshape(-1)
        self.finite = (
            flat[np.isfinite(flat)].astype(np.float64) if flat.dtype.kind in "fiub" else np.zeros(0)
        )
        self.nonfinite = int(flat.size - self.finite.size) if flat.dtype.kind in "fiub" else 0

    def render_line(self, y: int) -> Strip:
        width, height = self.size.width, self.size.height
        if not self.finite.size:
            text = "no finite element to count" if y == 0 else ""
            return _pad([Segment(text, _DIM)], width)
        label = 9
        counts, edges = np.histogram(self.finite, bins=max(1, width - label))
        if y == height - 1:
            low, high = cells.number(edges[0]), cells.number(edges[-1])
            extra = f"  {self.nonfinite:,} not finite" if self.nonfinite else ""
            room = max(1, width - label - len(low) - len(high) - len(extra))
            return _pad(
                [Segment(" " * label), Segment(low + " " * room + high + extra, _DIM)], width
            )
        rows = height - 1
        top = int(counts.max())
        text = f"{top:,}" if y == 0 else ("0" if y == rows - 1 else "")
        segments = [Segment(text.rjust(label - 1)[: label - 1] + "│", _DIM)]
        floor = (rows - 1 - y) * 8
        for count in counts.tolist():
            bar = 0 if not count else max(1, int(count * 8 * rows / max(1, top)))
            glyph = " " if bar <= floor else cells.BAR_EIGHTHS[min(8, bar - floor)]
            segments.append(Segment(glyph, Style(color="green")))
        return _pad(segments, width)
