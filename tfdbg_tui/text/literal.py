"""Text from a dump, made safe to show as plain strings (no Rich): the one home for
displaying dump text.

Op names, file paths, function names, source lines, run ids, hosts, argv and reader
notices come from the program being debugged (or from bytes on disk). Every surface
that shows them, the TUI's panes and `tfdbg-tui report` alike, passes them through
`literal` or `literal_text`:

- control characters a terminal would obey (C0 including ESC and BEL, DEL, the C1
  range including the one-byte CSI ``\\x9b`` and OSC ``\\x9d``) become visible
  ``\\xNN`` escapes, so a CSI colour, an OSC 8 hyperlink or an OSC 52 clipboard write
  in a path is shown as text and never reaches the terminal as a sequence;
- characters that reorder or hide text (bidirectional overrides and isolates, as in
  "Trojan Source") and lone surrogates (which cannot be encoded for the terminal)
  become ``\\uXXXX`` escapes;
- Rich markup is never interpreted: callers build `rich.text.Text` from these strings
  (never markup strings; `tfdbg_tui.text.rich_literal.literal_text`), so ``[red]`` in an
  op name stays ``[red]``.

Plain strings only: this module does not import Rich, so `tfdbg-tui report --json`
never loads it.
"""

from __future__ import annotations

import re

# C0 controls (a tab included: callers that show tabs expand them first), DEL, C1.
# Then bidi embeddings/overrides (U+202A-202E), isolates (U+2066-2069), the bidi marks
# (U+200E, U+200F, U+061C) and lone surrogates.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def literal(value: object) -> str:
    """`value` as a string with every unsafe character replaced by a visible escape."""
    text = str(value)
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def literal_columns(line: str, start: int, end: int, tab_size: int = 8) -> tuple[int, int]:
    """Columns ``start:end`` of a source line as columns of the line shown, that is of
    ``literal(line.expandtabs(tab_size))`` (tabs expanded, control characters escaped)."""
    return (
        len(literal(line[:start].expandtabs(tab_size))),
        len(literal(line[:end].expandtabs(tab_size))),
    )
