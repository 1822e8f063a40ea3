"""Notices: what the writer says about its own recording (docs/format.md, `notice`,
format 1.2): what it could not record, or recorded differently.

A notice tells the user that part of the program is not in the dump (an XLA-compiled
function whose tensors could not be traced, a function traced before the dump was
enabled), or that a setting changes what the dump holds (filters, a circular buffer,
a mixed-precision policy). The TUI and `tfdbg-tui report` only format them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reader import format as fmt
from reader.contract import NoticeRecord


@dataclass(frozen=True, slots=True)
class Notice:
    """One notice of the run.

    Attributes:
        kind: What it is about (``reader.format.NOTICE_*``; unknown kinds are kept).
        level: ``"warning"`` (part of the program may be missing from the dump) or
            ``"info"``.
        message: One line, for people.
        details: Facts for tools: names of functions, settings, counts.
        time: Unix time it was written, or None.
    """

    kind: str
    level: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    time: float | None = None

    @property
    def is_warning(self) -> bool:
        """True when part of the program may be missing from the dump."""
        return self.level == fmt.NOTICE_WARNING


def notice_from_record(record: dict[str, Any]) -> Notice | None:
    """The `Notice` of a ``notice`` record; None when its kind or message is missing."""
    kind, message = record.get(NoticeRecord.NOTICE_KIND), record.get(NoticeRecord.MESSAGE)
    if not isinstance(kind, str) or not isinstance(message, str):
        return None
    level = record.get(NoticeRecord.LEVEL)
    details = record.get(NoticeRecord.DETAILS)
    when = record.get(NoticeRecord.TIME)
    return Notice(
        kind=kind,
        level=level if level in fmt.NOTICE_LEVELS else fmt.NOTICE_WARNING,
        message=" ".join(message.split()),
        details={str(k): v for k, v in details.items()} if isinstance(details, dict) else {},
        time=float(when) if isinstance(when, (int, float)) else None,
    )


def count_warnings(notices: tuple[Notice, ...] | list[Notice]) -> int:
    """How many of ``notices`` are warnings."""
    return sum(1 for notice in notices if notice.is_warning)
