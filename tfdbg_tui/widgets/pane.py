"""`Pane`: the bordered, titled, zoomable container every debugger section sits in, and
`Section`, what each pane declares it is (its key, its main widget's id, its name);
`tfdbg_tui.panes.registry` lists the panes.

A pane also names the actions of its main widget that the command palette offers
(`PaneCommand`), so the palette's entries for a pane live with the pane.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widget import Widget


@dataclass(frozen=True)
class Section:
    """One of the debugger's sections: the key that focuses it, its main widget's
    id and its name."""

    key: str
    content_id: str
    name: str

    @property
    def title(self) -> str:
        """The pane's border title, "N Name"."""
        return f"{self.key} {self.name}"


@dataclass(frozen=True)
class PaneCommand:
    """An action of a pane's main widget that the command palette offers: the action's
    name (its binding's, without ``action_``) and the palette's title for it."""

    action: str
    title: str


class Pane(Vertical):
    """One section of the debugger: a border titled "N Name" around its main widget.

    Subclasses set `CONTENT` (the main widget's class) and `SECTION`, which gives
    `CONTENT_ID` (the main widget's id) and `TITLE`; the pane's id is
    ``CONTENT_ID + "-pane"`` (the layout in app.tcss uses it). `COMMANDS` are the
    actions of `CONTENT` the command palette offers, each bound to a key in
    `CONTENT.BINDINGS`.
    """

    ALLOW_MAXIMIZE = True

    CONTENT: ClassVar[type[Widget]]
    CONTENT_ID: ClassVar[str]
    SECTION: ClassVar[Section]
    TITLE: ClassVar[str]
    COMMANDS: ClassVar[tuple[PaneCommand, ...]] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.CONTENT_ID = cls.SECTION.content_id
        cls.TITLE = cls.SECTION.title

    @classmethod
    def binding_of(cls, action: str) -> Binding:
        """The binding of `CONTENT` that runs ``action``; KeyError when none does."""
        for binding in cls.CONTENT.BINDINGS:
            if isinstance(binding, Binding) and binding.action == action:
                return binding
        raise KeyError(f"{cls.CONTENT.__name__} binds no key to {action!r}")

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
