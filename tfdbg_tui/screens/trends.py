"""The `t` screen: the run's trends by layer and step, and the watch rules' hits. A
worker computes the trends and the rules, its handler sets the heatmap, the chart and
the hits; keys move the selection and cycle the series.

A worker computes the trends and the rules (`DumpReader.trends`, cached in the reader,
and `DumpReader.watch`) and posts `TrendsLoaded`;
its handler sets what the widgets show. Keys move the selection (a layer, a step) and
cycle the series; the widgets are repainted from the screen's state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from reader.analysis.analysed_run import AnalysedRun
from reader.analysis.trends.trends import SERIES, SERIES_TITLES, Trends
from reader.analysis.trends.watch_rules import WatchReport, hits_of_row
from reader.errors import DumpError
from tfdbg_tui.models.trend_cells import number
from tfdbg_tui.text.literal import literal
from tfdbg_tui.widgets.key_footer import KeyFooter
from tfdbg_tui.widgets.trend_charts import ANOMALY_MARK, HARMFUL_MARK, SeriesChart, TrendHeatmap

# Rule hits listed under the chart (the selected row's, else the run's first).
HITS_SHOWN = 6


def _line(*parts: str | tuple[str, str]) -> Text:
    """One line that never wraps: what does not fit ends in an ellipsis."""
    text = Text.assemble(*parts)
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


@dataclass
class TrendsLoaded(Message):
    """The worker's result: the trends and the rules' report, or the read's error."""

    trends: Trends | None
    report: WatchReport | None
    error: DumpError | None = None


class TrendsScreen(Screen[None]):
    """Per layer and step: a heatmap of the chosen series, the selected layer's
    series as a chart, the first anomaly and the first harmful value marked.

    Args:
        reader: The open run.
    """

    BINDINGS = [
        Binding("escape,q,t", "close", "Close"),
        Binding("s", "next_series", "Series"),
        Binding("up", "move(-1, 0)", "Layer", show=False),
        Binding("down", "move(1, 0)", "Layer", show=False),
        Binding("left", "move(0, -1)", "Step", show=False),
        Binding("right", "move(0, 1)", "Step", show=False),
        Binding("home", "edge(0)", "First step", show=False),
        Binding("end", "edge(1)", "Last step", show=False),
        Binding("a", "to_anomaly", "First anomaly"),
    ]

    DEFAULT_CSS = """
    TrendsScreen { background: $background; }
    TrendsScreen > Static { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    TrendsScreen > #trends-title { text-style: bold; }
    TrendsScreen > TrendHeatmap, TrendsScreen > SeriesChart { margin: 0 0 0 0; }
    TrendsScreen > #trends-hits { height: auto; max-height: 7; }
    """

    def __init__(self, reader: AnalysedRun) -> None:
        super().__init__()
        self.reader = reader
        self.trends: Trends | None = None
        self.report: WatchReport | None = None
        self.series = 0
        self.row = 0
        self.step = 0

    def compose(self) -> ComposeResult:
        yield Static("Trends: computing…", id="trends-title")
        yield Static("", id="trends-marks")
        yield TrendHeatmap(id="trends-heatmap")
        yield Static("", id="trends-cell")
        yield SeriesChart(id="trends-chart")
        yield Static("", id="trends-hits")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        try:
            trends = self.reader.trends()
            report = self.reader.watch()
        except DumpError as error:
            self.post_message(TrendsLoaded(None, None, error))
            return
        self.post_message(TrendsLoaded(trends, report))

    @on(TrendsLoaded)
    def _loaded(self, message: TrendsLoaded) -> None:
        if message.error is not None:
            self.query_one("#trends-title", Static).update(
                Text(f"Trends: could not read the run: {literal(str(message.error))}")
            )
            return
        self.trends, self.report = message.trends, message.report
        trends = self.trends
        if trends is None or trends.empty:
            self.query_one("#trends-title", Static).update(
                Text(
                    "Trends: no layer or trained variable in this run's graphs (the "
                    "series need FULL_STATS, or FULL_HEALTH for magnitudes and zeros)"
                )
            )
            return
        available = trends.available()
        if not available:
            blind = any(mask.any() for mask in trends.unknown.values())
            self.query_one("#trends-title", Static).update(
                _line(
                    f"Trends: no norm or magnitude in this {trends.mode} run ("
                    + (
                        "its summaries record no max |x|: TensorFlow's own dumps, or tensors "
                        "summarised the stock way"
                        if blind
                        else "norms need FULL_STATS; FULL_HEALTH gives magnitudes from "
                        "format 2.2 on"
                    )
                    + ")"
                )
            )
            self._show_hits()
            return
        self.series = SERIES.index(available[0])
        self.action_to_anomaly(quiet=True)
        self._show()

    # -- state to widgets ----------------------------------------------------------

    def _position(self, step: int | None) -> int | None:
        trends = self.trends
        if step is None or trends is None:
            return None
        position = int(np.searchsorted(trends.steps, step))
        return position if position < trends.steps.size else None

    def _rows(self) -> list[int]:
        """The rows the chosen series has values for (a layer has no loss scale, the
        loss scale's row no gradient)."""
        assert self.trends is not None
        name = SERIES[self.series]
        table = self.trends.series[name]
        unknown = self.trends.unknown.get(name)
        has = ~np.isnan(table).all(axis=1)
        if unknown is not None:
            has |= unknown.any(axis=1)
        return np.flatnonzero(has).tolist() or list(range(len(self.trends.rows)))

    def _show(self) -> None:
        trends, report = self.trends, self.report
        if trends is None or report is None or trends.empty:
            return
        name = SERIES[self.series]
        table = trends.series[name]
        rows = self._rows()
        if self.row not in rows:
            self.row = rows[0]
        unknown = trends.unknown.get(name)
        blind = int(unknown.sum()) if unknown is not None else 0
        self.query_one("#trends-title", Static).update(
            _line(
                (f"Trends: {SERIES_TITLES[name]}", "bold"),
                f" by layer and {trends.unit}  (s: series, arrows: move)"
                if not blind
                else f" ({blind} cell{'s' if blind != 1 else ''} blank: a tensor without max |x|)",
            )
        )
        marks = _line()
        first = report.first_anomaly
        if first is not None:
            marks.append(f"{ANOMALY_MARK} first anomaly: ", "bold yellow")
            marks.append(f"{trends.unit} {first.step}, {first.rule}")
        else:
            marks.append("no watch rule fired", "green")
        if report.first_harmful_step is not None:
            marks.append(f"  {HARMFUL_MARK} first harmful: ", "bold red")
            marks.append(f"{trends.unit} {report.first_harmful_step}")
            if report.lead_steps is not None:
                marks.append(f" (lead {report.lead_steps})")
        self.query_one("#trends-marks", Static).update(marks)
        self.query_one(TrendHeatmap).show(
            tuple(trends.rows[r] for r in rows),
            table[rows],
            trends.steps,
            trends.unit,
            rows.index(self.row),
            self.step,
            self._position(first.step if first else None),
            self._position(report.first_harmful_step),
        )
        value = float(table[self.row, self.step])
        said = number(value) if not np.isnan(value) else "not recorded"
        step = int(trends.steps[self.step])
        if np.isnan(value) and any(h.rule == "loss_scale" and h.step == step for h in report.hits):
            said = "none: the loss scaler skipped this step"
        if unknown is not None and unknown[self.row, self.step]:
            said = "unknown (a tensor without max |x|)"
        self.query_one("#trends-cell", Static).update(
            _line(
                (literal(trends.rows[self.row]), "bold"),
                f"  {trends.unit} {trends.steps[self.step]}: {SERIES_TITLES[name]} ",
                (said, "bold"),
            )
        )
        self.query_one(SeriesChart).show(table[self.row], self.step)
        self._show_hits()

    def _show_hits(self) -> None:
        trends, report = self.trends, self.report
        assert trends is not None and report is not None
        own = hits_of_row(report, trends, self.row) if trends.rows else []
        text = _line()
        text.append(f"{len(report.hits)} rule hit{'s' if len(report.hits) != 1 else ''}", "bold")
        text.append(
            f", {len(own)} for this row"
            if report.hits
            else " (rules: exploding, vanishing, float16_headroom, loss_scale)"
        )
        lines = [text] + [
            _line("  " + literal(hit.describe(trends.unit)))
            for hit in (own or list(report.hits))[:HITS_SHOWN]
        ]
        joined = Text("\n").join(lines)
        joined.no_wrap, joined.overflow = True, "ellipsis"
        self.query_one("#trends-hits", Static).update(joined)

    # -- keys ------------------------------------------------------------------------

    def action_close(self) -> None:
        self.dismiss(None)

    def action_next_series(self) -> None:
        if self.trends is None or self.trends.empty or not self.trends.available():
            return
        available = self.trends.available() or SERIES
        current = SERIES[self.series]
        following = [
            s
            for s in SERIES[self.series + 1 :] + SERIES[: self.series + 1]
            if s in available and s != current
        ] or [current]
        self.series = SERIES.index(following[0])
        self._show()

    def action_move(self, rows: int, steps: int) -> None:
        if self.trends is None or self.trends.empty or not self.trends.available():
            return
        shown = self._rows()
        at = shown.index(self.row) if self.row in shown else 0
        self.row = shown[min(max(0, at + rows), len(shown) - 1)]
        self.step = min(max(0, self.step + steps), self.trends.steps.size - 1)
        self._show()

    def action_edge(self, last: int) -> None:
        if self.trends is None or self.trends.empty or not self.trends.available():
            return
        self.step = self.trends.steps.size - 1 if last else 0
        self._show()

    def action_to_anomaly(self, quiet: bool = False) -> None:
        """Select the first anomaly's layer and step."""
        trends, report = self.trends, self.report
        if trends is None or report is None or trends.empty or not trends.available():
            return
        first = report.first_anomaly
        if first is None:
            if not quiet:
                self.notify("no watch rule fired")
            return
        subject = first.layer or first.tensor
        if subject in trends.rows:
            self.row = trends.rows.index(subject)
        position = self._position(first.step)
        if position is not None:
            self.step = position
        if not quiet:
            self._show()
