"""Fitting a string into a number of cells: cut at the end, the start or the middle,
with "…" standing for what was cut. One home for every pane that shortens names."""

from __future__ import annotations

ELLIPSIS = "…"


def cut_end(text: str, width: int) -> str:
    """`text`, or its first `width - 1` characters and "…" (a value, a label)."""
    if len(text) <= width:
        return text
    return text[:width - 1] + ELLIPSIS if width > 0 else ""


def cut_start(text: str, width: int) -> str:
    """`text`, or "…" and its last `width - 1` characters (a tensor name, whose end
    tells tensors apart)."""
    if len(text) <= width:
        return text
    return ELLIPSIS + text[len(text) - width + 1:] if width > 0 else ""


def cut_middle(text: str, width: int) -> str:
    """`text`, or its start, "…" and its end (a run id: the time it began and the
    suffix that makes it unique both stay)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = width // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[len(text) - tail:] if tail else "")
