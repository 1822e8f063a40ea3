"""The Alerts pane: NaN/inf alerts counted by type and per step, listed in execution order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message

from reader.analysis.hunt.model_place import Place
from reader.analysis.hunt.steps import Steps
from reader.model import Alert, AlertSummary
from tfdbg_tui.models.kept_rows import GappedRows
from tfdbg_tui.text.literal import literal
from tfdbg_tui.text.step_sparkline import sparkline, step_range
from tfdbg_tui.widgets.line_list import LineList
from tfdbg_tui.widgets.pane import Pane, Section

# The alerts-per-step line is drawn when at least this many cells fit.
SPARKLINE_MIN_CELLS = 8


class AlertList(LineList):
    """Headings, then one row per alert, oldest first, and a row for each gap.

    The first heading counts the alerts by type; once the run's steps are known, the
    second says at which step the first non-finite value appeared and draws the
    alerts per step (`step_sparkline`). Rows name each alert's step; where a circular
    buffer did not keep records, a gap row says which steps are missing, so the list
    never reads as one continuous stretch.
    """

    BINDINGS = [Binding("enter", "choose", "Go to alert", show=False)]

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "alerts--type",
        "alerts--kind",
        "alerts--none",
        "alerts--gap",
        "alerts--sparkline",
        "alerts--contained",
    }

    DEFAULT_CSS = """
    AlertList {
        & > .alerts--type { color: $error; text-style: bold; }
        & > .alerts--kind { color: $text-muted; }
        & > .alerts--none { color: $success; }
        & > .alerts--gap { color: $warning; text-style: italic; }
        & > .alerts--sparkline { color: $error; }
        & > .alerts--contained { color: $text-disabled; }
    }
    """

    header_height = 1

    @dataclass
    class AlertSelected(Message):
        """The cursor is on an alert: every pane should move to it."""

        alert: Alert

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.summary: AlertSummary | None = None
        self.steps: Steps | None = None
        self.places: list[Place] | None = None
        self._rows = GappedRows()

    def show_alerts(
        self, summary: AlertSummary, steps: Steps | None = None, places: list[Place] | None = None
    ) -> None:
        """Show `summary` (and `steps`: step numbers, gaps, alerts per step; `places`:
        where in the model each listed alert was made); the cursor stays on its alert
        when alerts are appended."""
        self.summary = summary
        self.steps = steps
        self.places = places
        positions = np.fromiter(
            (a.step for a in summary.alerts), dtype=np.int64, count=len(summary.alerts)
        )
        self._rows = GappedRows(
            len(summary.alerts), steps.gap_positions(positions) if steps is not None else ()
        )
        height = 2 if steps is not None and steps.first_alert_position is not None else 1
        if height != self.header_height:
            self.header_height = height
            self.virtual_size = Size(self.size.width, self.row_count + height)
        self.invalidate()
        self.set_row_count(self._rows.count)

    @property
    def alerts(self) -> list[Alert]:
        return list(self.summary.alerts) if self.summary else []

    def _alert_at(self, row: int) -> Alert | None:
        """The alert shown at `row`; None for a gap row or past the last row."""
        if self.summary is None:
            return None
        data_row = self._rows.data_row(row)
        return None if data_row is None else self.summary.alerts[data_row]

    def _row_of(self, alert: Alert) -> int | None:
        """Row of an alert of the same kind and index, if listed."""
        if self.summary is None:
            return None
        for data_row, listed in enumerate(self.summary.alerts):
            if listed.kind == alert.kind and listed.index == alert.index:
                return self._rows.row_of_data(data_row)
        return None

    def render_header(self, y: int, width: int) -> Text:
        if self.summary is None:
            return Text("reading…")
        if y == 1:
            return self._render_steps_heading(width)
        if not self.summary.total:
            return Text("no NaN or inf so far", style=self.component_style("alerts--none"))
        text = Text(f"{self.summary.total} alerts: ")
        for alert_type, number in self.summary.counts.items():
            text.append(f"{alert_type} ", self.component_style("alerts--type"))
            text.append(f"{number}  ")
        contained = sum(self.summary.contained.values())
        if contained:
            text.append(f"({contained} contained) ", self.component_style("alerts--contained"))
        if len(self.summary.alerts) < self.summary.total:
            text.append(f"(first {len(self.summary.alerts)} listed)")
        return text

    def _render_steps_heading(self, width: int) -> Text:
        """ "first non-finite value at step 250", then the alerts per step."""
        steps = self.steps
        if steps is None or steps.first_alert_position is None:
            return Text()
        text = Text(
            f"first non-finite value at {steps.place(steps.first_alert_position)}", style="bold"
        )
        span = step_range(steps)
        if span is None:
            return text
        # The steps' label goes first when space is short: the rows name steps too.
        label = f"  steps {span[0]}-{span[1]} "
        if width - len(text) - len(label) < SPARKLINE_MIN_CELLS:
            label = "  "
        room = width - len(text) - len(label)
        if room >= SPARKLINE_MIN_CELLS:
            text.append(label, self.component_style("alerts--kind"))
            text.append(sparkline(steps, room), self.component_style("alerts--sparkline"))
        return text

    def render_row(self, row: int, width: int) -> Text:
        alert = self._alert_at(row)
        if alert is None:
            return self._render_gap(row)
        if alert.contained:
            return self._render_contained(row, alert)
        text = Text(alert.alert_type.ljust(5), style=self.component_style("alerts--type"))
        where = "graph" if alert.kind == "graph" else "eager"
        text.append(f" {where} #{alert.index} ", self.component_style("alerts--kind"))
        text.append(
            literal(
                f"{alert.op_type} {alert.tensor_name}"
                if alert.op_name is not None
                else alert.tensor_name
            )
        )
        step = self.steps.of_execution(alert.step) if self.steps is not None else None
        if step is not None:
            text.append(f"  step {step}", self.component_style("alerts--kind"))
        parts = [
            f"{label} {value}"
            for label, value in (
                ("NaN", alert.nan),
                ("-inf", alert.neg_inf),
                ("+inf", alert.pos_inf),
            )
            if value > 0
        ]
        if parts:
            text.append("  " + ", ".join(parts))
        place = self._place_at(row)
        if place is not None:
            text.append(f"  {place.phase}", self.component_style("alerts--kind"))
            if place.layer:
                text.append(" " + literal(place.layer), self.component_style("alerts--kind"))
        return text

    def _place_at(self, row: int) -> Place | None:
        data_row = self._rows.data_row(row)
        if self.places is None or data_row is None or data_row >= len(self.places):
            return None
        return self.places[data_row]

    def _render_contained(self, row: int, alert: Alert) -> Text:
        """A contained alert: dimmed, with its reason."""
        step = self.steps.of_execution(alert.step) if self.steps is not None else None
        place = self._place_at(row)
        text = f"{alert.alert_type:<5} {alert.kind} #{alert.index} " + (
            f"{alert.op_type} {alert.tensor_name}"
            if alert.op_name is not None
            else alert.tensor_name
        )
        text += (f"  step {step}" if step is not None else "") + f"  contained: {alert.contained}"
        if place is not None:
            text += f"  {place.phase}" + (f" {place.layer}" if place.layer else "")
        return Text(literal(text), style=self.component_style("alerts--contained"))

    def _render_gap(self, row: int) -> Text:
        gap = self._rows.gap_at(row)
        assert self.steps is not None and gap is not None
        return Text(
            f"┄┄ {self.steps.gaps[gap].describe()} ┄┄", style=self.component_style("alerts--gap")
        )

    def cursor_changed(self, row: int) -> None:
        alert = self._alert_at(row)
        if alert is not None:
            self.post_message(self.AlertSelected(alert))

    def action_choose(self) -> None:
        self.cursor_changed(self.cursor)

    def show_alert(self, alert: Alert) -> None:
        """Put the cursor on `alert`'s row (when listed) and scroll to it without
        announcing a selection (the other panes are moving to that alert already)."""
        row = self._row_of(alert)
        if row is None:
            return
        self.set_reactive(AlertList.cursor, row)
        self.keep_cursor_visible()
        self.refresh()

    def step(self, offset: int) -> None:
        """Move to the next (+1) or previous (-1) alert, over gap rows."""
        if not self.row_count:
            return
        row = self.cursor + offset
        while 0 <= row < self.row_count and self._alert_at(row) is None:
            row += offset
        if 0 <= row < self.row_count:
            self.move_cursor(row)


class AlertsPane(Pane):
    """Container of the alert list: border, title, zoomable."""

    CONTENT = AlertList
    SECTION = Section("1", "alerts", "Alerts")
