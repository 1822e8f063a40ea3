"""Numbers formatted to a cell keep their value: fewer digits, never a cut exponent."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tfdbg_tui.panes.tensor_value import format_element
from tfdbg_tui.text.summary_format import fit_number

VALUES = [
    np.float32(-4.8400143e-05),
    np.float32(-1.4305125e-06),
    np.float32(3.4028235e38),
    np.float32(1e-45),
    np.float32(-1.1754944e-38),
    np.float16(0.1),
    np.float16(65504),
    np.float64(5e-324),
    np.float64(-1.7976931348623157e308),
    np.float64(123456789012.5),
    0.1,
    -0.0,
    1e300,
    -2.5e-300,
    7,
    -12345678901,
    2**63 - 1,
    np.int64(-(2**63)),
    np.uint64(2**64 - 1),
]


@pytest.mark.parametrize("width", [6, 8, 11, 16])
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_number_fits_its_cell_and_reads_back_as_itself(value, width):
    text = fit_number(value, width)
    assert len(text) <= width
    if set(text) == {"#"}:
        # Only when not even one significant digit fits.
        assert len(fit_number(value, 99, max_digits=1)) > width
        return
    # Read back in the value's own dtype: its shortest text is exact there.
    read_back = float(value.dtype.type(text)) if isinstance(value, np.floating) else float(text)
    exact = float(value)
    # Never another magnitude; at 11 characters (the value view's cells), five digits
    # at least.
    assert read_back == pytest.approx(exact, rel=0.5 if width < 11 else 1e-4, abs=0)
    assert math.copysign(1.0, read_back) == math.copysign(1.0, exact)
    assert math.isfinite(read_back)


@pytest.mark.parametrize(
    "value, text",
    [
        (np.float32(-4.8400143e-05), "-4.84001e-5"),
        (np.float32(-1.4305125e-06), "-1.43051e-6"),
        (np.float32(0.1), "0.1"),
        (np.float16(0.1), "0.1"),
        (np.float32(1e-40), "1e-40"),
        (np.float64(1e300), "1e300"),
    ],
)
def test_the_shortest_text_of_the_dtype_when_it_fits(value, text):
    assert fit_number(value, 11) == text


@pytest.mark.parametrize(
    "value, text",
    [
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (math.nan, "nan"),
        (np.float32("inf"), "inf"),
        (np.float32("-inf"), "-inf"),
        (np.float32("nan"), "nan"),
    ],
)
def test_non_finite_values(value, text):
    assert fit_number(value, 11) == text


def test_a_cell_too_narrow_for_any_digit_says_so_instead_of_lying():
    assert fit_number(-1.5e-300, 3) == "###"
    assert fit_number(-math.inf, 3) == "###"


def test_complex_and_text_elements():
    assert format_element(np.complex64(1.5e-7 - 2.25e12j), 23) == "1.5e-7-2.25e12j"
    assert format_element(complex(1.0, -0.0), 23) == "1.0-0.0j"
    assert format_element(b"a long string element", 11) == "a long str…"
    assert format_element("\x1b[31mred", 20) == "\\x1b[31mred"


def test_a_shape_past_rank_six_says_its_first_dimensions_are_not_kept():
    from reader import format as fmt
    from reader.model import Summary
    from tfdbg_tui.text.summary_format import summary_text

    # DebugNumericSummaryV2's row of a [2,3,4,5,6,7,8] float32 tensor: the last six.
    deep = Summary.from_row(fmt.SHAPE, [1, 7, 40320, 3, 4, 5, 6, 7, 8])
    assert "shape […,3,4,5,6,7,8]" in summary_text(deep).plain
    flat = Summary.from_row(fmt.SHAPE, [1, 2, 6, 2, 3, 0, 0, 0, 0])
    assert "shape [2,3]" in summary_text(flat).plain
