"""A custom loop's watched calls, kept on the host (instrument/watch/kept_calls.py): what
they hold, what they count, and when they wake the watch's reading thread."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from instrument.watch import kept_calls  # noqa: E402
from instrument.watch.kept_calls import KeptCalls, tensor_leaves  # noqa: E402


def test_the_same_tensors_every_step_are_counted_once():
    x, y = tf.zeros([64, 8]), tf.zeros([64], tf.int64)
    calls = KeptCalls()
    for _ in range(5):
        calls.keep((x, y), {})
    assert len(calls) == 5
    assert calls.nbytes == 64 * 8 * 4 + 64 * 8


def test_new_tensors_are_counted_each_and_let_go_once_seen():
    calls = KeptCalls()
    for step in range(4):
        calls.keep((tf.fill([10], float(step)),), {})
    assert calls.nbytes == 4 * 10 * 4
    calls.fine_before(3)
    assert len(calls) == 1 and calls.nbytes == 10 * 4
    kept = calls.call(3)
    assert kept is not None and kept.step == 3
    assert float(kept.args[0][0]) == 3.0


def test_a_numpy_batch_is_copied_since_a_loader_may_fill_it_again():
    buffer = np.ones([4, 3], np.float32)
    calls = KeptCalls()
    calls.keep((), {"batch": buffer, "labels": [tf.constant([1, 2])]})
    buffer[:] = np.nan  # the loader's next batch, in the same buffer
    kept = calls.call(0)
    assert kept is not None
    leaves = dict(tensor_leaves(kept))
    assert np.isfinite(leaves["kwargs[batch]"]).all()
    np.testing.assert_array_equal(leaves["kwargs[labels][0]"], [1, 2])
    assert calls.nbytes == buffer.nbytes + 2 * 4


def test_the_reading_thread_is_woken_past_the_bytes_or_the_calls(monkeypatch):
    monkeypatch.setattr(kept_calls, "WAKE_BYTES", 100)
    monkeypatch.setattr(kept_calls, "WAKE_CALLS", 3)
    small = tf.zeros([4])  # 16 bytes, the same tensor every call: counted once
    calls = KeptCalls()
    assert [calls.keep((small,), {}) for _ in range(4)] == [False, False, False, True]
    big = KeptCalls()
    assert big.keep((tf.zeros([16]),), {}) is False  # 64 bytes
    assert big.keep((tf.zeros([16]),), {}) is True  # 128 bytes


def test_past_the_budget_the_oldest_calls_are_let_go():
    calls = KeptCalls(budget=100)
    for _ in range(3):
        calls.keep((tf.zeros([10]),), {})  # 40 bytes each
    assert len(calls) == 2 and calls.nbytes == 80
    assert calls.dropped_through == 0 and calls.call(0) is None
