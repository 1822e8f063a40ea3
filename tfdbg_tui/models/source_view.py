"""`SourceView` and `highlight_source`: what the Source Code pane shows, as data: a
file's highlighted lines and a marked line.

`highlight_source` is slow for big files; the debugger's workers call it (through
`tfdbg_tui.models.context_loader.load_source`) and hand the pane a `SourceView`.
Pygments' lexers are imported by the first call, in a worker: not at the app's start,
which they would make ~25 ms longer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pygments.token import Comment, Keyword, Name, Number, Operator, String, Token
from rich.style import Style
from rich.text import Text

from tfdbg_tui.text.literal import literal

if TYPE_CHECKING:
    from pygments.lexer import Lexer

# Token styles in the 16 ANSI colours, so the code stays readable in any terminal.
_TOKEN_STYLES: tuple[tuple[object, Style], ...] = (
    (Comment, Style(color="bright_black", italic=True)),
    (String, Style(color="green")),
    (Number, Style(color="cyan")),
    (Keyword, Style(color="magenta", bold=True)),
    (Name.Builtin, Style(color="cyan")),
    (Name.Function, Style(color="blue", bold=True)),
    (Name.Class, Style(color="blue", bold=True)),
    (Name.Decorator, Style(color="yellow")),
    (Operator.Word, Style(color="magenta")),
)


_PYTHON_SUFFIXES = (".py", ".pyw", ".pyi")


def _token_style(token_type) -> Style | None:
    while token_type is not Token:
        for parent, style in _TOKEN_STYLES:
            if token_type is parent:
                return style
        token_type = token_type.parent
    return None


def highlight_source(lines: tuple[str, ...], path: str) -> list[Text]:
    """The lines as `Text`, Pygments-highlighted, control characters escaped.

    Slow for big files: call it in a worker.
    """
    clean = [literal(line.expandtabs(8)) for line in lines]
    lexer = _lexer_for(path)
    texts: list[Text] = []
    current = Text(no_wrap=True, end="")
    for token_type, value in lexer.get_tokens("\n".join(clean)):
        style = _token_style(token_type)
        parts = value.split("\n")
        for number, part in enumerate(parts):
            if number:
                texts.append(current)
                current = Text(no_wrap=True, end="")
            if part:
                current.append(part, style)
    texts.append(current)
    return texts[: len(clean)] if clean else []


def _lexer_for(path: str) -> Lexer:
    """Python's lexer for Python files (a stack's frames nearly always are); else the
    lexer Pygments finds by the file's name, Python's when it finds none.

    Not `get_lexer_for_filename` for every file: it reads every installed package's
    entry points for plug-in lexers, which took a quarter of a second at the first
    frame of a landing.
    """
    from pygments.lexers import PythonLexer, get_lexer_for_filename
    from pygments.util import ClassNotFound

    if path.endswith(_PYTHON_SUFFIXES):
        return PythonLexer(stripnl=False, ensurenl=False)
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return PythonLexer(stripnl=False, ensurenl=False)


@dataclass(frozen=True)
class SourceView:
    """What the Source Code pane shows: a file's highlighted lines and a marked line.

    `lines` is None when the dump holds no snapshot; `note` says why. `span` is the
    exact expression on the marked line, as (start, end) columns of the line shown
    (`tfdbg_tui.text.literal.literal_columns`), when the dump records it.
    """

    path: str
    line: int
    lines: list[Text] | None
    note: str = ""
    span: tuple[int, int] | None = None
