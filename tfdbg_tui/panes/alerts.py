"""The Alerts pane: NaN/inf alerts counted by type and listed in execution order."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message

from reader.model import Alert, AlertSummary
from tfdbg_tui.literal import literal
from tfdbg_tui.widgets.line_list import LineList
from tfdbg_tui.widgets.pane import Pane


class AlertList(LineList):
    """A heading with the counts by type, then one row per alert, oldest first."""

    BINDINGS = [Binding("enter", "choose", "Go to alert", show=False)]

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "alerts--type", "alerts--kind", "alerts--none"}

    DEFAULT_CSS = """
    AlertList {
        & > .alerts--type { color: $error; text-style: bold; }
        & > .alerts--kind { color: $text-muted; }
        & > .alerts--none { color: $success; }
    }
    """

    header_height = 1

    class AlertSelected(Message):
        """The cursor is on an alert: every pane should move to it."""

        def __init__(self, alert: Alert) -> None:
            super().__init__()
            self.alert = alert

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.summary: AlertSummary | None = None

    def show_alerts(self, summary: AlertSummary) -> None:
        """Show `summary`; the cursor stays on its alert when alerts are appended."""
        self.summary = summary
        self.invalidate()
        self.set_row_count(len(summary.alerts))

    @property
    def alerts(self) -> list[Alert]:
        return list(self.summary.alerts) if self.summary else []

    def position_of(self, alert: Alert) -> int | None:
        """Row of an alert of the same kind and index, if listed."""
        if self.summary is None:
            return None
        for row, listed in enumerate(self.summary.alerts):
            if listed.kind == alert.kind and listed.index == alert.index:
                return row
        return None

    def render_header(self, y: int, width: int) -> Text:
        if self.summary is None:
            return Text("reading…")
        if not self.summary.total:
            return Text("no NaN or inf so far", style=self.component_style("alerts--none"))
        text = Text(f"{self.summary.total} alerts: ")
        for alert_type, number in self.summary.counts.items():
            text.append(f"{alert_type} ", self.component_style("alerts--type"))
            text.append(f"{number}  ")
        if len(self.summary.alerts) < self.summary.total:
            text.append(f"(first {len(self.summary.alerts)} listed)")
        return text

    def render_row(self, row: int, width: int) -> Text:
        alert = self.summary.alerts[row]
        text = Text(alert.alert_type.ljust(5), style=self.component_style("alerts--type"))
        where = "graph" if alert.kind == "graph" else "eager"
        text.append(f" {where} #{alert.index} ", self.component_style("alerts--kind"))
        if alert.op_name is not None:
            text.append(literal(f"{alert.op_type} {alert.op_name}:{alert.slot}"))
        else:
            text.append(literal(f"{alert.op_type}:{alert.slot}"))
        text.append(f"  step {alert.step}", self.component_style("alerts--kind"))
        parts = [f"{label} {value}" for label, value in (
            ("NaN", alert.nan), ("-inf", alert.neg_inf), ("+inf", alert.pos_inf)) if value]
        if parts:
            text.append("  " + ", ".join(parts))
        return text

    def cursor_changed(self, row: int) -> None:
        if self.summary is not None and row < len(self.summary.alerts):
            self.post_message(self.AlertSelected(self.summary.alerts[row]))

    def action_choose(self) -> None:
        self.cursor_changed(self.cursor)

    def show_cursor_at(self, row: int) -> None:
        """Put the cursor on `row` and scroll to it without announcing a selection
        (the other panes are moving to that alert already)."""
        self.set_reactive(AlertList.cursor, row)
        self.keep_cursor_visible()
        self.refresh()

    def step(self, offset: int) -> None:
        """Move to the next (+1) or previous (-1) alert."""
        if self.row_count:
            self.move_cursor(self.cursor + offset)


class AlertsPane(Pane):
    """Container of the alert list: border, title, zoomable."""

    TITLE = "1 Alerts"
    CONTENT = AlertList
    CONTENT_ID = "alerts"
