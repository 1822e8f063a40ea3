"""The exact expression of a stack frame, as text: the span of its current instruction
(a loop or block header: its iterable, test or context manager).

Dumps of format 1.1 record, per frame, the column span Python 3.11+ gives the
instruction that was running (`co_positions`): for an op's creation stack, the call
that made the op, such as ``tf.math.log(probs)`` inside a longer line. Older dumps,
older Pythons and frames remapped from AutoGraph's generated code have no span.

The instruction of a loop or block header (``for x, y in dataset:``, whose ``FOR_ITER``
made the eager ``IteratorGetNext``) has the whole statement as its span, body
included: the expression is then the header's own (the iterable, the condition, the
context manager), on the header's line.
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import TYPE_CHECKING

from reader.errors import UnknownIdError
from reader.model import Frame

if TYPE_CHECKING:
    from reader.run.run_protocol import Run


def line_span(frame: Frame, line_text: str | None) -> tuple[int, int] | None:
    """The expression's ``(start, end)`` columns on the frame's own line, end exclusive.

    A span that goes on to later lines ends with the line (trailing blanks excluded).
    None when the frame records no span or it does not fit the line's text.
    """
    if frame.column is None or frame.end_column is None or line_text is None:
        return None
    start = frame.column
    if frame.end_line is not None and frame.end_line > frame.line:
        header = _header_span(line_text, start)
        if header is not None:
            return header
        end = _comment_start(line_text, start)
    else:
        end = min(frame.end_column, len(line_text))
    return (start, end) if 0 <= start < end else None


def expression_text(frame: Frame, lines: tuple[str, ...] | None) -> str | None:
    """The text of the frame's expression from a file's lines; spans over several
    lines are joined with single spaces. None when unknown."""
    if lines is None or frame.column is None or frame.end_column is None:
        return None
    end_line = frame.end_line or frame.line
    if not 1 <= frame.line <= end_line <= len(lines):
        return None
    if end_line == frame.line or _header_span(lines[frame.line - 1], frame.column):
        span = line_span(frame, lines[frame.line - 1])
        return lines[frame.line - 1][span[0] : span[1]] if span else None
    first = lines[frame.line - 1]
    pieces = [first[frame.column : _comment_start(first, frame.column)]]
    pieces.extend(line[: _comment_start(line, 0)] for line in lines[frame.line : end_line - 1])
    pieces.append(lines[end_line - 1][: frame.end_column])
    text = " ".join(p.strip() for p in pieces if p.strip())
    return text or None


def _comment_start(line_text: str, column: int) -> int:
    """Where the code of a line that goes on to the next ends: before its comment
    (``from_generator(  # stream the export``), trailing blanks excluded."""
    code = line_text[column:]
    comment = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                comment = token.start[1]
                break
    except (tokenize.TokenError, SyntaxError):
        pass  # the line's statement goes on: its tokens up to here are read
    kept = code if comment is None else code[:comment]
    return column + len(kept.rstrip())


def _header_span(line_text: str, column: int) -> tuple[int, int] | None:
    """The span of the expression of the compound statement header that starts at
    ``column`` (``for``'s iterable, ``while``'s or ``if``'s test, ``with``'s first
    context manager); None when the text there is not such a header on one line."""
    header = line_text[column:].rstrip()
    if not header.startswith(_HEADER_KEYWORDS):
        return None
    try:
        statement = ast.parse(header + "\n    pass").body[0]
    except SyntaxError:
        return None
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        node: ast.expr = statement.iter
    elif isinstance(statement, (ast.While, ast.If)):
        node = statement.test
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        node = statement.items[0].context_expr
    else:
        return None
    if node.lineno != 1 or node.end_lineno != 1 or node.end_col_offset is None:
        return None
    encoded = header.encode("utf-8")  # ast's columns are UTF-8 byte offsets
    start = len(encoded[: node.col_offset].decode("utf-8", errors="replace"))
    end = len(encoded[: node.end_col_offset].decode("utf-8", errors="replace"))
    return column + start, column + end


_HEADER_KEYWORDS = ("for ", "async ", "while ", "if ", "with ")


def expression_of(reader: Run, frame: Frame | None) -> str | None:
    """The frame's expression from the dump's snapshot of its file, or None."""
    if frame is None or frame.column is None:
        return None
    try:
        source = reader.source_file(frame.file_id)
    except UnknownIdError:
        return None
    return expression_text(frame, source.lines)


def enclosing_class(reader: Run, frame: Frame | None) -> str | None:
    """The name of the class whose method the frame runs in (a custom metric's
    ``result``: ``ZeroRate``), from the dump's snapshot of its file; None outside a
    class, or without a snapshot that parses."""
    if frame is None:
        return None
    try:
        source = reader.source_file(frame.file_id)
    except UnknownIdError:
        return None
    if source.lines is None:
        return None
    try:
        tree = ast.parse("\n".join(source.lines))
    except (SyntaxError, ValueError):
        return None
    found = None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ClassDef)
            and node.lineno <= frame.line <= (node.end_lineno or node.lineno)
            and (found is None or node.lineno > found.lineno)
        ):
            found = node
    return found.name if found is not None else None
