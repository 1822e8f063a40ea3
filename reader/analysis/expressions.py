"""The exact expression of a stack frame: the span of its current instruction.

Dumps of format 1.1 record, per frame, the column span Python 3.11+ gives the
instruction that was running (`co_positions`): for an op's creation stack, the call
that made the op, such as ``tf.math.log(probs)`` inside a longer line. Older dumps,
older Pythons and frames remapped from AutoGraph's generated code have no span.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reader.errors import UnknownIdError
from reader.model import Frame

if TYPE_CHECKING:
    from reader.analysis.dump_reader import DumpReader


def line_span(frame: Frame, line_text: str | None) -> tuple[int, int] | None:
    """The expression's ``(start, end)`` columns on the frame's own line, end exclusive.

    A span that goes on to later lines ends with the line (trailing blanks excluded).
    None when the frame records no span or it does not fit the line's text.
    """
    if frame.column is None or frame.end_column is None or line_text is None:
        return None
    start = frame.column
    if frame.end_line is not None and frame.end_line > frame.line:
        end = len(line_text.rstrip())
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
    if end_line == frame.line:
        span = line_span(frame, lines[frame.line - 1])
        return lines[frame.line - 1][span[0]:span[1]] if span else None
    pieces = [lines[frame.line - 1][frame.column:]]
    pieces.extend(lines[frame.line:end_line - 1])
    pieces.append(lines[end_line - 1][:frame.end_column])
    text = " ".join(p.strip() for p in pieces if p.strip())
    return text or None


def expression_of(reader: DumpReader, frame: Frame | None) -> str | None:
    """The frame's expression from the dump's snapshot of its file, or None."""
    if frame is None or frame.column is None:
        return None
    try:
        source = reader.source_file(frame.file_id)
    except UnknownIdError:
        return None
    return expression_text(frame, source.lines)
