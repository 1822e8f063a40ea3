"""`reader.analysis.compare.tensor_alignment`: keys packed into one int64 when they fit, and the
same alignment as the structured keys when they do not."""

from __future__ import annotations

import numpy as np
import pytest

from reader import format as fmt
from reader.analysis.compare.tensor_alignment import KEY_DTYPE, TensorKeys, align


def _keys(rows) -> TensorKeys:
    key = np.array([tuple(r) for r in rows], dtype=KEY_DTYPE)
    n = key.size
    return TensorKeys(
        index=np.arange(n), position=np.arange(n), key=key, rows=None, mode=fmt.NO_TENSOR
    )


@pytest.mark.parametrize("big", [0, 1 << 61], ids=["packed", "structured"])
def test_align_pairs_equal_keys_in_b_order(big):
    a = _keys([(0, 1, 0, 0), (0, 2, 0, 0), (-1, 3, 1, 2), (5 + big, 1, 0, 0)])
    b = _keys([(5 + big, 1, 0, 0), (0, 2, 0, 0), (0, 2, 1, 0), (-1, 3, 1, 2)])
    in_a, in_b = align(a, b)
    assert in_b.tolist() == [0, 1, 3]  # B's order; (0, 2, 1, 0) has no counterpart
    assert in_a.tolist() == [3, 1, 2]
    assert (a.key[in_a] == b.key[in_b]).all()


def test_empty_runs_align_to_nothing():
    in_a, in_b = align(_keys([]), _keys([(0, 1, 0, 0)]))
    assert in_a.size == in_b.size == 0
