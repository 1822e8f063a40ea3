"""How the analyses word counts and summaries: "2 exact zeros", "1 -inf and 2 NaN among
2,560 values", evidence lines. Shared by `reader.analysis.diagnosis.diagnosis` and
`reader.analysis`."""

from __future__ import annotations

from reader.model import Summary


def count_text(n: int | None, noun: str) -> str:
    """ "2 exact zeros", "1 -inf"; "some ...s" when the mode does not count."""
    if n is None:
        return f"some {noun}s"
    return f"{n:,} {noun}" + ("" if n == 1 else "s" if not noun.endswith("inf") else "")


def nonfinite_text(summary: Summary | None) -> str:
    """ "1 -inf and 2 NaN among 2,560 values", or the best the mode allows."""
    if summary is None:
        return "non-finite values"
    if summary.nan is None:
        return "NaN or infinity" if summary.has_inf_or_nan is not False else "no NaN or inf"
    parts = [
        f"{n:,} {label}"
        for n, label in ((summary.nan, "NaN"), (summary.neg_inf, "-inf"), (summary.pos_inf, "+inf"))
        if n
    ]
    text = " and ".join(parts) or "no NaN or inf"
    return text + (f" among {values_text(summary.size)}" if summary.size is not None else "")


def values_text(n: int | None) -> str:
    """ "1 value", "2,560 values"."""
    return "? values" if n is None else f"{n:,} value" + ("" if n == 1 else "s")


def evidence_line(label: str, summary: Summary | None) -> str:
    """ "input `x:0` (float32, 4 values): 1 zero, 3 positive" (and statistics)."""
    if summary is None:
        return f"{label}: not recorded"
    head = ", ".join(
        p
        for p in (summary.dtype, values_text(summary.size) if summary.size is not None else None)
        if p
    )
    counts = [
        f"{n:,} {label_}"
        for n, label_ in (
            (summary.nan, "NaN"),
            (summary.neg_inf, "-inf"),
            (summary.pos_inf, "+inf"),
            (summary.neg, "negative"),
            (summary.zero, "zero"),
            (summary.pos, "positive"),
        )
        if n
    ]
    if summary.nan is None and summary.has_inf_or_nan is not None:
        counts.append("has NaN or inf" if summary.has_inf_or_nan else "finite")
    body = ", ".join(counts) if counts else ("all zero" if summary.size else "empty")
    if summary.min is not None and summary.max is not None:
        body += f"; min {summary.min:.6g}, max {summary.max:.6g}"
        if summary.mean is not None and summary.std is not None:
            body += f", mean {summary.mean:.6g}, std {summary.std:.6g}"
    elif summary.max_abs is not None:
        body += f"; max |x| {summary.max_abs:.6g}"
    return f"{label}" + (f" ({head})" if head else "") + f": {body}"
