"""`Pane`: the bordered, titled, zoomable container every debugger section sits in, and
`SECTIONS`, the one home of the sections' keys and titles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget


@dataclass(frozen=True)
class Section:
    """One of the debugger's six sections: the key that focuses it, its main widget's
    id and its name."""

    key: str
    content_id: str
    name: str

    @property
    def title(self) -> str:
        """The pane's border title, "N Name"."""
        return f"{self.key} {self.name}"


SECTIONS = (
    Section("1", "alerts", "Alerts"),
    Section("2", "timeline", "Python Execution Timeline"),
    Section("3", "graph-execution", "Graph Execution"),
    Section("4", "graph-structure", "Graph Structure"),
    Section("5", "source-code", "Source Code"),
    Section("6", "stack-trace", "Stack Trace"),
)


class Pane(Vertical):
    """One section of the debugger: a border titled "N Name" around its main widget.

    Subclasses set `CONTENT` (the main widget's class) and `CONTENT_ID`, which names
    their `SECTION` (and so `TITLE`); the pane's id is ``CONTENT_ID + "-pane"`` (the
    layout in app.tcss uses it).
    """

    ALLOW_MAXIMIZE = True

    CONTENT: ClassVar[type[Widget]]
    CONTENT_ID: ClassVar[str]
    SECTION: ClassVar[Section]
    TITLE: ClassVar[str]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.SECTION = next(s for s in SECTIONS if s.content_id == cls.CONTENT_ID)
        cls.TITLE = cls.SECTION.title

    def __init__(self) -> None:
        super().__init__(id=f"{self.CONTENT_ID}-pane", classes="pane")
        self.border_title = self.TITLE

    def compose(self) -> ComposeResult:
        yield self.CONTENT(id=self.CONTENT_ID)

    def set_title_suffix(self, suffix: str | Text) -> None:
        """Title the border `TITLE` followed by `suffix` (a mode, a file name)."""
        if isinstance(suffix, Text):
            self.border_title = Text(self.TITLE) + suffix
        else:
            self.border_title = self.TITLE + suffix
