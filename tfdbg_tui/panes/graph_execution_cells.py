"""How Graph Execution's rows are drawn, the one module that draws its cells: its
columns, which a mode shows (from `reader.format.SUMMARY_COLUMNS`), the header, each
cell, and A's side when comparing.

Which summary columns a mode shows follows from what the mode records
(`reader.format.SUMMARY_COLUMNS`), for one run's view and for the comparison's
(`tfdbg-tui B --compare A`) alike; each view only orders its columns and says which to
keep first when the pane is narrow. A cell reads the same in both runs. What aligns
and what diverges is decided in `reader.analysis.compare.diff` and held by `TraceComparison`;
the Graph Execution list (`graph_execution.py`) owns the rows and calls in here.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from reader import format as fmt
from reader.model import Op, Summary
from tfdbg_tui.models.comparison_columns import CounterpartCells, TraceComparison
from tfdbg_tui.text.literal import literal
from tfdbg_tui.text.summary_format import count, fit_number
from tfdbg_tui.text.text_fit import cut_middle, keep_by_priority


@dataclass(frozen=True)
class Column:
    """A summary column; in the comparison, shown for both runs (`both`) or for B only."""

    key: str
    title: str
    width: int
    priority: int  # lower is kept first when the pane is narrow
    both: bool = True


@dataclass(frozen=True)
class CellStyles:
    """The list's component styles the cells are drawn with."""

    index: Style
    type: Style
    bad_count: Style
    zero_count: Style
    gap: Style
    diverged: Style


_COUNT_WIDTH = 6
_STAT_WIDTH = 9
# One run: the op type and what the mode records, the non-finite counts kept first.
# FULL_STATS adds the finite elements' max and min where they fit (max first: values
# drifting towards overflow are what users watch for).
_COLUMNS = (
    Column("type", "op type", 14, 3),
    Column("dtype", "dtype", 8, 10),
    Column("rank", "rk", 3, 11),
    Column("size", "size", _COUNT_WIDTH, 4),
    Column("neg", "-", _COUNT_WIDTH, 6),
    Column("zero", "0", _COUNT_WIDTH, 5),
    Column("pos", "+", _COUNT_WIDTH, 7),
    Column("neg_inf", "-inf", _COUNT_WIDTH, 1),
    Column("pos_inf", "+inf", _COUNT_WIDTH, 2),
    Column("nan", "NaN", _COUNT_WIDTH, 0),
    Column("bad", "inf/NaN", 7, 0),
    Column("shape", "shape", 16, 0),
    Column("max", "max", _STAT_WIDTH, 8),
    Column("min", "min", _STAT_WIDTH, 9),
)
# Two runs, most telling first: whether a tensor is finite in each run, then its dtype
# (a float16 run against a float32 one), then the counts, then B's op type.
_COMPARED_COLUMNS = (
    Column("nonfinite", "inf/NaN", 7, 0),
    Column("dtype", "dtype", 8, 1),
    Column("size", "size", _COUNT_WIDTH, 2),
    Column("neg", "-", _COUNT_WIDTH, 4),
    Column("zero", "0", _COUNT_WIDTH, 3),
    Column("pos", "+", _COUNT_WIDTH, 5),
    Column("neg_inf", "-inf", _COUNT_WIDTH, 6),
    Column("pos_inf", "+inf", _COUNT_WIDTH, 7),
    Column("nan", "NaN", _COUNT_WIDTH, 8),
    Column("shape", "shape", 16, 2),
    Column("max", "max", _STAT_WIDTH, 9),
    Column("min", "min", _STAT_WIDTH, 10),
    Column("mean", "mean", _STAT_WIDTH, 11),
    Column("type", "op type", 14, 12, both=False),
)
_NON_FINITE = frozenset({"has_inf_or_nan", "nan", "neg_inf", "pos_inf"})
_LEFT_ALIGNED = ("type", "dtype", "shape")
_INDEX_MIN_WIDTH = 5
_NAME_MIN_WIDTH = 14
# Tensor names keep fewer cells beside a second run, so that at 80 columns both runs'
# non-finite counts fit beside them.
_COMPARED_NAME_MIN_WIDTH = 10
# Between B's columns and A's: a rule, or `DIVERGENT_MARK` on a divergent row.
SEPARATOR, DIVERGENT_MARK = " │", " ≠"


def shows(mode: str, key: str) -> bool:
    """Whether Graph Execution shows column `key` for a run recorded in `mode`.

    FULL_TENSOR rows carry FULL_HEALTH's summary; a mode that records none shows the
    op's output dtype; SHAPE's shape says its rank.
    """
    recorded = set(
        fmt.SUMMARY_COLUMNS.get(fmt.FULL_HEALTH if mode == fmt.FULL_TENSOR else mode, ())
    )
    if key == "type":
        return True
    if key == "dtype":
        return "dtype" in recorded or not recorded
    if key == "shape":
        return "shape0" in recorded
    if key == "rank":
        return "rank" in recorded and "shape0" not in recorded
    if key == "bad":
        return "has_inf_or_nan" in recorded
    if key == "nonfinite":
        return bool(recorded & _NON_FINITE)
    return key in recorded


def index_width(num_traces: int) -> int:
    """Cells of the trace index column."""
    return max(_INDEX_MIN_WIDTH, len(str(num_traces)))


def layout(
    mode: str, width: int, index_cells: int, comparison: TraceComparison | None
) -> tuple[list[Column], int]:
    """The summary columns that fit beside the index and the tensor name, in order,
    and the tensor name's width; with `comparison`, room for A's side too."""
    if comparison is None:
        columns = [c for c in _COLUMNS if shows(mode, c.key)]
        room, name_min = width - index_cells - 1, _NAME_MIN_WIDTH
    else:
        columns = [
            c
            for c in _COMPARED_COLUMNS
            if shows(mode, c.key) and (not c.both or shows(comparison.mode_a, c.key))
        ]
        room = width - (index_cells + 1 + len(SEPARATOR) + 1 + comparison.a_index_width())
        name_min = _COMPARED_NAME_MIN_WIDTH

    def cost(column: Column) -> int:
        """Cells a column takes in a row: its width and a space, once per run shown."""
        return (column.width + 1) * (2 if comparison is not None and column.both else 1)

    chosen = keep_by_priority(columns, room - name_min, cost=cost, priority=lambda c: c.priority)
    return chosen, room - sum(cost(c) for c in chosen)


def header(
    columns: list[Column], index_cells: int, name_width: int, comparison: TraceComparison | None
) -> Text:
    """The header line: "#", "tensor", the column titles, then A's ("A #", ...)."""
    text = Text("#".rjust(index_cells) + " " + "tensor".ljust(name_width))
    for column in columns:
        text.append(" " + _aligned(column))
    if comparison is not None:
        text.append(
            SEPARATOR + " " + literal(f"{comparison.name_a} #").rjust(comparison.a_index_width())
        )
        for column in columns:
            if column.both:
                text.append(" " + _aligned(column))
    return text


def append_cell(
    text: Text,
    column: Column,
    summary: Summary | None,
    op: Op | None,
    slot: int,
    styles: CellStyles,
    row_style: Style | None = None,
    diverged: bool = False,
) -> None:
    """Append one summary column's cell (`column.width` cells) to `text`;
    `diverged` marks it as differing from the other run (`--compare`)."""
    key = column.key
    bad, faint = styles.bad_count, styles.zero_count
    if key == "type":
        op_type = literal(op.op_type) if op else "?"
        text.append(op_type[: column.width].ljust(column.width), row_style or styles.type)
        return
    start = len(text)
    if key == "dtype":
        dtype = (
            summary.dtype
            if summary and summary.dtype
            else (op.output_dtypes[slot] if op and slot < len(op.output_dtypes) else "")
        )
        text.append(dtype[: column.width].ljust(column.width))
    elif key == "shape":
        shape = (
            ""
            if summary is None or summary.shape is None
            else "[" + ",".join(map(str, summary.shape)) + "]"
        )
        text.append(shape[: column.width].ljust(column.width))
    elif key in fmt.STAT_COLUMNS:
        stat = getattr(summary, key, None) if summary else None
        text.append(
            ("-" if stat is None else fit_number(stat, column.width)).rjust(column.width),
            faint if stat is None else None,
        )
    elif key == "bad" or (key == "nonfinite" and summary is not None and summary.nan is None):
        flag = bool(summary and summary.has_inf_or_nan)
        text.append(("yes" if flag else "no").rjust(column.width), bad if flag else faint)
    else:
        value: int | None
        if key == "nonfinite":
            value = (
                None
                if summary is None
                else (summary.nan or 0) + (summary.neg_inf or 0) + (summary.pos_inf or 0)
            )
        else:
            value = getattr(summary, key, None) if summary else None
        cell = count(value).rjust(column.width)
        if key in ("neg_inf", "pos_inf", "nan", "nonfinite") and value:
            text.append(cell, bad)
        else:
            text.append(cell, faint if not value else None)
    if diverged:
        text.stylize(styles.diverged, start)


def append_a_side(
    text: Text,
    comparison: TraceComparison,
    b_index: int,
    cells: CounterpartCells,
    columns: list[Column],
    width: int,
    styles: CellStyles,
) -> None:
    """Append A's side of B's row `b_index` to `text` (B's side): the mark, A's index
    and A's cells, or why A has none."""
    if cells.reason is not None:
        text.append(DIVERGENT_MARK, styles.diverged)
    else:
        text.append(SEPARATOR, styles.index)
    text.append(" ")
    if cells.trace is None:
        room = max(0, width - text.cell_len)
        if cells.index is None:
            note = (
                literal(f"only in {comparison.alignment.diff.names[1]}")
                if b_index < comparison.alignment.counterpart.shape[0]
                else "not compared (newer than the comparison)"
            )
        else:
            note = f"#{cells.index} not on disk"
        text.append(cut_middle(note, room), styles.gap)
        return
    text.append(str(cells.index).rjust(comparison.a_index_width()), styles.index)
    for column in columns:
        if column.both:
            text.append(" ")
            append_cell(
                text,
                column,
                cells.trace.summary,
                cells.op,
                cells.trace.slot,
                styles,
                diverged=column.key in cells.diverged,
            )


def _aligned(column: Column) -> str:
    return (
        column.title.ljust(column.width)
        if column.key in _LEFT_ALIGNED
        else column.title.rjust(column.width)
    )
