"""The status line: live or finished, the counts, the mode and the run."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from reader.model import RunMetadata
from tfdbg_tui.literal import literal

# A live run that wrote nothing for this long may have been killed (a killed run
# never writes its `end` record).
IDLE_AFTER_S = 10.0


class StatusLine(Static):
    """One line at the top of the debugger screen."""

    DEFAULT_CSS = """
    StatusLine { dock: top; height: 1; background: $panel; }
    """

    def show(self, metadata: RunMetadata, *, live: bool, num_executions: int,
             num_traces: int, alerts: int | None, run_count: int,
             idle_s: float = 0.0) -> None:
        """Rewrite the line; the run id goes last, as at 80 columns it may be cut.

        A live run idle for `IDLE_AFTER_S` or more may have been killed: it says so.
        """
        text = Text()
        if not live:
            text.append(" finished ", "bold reverse")
        elif idle_s >= IDLE_AFTER_S:
            text.append(f" LIVE? idle {idle_s:.0f}s (running, or killed) ", "bold black on yellow")
        else:
            text.append(" ● LIVE ", "bold black on green")
        text.append(f" executions {num_executions:,}  traces {num_traces:,}")
        if alerts is not None:
            text.append(f"  alerts {alerts:,}", "bold red" if alerts else "green")
        text.append(f"  {metadata.tensor_debug_mode}")
        if run_count > 1:
            text.append(f"  {run_count} runs (r)")
        text.append("  run ")
        text.append(literal(metadata.run_id), "bold")
        self.update(text)
