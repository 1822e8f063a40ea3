"""Text from a dump, made safe to show: every character is shown as itself.

Op names, file paths, function names and source lines come from the program being
debugged. They are never parsed as Rich markup (we only build `rich.text.Text` from
them, never markup strings), and control characters, which a terminal would obey, are
replaced by visible escapes.
"""

from __future__ import annotations

import re

from rich.text import Text

# C0 controls (except none: a tab is expanded by the caller), DEL and C1 controls.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def literal(value: object) -> str:
    """`value` as a string with control characters replaced by ``\\xNN`` escapes."""
    text = str(value)
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def literal_text(value: object, style: str = "") -> Text:
    """A `Text` holding `value` literally (no markup, no control characters)."""
    return Text(literal(value), style=style, no_wrap=True, end="")


def literal_columns(line: str, start: int, end: int, tab_size: int = 8) -> tuple[int, int]:
    """Columns ``start:end`` of a source line as columns of the line shown, that is of
    ``literal(line.expandtabs(tab_size))`` (tabs expanded, control characters escaped)."""
    return (len(literal(line[:start].expandtabs(tab_size))),
            len(literal(line[:end].expandtabs(tab_size))))
