"""The tensor value view (FULL_TENSOR dumps): the elements, NaN and inf highlighted.

The elements are flattened in C order and wrapped to the pane's width; each row
starts with the index of its first element, so any shape scrolls as one list.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from tfdbg_tui.literal import literal
from tfdbg_tui.widgets.line_list import LineList

CELL_WIDTH = 12


def format_element(value) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, (complex, np.complexfloating)):
        return f"{complex(value):.3g}"
    return literal(value)


class TensorValueList(LineList):
    """A tensor's elements, wrapped; non-finite elements stand out."""

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "tensor-value--nan", "tensor-value--inf", "tensor-value--index"}

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
        self._per_row = 1

    def _layout(self, width: int) -> tuple[int, int]:
        index_width = len(str(max(0, self.flat.shape[0] - 1))) + 2
        per_row = max(1, (width - index_width) // CELL_WIDTH)
        return index_width, per_row

    def on_resize(self, event) -> None:
        _, per_row = self._layout(event.size.width)
        if per_row != self._per_row:
            self._per_row = per_row
            self.invalidate()
        self.set_row_count(max(1, -(-self.flat.shape[0] // per_row)))
        super().on_resize(event)

    def render_header(self, y: int, width: int) -> Text:
        text = Text(f"dtype {self.value.dtype}  shape {list(self.value.shape)}  "
                    f"size {self.flat.shape[0]}")
        if self.value.dtype.kind in "fc":
            nan = int(np.isnan(self.flat).sum())
            inf = int(np.isinf(self.flat).sum())
            text.append(f"  NaN {nan}  inf {inf}", "bold red" if nan or inf else "")
        return text

    def render_row(self, row: int, width: int) -> Text:
        index_width, per_row = self._layout(width)
        begin = row * per_row
        chunk = self.flat[begin:begin + per_row]
        text = Text(f"[{begin}]".rjust(index_width - 1) + " ",
                    style=self.component_style("tensor-value--index"))
        if not chunk.shape[0]:
            text.append("(empty)")
            return text
        for element in chunk:
            cell = format_element(element)[:CELL_WIDTH - 1].rjust(CELL_WIDTH - 1) + " "
            style = None
            if self.value.dtype.kind in "fc":
                if np.isnan(element):
                    style = self.component_style("tensor-value--nan")
                elif np.isinf(element):
                    style = self.component_style("tensor-value--inf")
            text.append(cell, style)
        return text
