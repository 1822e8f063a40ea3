"""What the debugger screen's workers post to it: the result of one read each.

The flow is worker -> message -> screen -> pane: a `@work(thread=True)` method of
`DebuggerScreen` reads the dump and posts one of these; the screen's handler keeps
what it needs and sets the rest on the panes. Results that can go stale carry the
token of their request (`DebuggerScreen._next_token`).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from reader.analysis.diagnosis.diagnosis import Diagnosis
from reader.model import RunInfo
from tfdbg_tui.messages import DumpFailed
from tfdbg_tui.models.context_loader import ExecutionContext, TraceContext
from tfdbg_tui.models.hunt import Hunt, Opened
from tfdbg_tui.models.source_view import SourceView


@dataclass
class ReaderOpened(Message):
    """The run is open and indexed: its reader, liveness state and hunt
    (`tfdbg_tui.models.hunt.Opened`); `runs`, the logdir's runs when they were listed
    again (after waiting for the first run), else None. It bubbles to the app, which
    follows a multi-worker job from there."""

    opened: Opened
    runs: list[RunInfo] | None = None


class OpenFailed(DumpFailed):
    """The run could not be opened; the app exits with the error's status."""


class ReadFailed(DumpFailed):
    """A worker's read raised a `DumpError` (e.g. a record that left the disk)."""


@dataclass
class HuntLoaded(Message):
    """The run's hunt (`tfdbg_tui.models.hunt.Hunt`); `select` moves the panes."""

    hunt: Hunt
    select: bool


@dataclass
class DiagnosisLoaded(Message):
    """The diagnosis of an alert the user selected."""

    diagnosis: Diagnosis
    token: int


@dataclass
class ContextLoaded(Message):
    """What the panes show about a selected trace or execution."""

    context: TraceContext | ExecutionContext
    token: int
    detail_only: bool = False


@dataclass
class SourceLoaded(Message):
    """A frame's line in its highlighted source file, for Source Code; `highlighted`
    is the file alone (file `file_id`), for the screen to keep."""

    view: SourceView
    token: int
    file_id: int
    highlighted: SourceView
