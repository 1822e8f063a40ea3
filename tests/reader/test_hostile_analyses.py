"""The analyses of `report`, `report --json` and `diff` on hostile dumps: harm, trends,
the watch rules, a multi-worker job's ranking, the diff and its tensor alignment.

`tests/reader/test_hostile_values.py` holds the reader to its bounds; this file holds
the analyses built on it. First the failures found, one case each; then the
structure-aware search of that file (its mutations, its watchdog and memory bounds),
over templates whose analyses have something to work on (a Keras-shaped FULL_STATS
fit, a job of three workers, FULL_HEALTH and FULL_TENSOR runs), each mutated dump
reported both ways and compared with its honest template both ways. For any bytes: a
result, or one line and a documented status; no traceback, no hang, and memory
bounded by the dump, never by an id or a count a record claims.
"""

from __future__ import annotations

import os

import msgpack
import numpy as np
import pytest

import reader
from reader import format as fmt
from tests.peak_memory import address_space_limit
from tests.reader.test_hostile_values import (
    ADDRESS_SPACE_HEADROOM,
    assert_clear_outcome,
    open_and_report,
)
from tests.synthetic_trends import write_trends_dump

# The trends template: two Dense+ReLU layers; per step, the forward tensors (3 per
# layer), then per layer from the last: its gradient and its update.
TREND_LAYERS = 2
TRACES_PER_STEP = 5 * TREND_LAYERS
LAYER_0_GRADIENT = 3 * TREND_LAYERS + 2  # its trace point, and its place in a step
HOSTILE_STEP = 2


def _set_trace_point(run_path: str, trace: int, tp: int) -> None:
    """Overwrite the trace point of trace ``trace`` (in the first traces chunk) with
    ``tp``, as one flipped bit of the chunk can."""
    path = os.path.join(run_path, fmt.segment_filename(fmt.STREAM_GRAPH_TRACES, 0))
    with open(path, "rb") as file:
        records = list(msgpack.Unpacker(file, raw=False, strict_map_key=False))
    chunk = next(r for r in records if r.get("k") == fmt.KIND_TRACES)
    points = np.frombuffer(chunk["tp"], "<i4").copy()
    points[trace] = tp
    chunk["tp"] = points.tobytes()
    with open(path, "wb") as file:
        for record in records:
            file.write(msgpack.packb(record, use_bin_type=True))


@pytest.mark.parametrize("tp", [2**31 - 1, 10**9, -1, -5, -2**31],
                         ids=["2^31-1", "1e9", "-1", "-5", "-2^31"])
def test_trends_are_sized_by_the_dump_not_by_a_trace_point_a_chunk_claims(tmp_path, tp):
    """A trace point far past the others, or negative (damage), in one traces chunk:
    the trends allocated tables as long as the largest point (8 GiB at 2**31) or
    raised IndexError on a negative one. Now that trace has no role, and every other
    cell is the honest run's."""
    honest = write_trends_dump(tmp_path / "honest", layers=TREND_LAYERS, steps=6, explode=3,
                               nan=None)
    logdir = tmp_path / "hostile"
    path = write_trends_dump(logdir, layers=TREND_LAYERS, steps=6, explode=3, nan=None)
    _set_trace_point(path, HOSTILE_STEP * TRACES_PER_STEP + LAYER_0_GRADIENT, tp)
    with reader.open_run(honest, None) as dump:
        expected = dump.trends()
    with address_space_limit(ADDRESS_SPACE_HEADROOM), reader.open_run(path, None) as dump:
        trends = dump.trends()
    assert trends.rows == expected.rows == ("model/dense_0", "model/dense_1")
    for name, table in expected.series.items():
        want = table.copy()
        if name.startswith("gradient"):
            want[0, HOSTILE_STEP] = np.nan  # the one gradient read there is the hostile one
        np.testing.assert_array_equal(trends.series[name], want, err_msg=name)
    _, status, out, err, peak = open_and_report(str(logdir))
    assert_clear_outcome(status, out, err, peak)
