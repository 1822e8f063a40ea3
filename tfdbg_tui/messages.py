"""Messages shared by more than one part of the app: `DumpFailed`, the base of every "a
read failed" message."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from reader.errors import DumpError


@dataclass
class DumpFailed(Message):
    """A read of the dump raised `error`; subclasses say which read, and so who handles it.

    Textual dispatches `@on` handlers by the message's exact class, so a handler of one
    subclass never sees another's.
    """

    error: DumpError
