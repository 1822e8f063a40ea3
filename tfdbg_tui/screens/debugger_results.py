"""What the debugger screen's workers post to it: the result of one read each.

The flow is worker -> message -> screen -> pane: a `@work(thread=True)` method of
`DebuggerScreen` reads the dump and posts one of these; the screen's handler keeps
what it needs and sets the rest on the panes. Results that can go stale carry the
token of their request (`DebuggerScreen._next_token`).
"""

from __future__ import annotations

from textual.message import Message

from reader.analysis.diagnosis.diagnosis import Diagnosis
from reader.model import RunInfo
from tfdbg_tui.messages import DumpFailed
from tfdbg_tui.models.context_loader import ExecutionContext, TraceContext
from tfdbg_tui.models.hunt import Hunt, Opened
from tfdbg_tui.models.source_view import SourceView


class ReaderOpened(Message):
    """The run is open and indexed: its reader, liveness state and hunt
    (`tfdbg_tui.models.hunt.Opened`); `runs`, the logdir's runs when they were listed
    again (after waiting for the first run), else None. It bubbles to the app, which
    follows a multi-worker job from there."""

    def __init__(self, opened: Opened, runs: list[RunInfo] | None = None) -> None:
        super().__init__()
        self.opened = opened
        self.runs = runs


class OpenFailed(DumpFailed):
    """The run could not be opened; the app exits with the error's status."""


class ReadFailed(DumpFailed):
    """A worker's read raised a `DumpError` (e.g. a record that left the disk)."""


class HuntLoaded(Message):
    """The run's hunt (`tfdbg_tui.models.hunt.Hunt`); `select` moves the panes."""

    def __init__(self, hunt: Hunt, select: bool) -> None:
        super().__init__()
        self.hunt = hunt
        self.select = select


class DiagnosisLoaded(Message):
    """The diagnosis of an alert the user selected."""

    def __init__(self, diagnosis: Diagnosis, token: int) -> None:
        super().__init__()
        self.diagnosis = diagnosis
        self.token = token


class ContextLoaded(Message):
    """What the panes show about a selected trace or execution."""

    def __init__(self, context: TraceContext | ExecutionContext, token: int,
                 detail_only: bool = False) -> None:
        super().__init__()
        self.context = context
        self.token = token
        self.detail_only = detail_only


class SourceLoaded(Message):
    """A frame's line in its highlighted source file, for Source Code; `highlighted`
    is the file alone (file `file_id`), for the screen to keep."""

    def __init__(self, view: SourceView, token: int, file_id: int,
                 highlighted: SourceView) -> None:
        super().__init__()
        self.view = view
        self.token = token
        self.file_id = file_id
        self.highlighted = highlighted
