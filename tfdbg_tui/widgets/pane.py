"""`Pane`: the bordered, titled, zoomable container every debugger section sits in."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget


class Pane(Vertical):
    """One section of the debugger: a border titled "N Name" around its main widget.

    Subclasses set `TITLE`, `CONTENT` (the main widget's class) and `CONTENT_ID`; the
    pane's id is ``CONTENT_ID + "-pane"`` (the layout in app.tcss uses it).
    """

    ALLOW_MAXIMIZE = True

    TITLE: ClassVar[str]
    CONTENT: ClassVar[type[Widget]]
    CONTENT_ID: ClassVar[str]

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
