"""How tensor summaries read in every pane and in the report's input lines: one place,
so they read the same."""

from __future__ import annotations

import decimal
import math
import re
import sys

import numpy as np
from rich.text import Text

from reader.model import Summary

ALERT_STYLE = "bold red"
# Characters for one statistic (min, max, mean, std) in running text.
STAT_DIGITS = 10
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


def shape_text(shape: tuple[int, ...] | None, rank: int | None = None) -> str:
    """ "[32,10]"; past rank 6 a SHAPE summary holds the last six dimensions: "[…,3,4]"."""
    if shape is None:
        return "?"
    cut = "…," if rank is not None and rank > len(shape) else ""
    return "[" + cut + ",".join(str(d) for d in shape) + "]"


def summary_text(summary: Summary | None) -> Text:
    """One line, most telling first: non-finite counts (red), the -, 0, + breakdown,
    the finite elements' statistics (FULL_STATS) or largest magnitude (FULL_HEALTH:
    ``|x|≤4.96e19``), then size, dtype and rank or shape,
    so a narrow pane still shows what matters."""
    text = Text(no_wrap=True, end="")
    if summary is None:
        text.append("no summary", DIM_STYLE)
        return text
    for label, value in (
        ("NaN", summary.nan),
        ("-inf", summary.neg_inf),
        ("+inf", summary.pos_inf),
    ):
        if value:
            text.append(f"{label}:{value} ", ALERT_STYLE)
    if summary.has_inf_or_nan is not None:
        text.append(
            "inf/NaN " if summary.has_inf_or_nan else "finite ",
            ALERT_STYLE if summary.has_inf_or_nan else "",
        )
    for label, value in (("-", summary.neg), ("0", summary.zero), ("+", summary.pos)):
        if value is not None:
            text.append(f"{label}:{value} ")
    for label, stat in (
        ("min", summary.min),
        ("max", summary.max),
        ("mean", summary.mean),
        ("std", summary.std),
    ):
        if stat is not None:
            text.append(f"{label}:{fit_number(stat, STAT_DIGITS)} ")
    if summary.max_abs is not None and summary.max is None:  # FULL_HEALTH's magnitude
        text.append(f"|x|≤{fit_number(summary.max_abs, STAT_DIGITS)} ")
    if summary.size is not None:
        text.append(f"size {summary.size} ")
    if summary.dtype is not None:
        text.append(summary.dtype + " ")
    if summary.shape is not None:
        text.append(f"shape {shape_text(summary.shape, summary.rank)} ")
    elif summary.rank is not None:
        text.append(f"rank {summary.rank} ")
    text.rstrip()
    return text


_EXPONENT = re.compile(r"e([+-])0*(\d)")


def _compact_exponent(text: str) -> str:
    """'1.5e+20' -> '1.5e20', '-4.84e-05' -> '-4.84e-5' (more room for digits)."""
    return _EXPONENT.sub(lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), text)


def fit_number(value, width: int, max_digits: int = 9) -> str:
    """`value` (a Python or numpy number) in at most `width` characters, never cut
    into another number.

    The shortest text that reads back as the same value in its own dtype when it fits
    (a float32 0.1 is '0.1'); otherwise fewer significant digits, never a truncated
    mantissa or exponent: -4.8400143e-05 in 8 characters is '-4.84e-5', never
    '-4.84001'. Integers that do not fit go to exponent notation (rounded, but of the
    right magnitude). A width too small for one significant digit gives '#' * width.
    """
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        text = str(int(value))
        if len(text) <= width:
            return text
    is_numpy_float = isinstance(value, np.floating)
    # The largest finite value of the dtype: rounding must not step past it to inf.
    largest = float(np.finfo(value.dtype).max) if is_numpy_float else sys.float_info.max
    shortest = str(value) if is_numpy_float else repr(float(value))
    value = float(value)
    if math.isnan(value):
        return "nan" if width >= 3 else "#" * width
    if math.isinf(value):
        text = "inf" if value > 0 else "-inf"
        return text if len(text) <= width else "#" * width
    text = _compact_exponent(shortest)
    if len(text) <= width:
        return text
    for digits in range(max_digits, 0, -1):
        text = _compact_exponent(f"{value:.{digits}g}")
        if abs(float(text)) > largest:
            # Rounded past the dtype's largest value (-1.797e308 to -1.8e308): round down.
            text = _compact_exponent(format(_round_toward_zero(value, digits), "g"))
        if len(text) <= width:
            return text
    return "#" * width


def _round_toward_zero(value: float, digits: int) -> decimal.Decimal:
    with decimal.localcontext() as context:
        context.prec = digits
        context.rounding = decimal.ROUND_DOWN
        return +decimal.Decimal(value)
