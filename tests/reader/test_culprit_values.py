"""The root cause's values as every surface takes them (`culprit_values`): held values
filling what a dump lacks, their JSON (capped), their lines; and a replay's values
replay found beside it, not among the logdir's runs."""

from __future__ import annotations

import json

import numpy as np

import reader
from reader import format as fmt
from reader.analysis.diagnosis.culprit_values import (
    JSON_ELEMENTS,
    CulpritValues,
    StoredTensor,
    value_preview,
)
from reader.run.watch_pair import replay_values_path


def _write_run(logdir, run_id: str, mode: str, replay_of: dict) -> str:
    """An empty run whose `run` record says it replays a watched step."""
    from instrument.dump.writer import DumpWriter

    info = {"tensor_debug_mode": mode, "argv": ["train.py"], "run": run_id}
    writer = DumpWriter(str(logdir), {**info, "replay_of": replay_of})
    writer.close()
    return str(writer.path)


def _values(*inputs: np.ndarray | None, output: np.ndarray | None = None) -> CulpritValues:
    return CulpritValues(
        "Log",
        None,
        tuple(StoredTensor(f"x{i}", "float32", v) for i, v in enumerate(inputs)),
        StoredTensor("Log:0", "float32", output),
        False,
        "no values: this run recorded FULL_HEALTH summaries only",
    )


def test_held_values_fill_what_the_dump_lacks():
    held = _values(None).with_values(
        [np.array([0.0, 1.0], np.float32)], np.array([-np.inf, 0.0], np.float32), "the call"
    )
    assert held.complete and held.kept and held.origin == "the call"
    assert held.inputs[0].value is not None and held.inputs[0].value.tolist() == [0.0, 1.0]
    # An input neither kept nor held still says so.
    half = _values(None, None).with_values([np.zeros(2)], None, "the call")
    assert half.missing is not None and "x1" in half.missing
    # Values the dump kept are not replaced.
    kept = _values(np.ones(2)).with_values([np.zeros(2)], None, "the call")
    assert kept.inputs[0].value is not None and kept.inputs[0].value.tolist() == [1.0, 1.0]


def test_json_holds_small_values_and_leaves_large_ones_out():
    big = np.zeros(JSON_ELEMENTS + 1, np.float32)
    values = _values(big, output=np.array([[np.nan, -np.inf]], np.float32))
    data = json.loads(json.dumps(values.as_dict()))
    assert data["inputs"] == [{"name": "x0", "dtype": "float32", "shape": [4097], "value": None}]
    output = data["output"]
    assert output["shape"] == [1, 2] and np.isnan(output["value"][0][0])
    assert output["value"][0][1] == float("-inf")
    assert _values(None).as_dict()["inputs"][0] == {
        "name": "x0",
        "dtype": "float32",
        "shape": None,
        "value": None,
    }


def test_lines_show_each_tensor_in_short():
    lines = _values(np.arange(100, dtype=np.float32).reshape(4, 25)).lines()
    assert lines[0].startswith("input x0 (float32): [4x25] [[ 0. 1. 2. ... 22. 23. 24.]")
    assert lines[1] == "output Log:0 (float32): no value"
    assert value_preview(np.float32(2.5)) == "[scalar] 2.5"


def test_a_replays_values_replay_is_found_inside_it_and_is_no_run_of_the_logdir(tmp_path):
    logdir = tmp_path / "logdir"
    link = {"run": "20261127T000001-vm-1-a", "step": 5}
    replay = _write_run(logdir, "20261127T000002-vm-1-b", fmt.FULL_HEALTH, link)
    values = _write_run(
        f"{replay}/{fmt.REPLAY_VALUES_DIR}",
        "20261127T000003-vm-1-c",
        fmt.FULL_TENSOR,
        {**link, "values": ["Log", "Softmax"]},
    )
    assert [r.run_id for r in reader.list_runs(logdir)] == ["20261127T000002-vm-1-b"]
    with reader.open_run(logdir) as dump:
        assert replay_values_path(dump) == values
    with reader.open_run(values) as dump:
        kept = dump.metadata.replay_of
        assert kept is not None and kept.values == ("Log", "Softmax")
        assert replay_values_path(dump) is None  # a values replay has none of its own
