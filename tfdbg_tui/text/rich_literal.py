"""`literal_text`: dump text as Rich `Text`, shown literally: no markup, no control
characters.

Apart from `tfdbg_tui.text.literal` (plain strings) so that what prints JSON never
imports Rich.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from tfdbg_tui.text.literal import literal


def literal_text(value: object, style: str | Style = "") -> Text:
    """A `Text` holding `value` literally (no markup, no control characters)."""
    return Text(literal(value), style=style, no_wrap=True, end="")
