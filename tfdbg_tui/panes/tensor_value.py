"""The tensor value list (FULL_TENSOR dumps): the elements, NaN and inf highlighted.

The elements are flattened in C order and wrapped to the pane's width; each row
starts with the index of its first element, so any shape scrolls as one list.
"""

from __future__ import annotations

import math

import numpy as np
from rich.text import Text

from tfdbg_tui.text.literal import literal
from tfdbg_tui.text.summary_format import fit_number
from tfdbg_tui.text.text_fit import cut_end
from tfdbg_tui.widgets.line_list import LineList

# Characters per element, its separating space included: a float in 11 keeps 5 to 9
# significant digits (float32 -4.8400143e-05 shows as -4.84001e-5); a
# complex number shows both parts in two such widths.
CELL_WIDTH = 12
COMPLEX_CELL_WIDTH = 2 * CELL_WIDTH


def cell_width(dtype: np.dtype) -> int:
    """Characters one element of `dtype` takes in a row, its separating space included."""
    return COMPLEX_CELL_WIDTH if dtype.kind == "c" else CELL_WIDTH


def format_element(value, width: int) -> str:
    """One element in at most `width` characters: numbers keep their magnitude (fewer
    digits, never a cut exponent); text that does not fit ends in an ellipsis."""
    if isinstance(value, (complex, np.complexfloating)):
        part_width = (width - 2) // 2
        imag = fit_number(abs(value.imag), part_width)
        sign = "-" if math.copysign(1.0, float(value.imag)) < 0 else "+"
        return f"{fit_number(value.real, part_width)}{sign}{imag}j"
    if isinstance(value, (float, np.floating)):
        return fit_number(value, width)
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return fit_number(int(value), width)
    text = literal(value.decode("utf-8", "replace") if isinstance(value, bytes) else value)
    return cut_end(text, width)


class TensorValueList(LineList):
    """A tensor's elements, wrapped; non-finite elements stand out."""

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "tensor-value--nan",
        "tensor-value--inf",
        "tensor-value--index",
    }

    DEFAULT_CSS = """
    TensorValueList {
        & > .tensor-value--nan { background: $error; color: $text; text-style: bold; }
        & > .tensor-value--inf { background: $warning; color: $text; text-style: bold; }
        & > .tensor-value--index { color: $text-muted; }
    }
    """

    header_height = 1

    def __init__(self, value: np.ndarray, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.value = np.asarray(value)
        self.flat = self.value.reshape(-1)
        self._cell_width = cell_width(self.value.dtype)
        self._per_row = 1

    def _layout(self, width: int) -> tuple[int, int]:
        """(width of the "[index] " label, elements per row) at `width` columns."""
        index_width = len(str(max(0, self.flat.shape[0] - 1))) + 3
        per_row = max(1, (width - index_width) // self._cell_width)
        return index_width, per_row

    def on_resize(self, event) -> None:
        _, per_row = self._layout(event.size.width)
        if per_row != self._per_row:
            self._per_row = per_row
            self.invalidate()
        self.set_row_count(max(1, -(-self.flat.shape[0] // per_row)))
        super().on_resize(event)

    def render_header(self, y: int, width: int) -> Text:
        text = Text(
            f"dtype {self.value.dtype}  shape {list(self.value.shape)}  size {self.flat.shape[0]}"
        )
        if self.value.dtype.kind in "fc":
            nan = int(np.isnan(self.flat).sum())
            inf = int(np.isinf(self.flat).sum())
            text.append(f"  NaN {nan}  inf {inf}", "bold red" if nan or inf else "")
        return text

    def render_row(self, row: int, width: int) -> Text:
        index_width, per_row = self._layout(width)
        begin = row * per_row
        chunk = self.flat[begin : begin + per_row]
        text = Text(
            f"[{begin}]".rjust(index_width - 1) + " ",
            style=self.component_style("tensor-value--index"),
        )
        if not chunk.shape[0]:
            text.append("(empty)")
            return text
        for element in chunk:
            cell = format_element(element, self._cell_width - 1).rjust(self._cell_width - 1) + " "
            style = None
            if self.value.dtype.kind in "fc":
                if np.isnan(element):
                    style = self.component_style("tensor-value--nan")
                elif np.isinf(element):
                    style = self.component_style("tensor-value--inf")
            text.append(cell, style)
        return text
