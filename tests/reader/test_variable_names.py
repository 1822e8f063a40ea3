"""The rows of a variable's value that hold NaN or infinity, in words
(`reader.analysis.diagnosis.variable_names`), without TensorFlow. The names on real
dumps: tests/reader/test_phases_tf.py."""

from __future__ import annotations

import numpy as np
import pytest

from reader.analysis.diagnosis.variable_names import nonfinite_rows
from tests.present import present


def _with(shape, bad, value=np.nan):
    array = np.zeros(shape, np.float32)
    for index in bad:
        array[index] = value
    return array


@pytest.mark.parametrize(
    ("value", "rows", "text"),
    [
        (_with((4, 2), [(2, 0)]), (2,), "row 2 of `v` holds NaN in 1 of its 2 values"),
        (
            _with((4, 3), [(1, 0), (3, 2), (3, 1)], np.inf),
            (1, 3),
            "rows 1, 3 of `v` hold NaN or infinity in 3 of their 6 values",
        ),
        (_with((4,), [(3,)]), (3,), "element 3 of `v` is NaN"),
        (
            _with((9,), [(i,) for i in range(7)]),
            tuple(range(7)),
            "elements 0, 1, 2, 3, 4 and 2 more of `v` are NaN",
        ),
        (np.array(np.nan, np.float32), (0,), "element 0 of `v` is NaN"),
    ],
)
def test_the_rows_that_hold_them(value, rows, text):
    found = present(nonfinite_rows(value))
    assert found.rows == rows and found.text("v") == text


def test_no_rows_without_a_nonfinite_float_value():
    assert nonfinite_rows(None) is None
    assert nonfinite_rows(np.zeros((2, 2))) is None
    assert nonfinite_rows(np.array([b"a"])) is None
    assert nonfinite_rows(np.zeros((0, 3))) is None
