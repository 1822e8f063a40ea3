"""Fitting a string into a number of cells: cut at the end, the start or the middle,
with "…" standing for what was cut. One home for every pane that shortens names, and
for choosing which columns of a row fit (`keep_by_priority`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

ELLIPSIS = "…"


def cut_end(text: str, width: int) -> str:
    """`text`, or its first `width - 1` characters and "…" (a value, a label)."""
    if len(text) <= width:
        return text
    return text[: width - 1] + ELLIPSIS if width > 0 else ""


def cut_start(text: str, width: int) -> str:
    """`text`, or "…" and its last `width - 1` characters (a tensor name, whose end
    tells tensors apart)."""
    if len(text) <= width:
        return text
    return ELLIPSIS + text[len(text) - width + 1 :] if width > 0 else ""


def cut_middle(text: str, width: int) -> str:
    """`text`, or its start, "…" and its end (a run id: the time it began and the
    suffix that makes it unique both stay)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = width // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[len(text) - tail :] if tail else "")


def keep_by_priority(
    items: Sequence[T], room: int, cost: Callable[[T], int], priority: Callable[[T], int]
) -> list[T]:
    """The items that fit in ``room`` cells, the lowest ``priority`` taken first, in
    their own order: the columns a narrow pane keeps."""
    kept: set[int] = set()
    for position in sorted(range(len(items)), key=lambda i: priority(items[i])):
        needed = cost(items[position])
        if needed <= room:
            kept.add(position)
            room -= needed
    return [item for position, item in enumerate(items) if position in kept]
