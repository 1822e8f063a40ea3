"""Follows a live dump: calls `reader.update()` about once a second in a thread worker
and posts `DumpChanged`.

The watcher never touches a widget: it posts `DumpChanged` to the screen that started
it, whose handler updates the panes. It stops when the run finishes or its process is
found gone (killed: nothing more will be written).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message
from textual.message_pump import MessagePump

from reader.errors import DumpError
from reader.model import UpdateReport
from reader.run import liveness
from tfdbg_tui.messages import DumpFailed

if TYPE_CHECKING:
    from reader import Run

# New records reach the screen within one poll interval plus the writer's flush
# interval (0.5 s): about 1.5 s, inside the 2 s the design allows.
POLL_INTERVAL_S = 1.0
# Run states after which nothing more is written.
ENDED = liveness.ENDED


@dataclass
class DumpChanged(Message):
    """The dump grew (or was found damaged, or its run ended) since the last poll.

    `state` is the run's `reader.run.liveness` state.
    """

    report: UpdateReport
    state: str

    @property
    def finished(self) -> bool:
        return self.state == liveness.FINISHED


class DumpWatchFailed(DumpFailed):
    """`update()` raised a `DumpError`; the watcher stopped."""


class DumpWatcher:
    """Polls a dump reader until the run finishes or `stop()` is called.

    Args:
        reader: The run to update (it is thread-safe).
        target: Where to post `DumpChanged` (the debugger screen).
        interval_s: Seconds between polls.
    """

    def __init__(self, reader: Run, target: MessagePump, interval_s: float = POLL_INTERVAL_S):
        self._reader = reader
        self._target = target
        self._interval_s = interval_s
        self._stop = threading.Event()
        self.state = liveness.UNKNOWN

    def stop(self) -> None:
        """Ask the loop to end at its next wake-up (does not wait)."""
        self._stop.set()

    def poll_once(self) -> UpdateReport:
        """One `update()`; posts `DumpChanged` when something changed or the run ended."""
        # Looked at before reading: whatever a process found gone (or whose reserve
        # was given back) wrote is read below.
        gone = self._reader.process_gone()
        released = self._reader.reserve_released()
        report = self._reader.update()
        self.state = liveness.state_of(
            self._reader.finished, gone, self._reader.recording_stopped(released)
        )
        if report.changed or self.state in ENDED:
            self._target.post_message(DumpChanged(report, self.state))
        return report

    def run(self) -> None:
        """The worker body: poll until stopped or the run has finished."""
        while not self._stop.wait(self._interval_s):
            try:
                self.poll_once()
            except DumpError as error:
                self._target.post_message(DumpWatchFailed(error))
                return
            if self.state in ENDED:
                return
