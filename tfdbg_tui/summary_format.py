"""How tensor summaries look in every pane: one place, so they read the same."""

from __future__ import annotations

from rich.text import Text

from reader.model import Summary

ALERT_STYLE = "bold red"
DIM_STYLE = "dim"


def count(value: int | None) -> str:
    """A count, short: 1234567 -> 1.2M; None -> '-'."""
    if value is None:
        return "-"
    if value < 10_000:
        return str(value)
    for limit, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if value >= limit:
            scaled = value / limit
            return f"{scaled:.1f}{suffix}" if scaled < 100 else f"{scaled:.0f}{suffix}"
    return str(value)


def shape_text(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "?"
    return "[" + ",".join(str(d) for d in shape) + "]"


def summary_text(summary: Summary | None) -> Text:
    """One line, most telling first: non-finite counts (red), the -, 0, + breakdown,
    then size, dtype and rank or shape, so a narrow pane still shows what matters."""
    text = Text(no_wrap=True, end="")
    if summary is None:
        text.append("no summary", DIM_STYLE)
        return text
    for label, value in (("NaN", summary.nan), ("-inf", summary.neg_inf),
                         ("+inf", summary.pos_inf)):
        if value:
            text.append(f"{label}:{value} ", ALERT_STYLE)
    if summary.has_inf_or_nan is not None:
        text.append("inf/NaN " if summary.has_inf_or_nan else "finite ",
                    ALERT_STYLE if summary.has_inf_or_nan else "")
    for label, value in (("-", summary.neg), ("0", summary.zero), ("+", summary.pos)):
        if value is not None:
            text.append(f"{label}:{value} ")
    if summary.size is not None:
        text.append(f"size {summary.size} ")
    if summary.dtype is not None:
        text.append(summary.dtype + " ")
    if summary.shape is not None:
        text.append(f"shape {shape_text(summary.shape)} ")
    elif summary.rank is not None:
        text.append(f"rank {summary.rank} ")
    text.rstrip()
    return text
