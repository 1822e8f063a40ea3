"""Follows a live dump: calls `reader.update()` about once a second in a thread worker.

The watcher never touches a widget: it posts `DumpChanged` to the screen that started
it, whose handler updates the panes.
"""

from __future__ import annotations

import threading

from textual.message import Message
from textual.message_pump import MessagePump

from reader.errors import DumpError
from reader.model import UpdateReport
from tfdbg_tui.messages import DumpFailed

# New records reach the screen within one poll interval plus the writer's flush
# interval (0.5 s): about 1.5 s, inside the 2 s the design allows.
POLL_INTERVAL_S = 1.0


class DumpChanged(Message):
    """The dump grew (or was found damaged) since the last poll."""

    def __init__(self, report: UpdateReport, finished: bool) -> None:
        super().__init__()
        self.report = report
        self.finished = finished


class DumpWatchFailed(DumpFailed):
    """`update()` raised a `DumpError`; the watcher stopped."""


class DumpWatcher:
    """Polls a dump reader until the run finishes or `stop()` is called.

    Args:
        reader: The `reader.DumpReader` to update (it is thread-safe).
        target: Where to post `DumpChanged` (the debugger screen).
        interval_s: Seconds between polls.
    """

    def __init__(self, reader, target: MessagePump, interval_s: float = POLL_INTERVAL_S):
        self._reader = reader
        self._target = target
        self._interval_s = interval_s
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ask the loop to end at its next wake-up (does not wait)."""
        self._stop.set()

    def poll_once(self) -> UpdateReport:
        """One `update()`; posts `DumpChanged` when something changed."""
        report = self._reader.update()
        finished = bool(self._reader.finished)
        if report.changed or finished:
            self._target.post_message(DumpChanged(report, finished))
        return report

    def run(self) -> None:
        """The worker body: poll until stopped or the run has finished."""
        while not self._stop.wait(self._interval_s):
            try:
                self.poll_once()
            except DumpError as error:
                self._target.post_message(DumpWatchFailed(error))
                return
            if self._reader.finished:
                return
