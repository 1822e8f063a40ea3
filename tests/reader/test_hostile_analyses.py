"""The analyses of `report`, `report --json` and `diff` on hostile dumps: harm, trends,
the watch rules, a multi-worker job's ranking, the diff and its tensor alignment.

`tests/reader/test_hostile_values.py` holds the reader to its bounds; this file holds
the analyses built on it. First the failures found, one case each; then the
structure-aware search of that file (its mutations, its watchdog and memory bounds),
over templates whose analyses have something to work on (a Keras-shaped FULL_STATS
fit, a job of three workers, the NaN model with its sources, a FULL_TENSOR run): one
run of a template has its records mutated or its bytes flipped, then is reported both
ways and compared with its honest template both ways. For any bytes: a result, or one
line and a documented status; no traceback, no hang, no warning on stderr, and memory
bounded by the dump (an address-space limit catches what is reserved and never
touched), never by an id or a count a record claims. The session's summary prints the
seed (tests/conftest.py); docs/performance.md, "Hostile dumps", has the counts.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import msgpack
import numpy as np
import pytest
from hypothesis import strategies as st

import reader
from reader import DumpError
from reader import format as fmt
from reader.analysis.jobs import WorkerRun, job_workers, open_landing_run
from tests.peak_memory import address_space_limit, peak_memory
from tests.reader.hostile_dumps import run_every_query
from tests.reader.test_hostile_values import (
    ADDRESS_SPACE_HEADROOM,
    HANG_SECONDS,
    _packed,
    assert_clear_outcome,
    hostile_search,
    ints,
    mutate_records,
    no_runtime_warnings,
    open_and_report,
    read_segments,
    run_command,
    watchdog,
    write_template,
)
from tests.synthetic import FINITE, NAN, add_step, make_run, write_nan_dump
from tests.synthetic_trends import write_trends_dump
from tfdbg_tui.commands import diff_report, report

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


@pytest.mark.parametrize(
    "tp", [2**31 - 1, 10**9, -1, -5, -(2**31)], ids=["2^31-1", "1e9", "-1", "-5", "-2^31"]
)
def test_trends_are_sized_by_the_dump_not_by_a_trace_point_a_chunk_claims(tmp_path, tp):
    """A trace point far past the others, or negative (damage), in one traces chunk:
    the trends allocated tables as long as the largest point (8 GiB at 2**31) or
    raised IndexError on a negative one. Now that trace has no role, and every other
    cell is the honest run's."""
    honest = write_trends_dump(
        tmp_path / "honest", layers=TREND_LAYERS, steps=6, explode=3, nan=None
    )
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


def _set_summary(run_path: str, trace: int, **columns: float) -> None:
    """Overwrite columns of trace ``trace``'s FULL_STATS row (in the first traces
    chunk)."""
    path = os.path.join(run_path, fmt.segment_filename(fmt.STREAM_GRAPH_TRACES, 0))
    with open(path, "rb") as file:
        records = list(msgpack.Unpacker(file, raw=False, strict_map_key=False))
    chunk = next(r for r in records if r.get("k") == fmt.KIND_TRACES)
    names = fmt.SUMMARY_COLUMNS[fmt.FULL_STATS]
    rows = np.frombuffer(chunk["s"], "<f8").reshape(-1, len(names)).copy()
    for name, value in columns.items():
        rows[trace, names.index(name)] = value
    chunk["s"] = rows.tobytes()
    with open(path, "wb") as file:
        for record in records:
            file.write(msgpack.packb(record, use_bin_type=True))


@pytest.mark.parametrize(
    "columns",
    [
        {"std": 1e200, "mean": 1e200},  # a norm past float64's largest
        {"nan": np.nan, "pos_inf": np.inf},  # counts that are no counts
        {"dtype": 1e10},  # no TensorFlow dtype
        {"zero": 1e300},  # a share of zeros past float32's largest
    ],
    ids=["norm_overflow", "nan_counts", "dtype_1e10", "zero_share_overflow"],
)
def test_summary_values_a_row_claims_give_a_report_and_no_warning(tmp_path, columns):
    """A FULL_STATS row's numbers are the dump's word: squared to a norm, or to a
    float32 share, they overflowed, cast to counts or a dtype they were invalid, and
    numpy printed RuntimeWarnings on the report's stderr beside its result (the
    search found these four). Now the report is all it prints."""
    logdir = tmp_path / "logdir"
    path = write_trends_dump(logdir, layers=TREND_LAYERS, steps=6, explode=3, nan=None)
    _set_summary(path, HOSTILE_STEP * TRACES_PER_STEP + LAYER_0_GRADIENT, **columns)
    _, status, out, err, peak = open_and_report(str(logdir))
    assert_clear_outcome(status, out, err, peak)


def _set_progress(run_path: str, change) -> None:
    """Rewrite a run's progress file: ``change(record)`` changes the record in place, or
    returns the file's new bytes."""
    path = os.path.join(run_path, fmt.PROGRESS_FILENAME)
    with open(path, "rb") as file:
        record = msgpack.unpackb(file.read(), raw=False)
    data = change(record)
    with open(path, "wb") as file:
        file.write(data if isinstance(data, bytes) else msgpack.packb(record, use_bin_type=True))


def _alert(key: str, value):
    return lambda record: record["alert"].__setitem__(key, value)


# A progress file's hostile values. The first are not sound: the file is ignored and
# that run read in full, so the ranking is the honest one; the last (`LYING`) are sound
# values that lie, and the ranking believes them, cleanly.
HOSTILE_PROGRESS = {
    "step_2_64": _alert("x", 2**64 - 1),
    "step_negative": _alert("x", -1),
    "step_a_string": _alert("x", "12"),
    "index_2_62": _alert("i", 2**62),
    "slot_2_40": _alert("slot", 2**40),
    "kind_unknown": _alert("kind", "hologram"),
    "op_empty": _alert("op", ""),
    "op_megabytes": _alert("op", "Log" * 400_000),
    "alert_a_list": lambda record: record.__setitem__("alert", [1, 2]),
    "alert_calls_negative": _alert("calls", [["step", -5]]),
    "alert_calls_2_63": _alert("calls", [["step", 2**63]]),
    "calls_a_string": lambda record: record.__setitem__("calls", "step"),
    "calls_not_pairs": lambda record: record.__setitem__("calls", [["step", 3, 4]]),
    "calls_twice": lambda record: record.__setitem__("calls", [["step", 3], ["step", 4]]),
    "calls_5000_functions": lambda record: record.__setitem__(
        "calls", [[f"f{i}", 1] for i in range(5000)]
    ),
    "executions_a_bool": lambda record: record.__setitem__("executions", True),
    "traces_2_64": lambda record: record.__setitem__("traces", 2**64 - 1),
    "another_run": lambda record: record["run"].__setitem__("run", "someone-else"),
    "not_a_map": lambda record: msgpack.packb([1, 2, 3]),
    "two_records": lambda record: msgpack.packb(record) * 2,
    "cut_short": lambda record: msgpack.packb(record)[:-3],
    "garbage": lambda record: b"\xc1\xff\x00 not msgpack",
    "two_mebibytes": lambda record: b"\x00" * (2 << 20),
    "empty": lambda record: b"",
    "time_nan": _alert("t", float("nan")),
    "time_a_string": _alert("t", "yesterday"),
    "frame_of_wrong_types": lambda record: record["alert"].update(file=5, line="eight", func=[]),
    "device_a_number": _alert("device", 7),
}
LYING = {
    "no_alert": lambda record: record.__setitem__("alert", None),
    "step_2_62": _alert("calls", [["step", 2**62 - 1]]),
    "received": _alert("received", True),
}


@pytest.mark.parametrize(
    "change",
    list(HOSTILE_PROGRESS.values()) + list(LYING.values()),
    ids=list(HOSTILE_PROGRESS) + list(LYING),
)
def test_a_hostile_progress_file_ranks_the_job_cleanly(tmp_path, change):
    """The first worker's progress file (worker 1 went non-finite first) holding a
    hostile value: the job is ranked, landed on and reported with no traceback and
    in bounded memory; a file that is not sound is ignored (the run is read in full,
    and the ranking is the honest one)."""
    honest = str(tmp_path / "honest")
    _job(honest)
    expected = rank_every_job(honest)
    logdir = str(tmp_path / "hostile")
    _job(logdir)
    run = sorted(os.listdir(logdir))[1]  # worker 1
    _set_progress(os.path.join(logdir, run), change)
    with (
        peak_memory() as peak,
        address_space_limit(ADDRESS_SPACE_HEADROOM),
        watchdog(HANG_SECONDS),
        no_runtime_warnings(),
    ):
        ranked = rank_every_job(logdir)
        status, out, err = run_command(report.main, [logdir, "--run", run, "--json"])
    assert_clear_outcome(status, out, err, peak.growth)
    assert [len(job) for job in ranked] == [len(JOB_NAN_STEPS)]
    if change not in LYING.values():
        assert _said(ranked) == _said(expected)


def _said(jobs: list[list[WorkerRun]]) -> list[list[tuple]]:
    """What rankings of two copies of a job say alike (not their paths, nor the wall
    times two writes of it had)."""
    return [
        [
            (w.run_id, w.first_step, w.op_type, w.received, w.has_alerts, w.last_step)
            + ((w.frame.path, w.frame.line) if w.frame else ())
            for w in job
        ]
        for job in jobs
    ]


# -- the search ----------------------------------------------------------------------------

CLUSTER = "0123456789ab"
# Workers of the job template, and the step each goes non-finite at (-1: never).
JOB_NAN_STEPS = (2, 1, -1)


def _job(logdir: str) -> None:
    """A multi-worker job: a run per worker, worker 1 non-finite first."""
    for index, nan_step in enumerate(JOB_NAN_STEPS):
        run = make_run(
            logdir,
            run_id=f"20260101T00000{index}-host{index}-{100 + index}-abcdef",
            task={"type": "worker", "index": index, "cluster": CLUSTER},
        )
        for step in range(4):
            add_step(run, [FINITE, NAN if step >= nan_step >= 0 else FINITE])
        run.writer.close()


def _analysis_template(root: str, kind: str) -> str:
    """A small closed logdir of each shape the analyses read differently."""
    logdir = os.path.join(root, kind)
    if kind == "trends":  # FULL_STATS layers: roles, series, rules; NaN gradients: harm
        write_trends_dump(logdir, layers=TREND_LAYERS, steps=6, explode=3, nan=5)
    elif kind == "job":
        _job(logdir)
    elif kind == "nan_model":  # sources, exact expressions, library frames, diagnosis
        write_nan_dump(logdir, steps=3)
    else:  # values: the diff compares them
        write_template(root, kind)
    return logdir


ANALYSIS_TEMPLATES = ("trends", "job", "nan_model", "full_tensor")


@pytest.fixture(scope="module")
def analysis_templates(tmp_path_factory) -> dict[str, str]:
    root = str(tmp_path_factory.mktemp("hostile_analysis_templates"))
    return {kind: _analysis_template(root, kind) for kind in ANALYSIS_TEMPLATES}


# A byte edit of a segment: (segment name, offset, bytes, whether they are xor-ed into
# the file's (a bit flip) or written over them).
_Edit = tuple[str, int, bytes, bool]


@st.composite
def _flipped_bytes(draw: st.DrawFn, run: str) -> list[_Edit]:
    """One to four bits flipped, or words overwritten with hostile ints, wherever they
    land in the run's segments (a column, a length, a msgpack type byte)."""
    sizes = {
        name: os.path.getsize(os.path.join(run, name))
        for name in os.listdir(run)
        if fmt.parse_segment_filename(name) is not None or name == fmt.PROGRESS_FILENAME
    }
    edits = []
    for _ in range(draw(st.integers(1, 4))):
        name = draw(st.sampled_from(sorted(sizes)))
        at = draw(st.integers(0, sizes[name] - 1))
        if draw(st.booleans()):
            edits.append((name, at, bytes([1 << draw(st.integers(0, 7))]), True))
        else:
            edits.append((name, at, _packed([draw(ints)], draw(st.sampled_from([4, 8]))), False))
    return edits


@st.composite
def hostile_runs(
    draw: st.DrawFn, templates: dict[str, str]
) -> tuple[str, str, list[_Edit] | dict[str, list[dict]]]:
    """(template, run name, mutation): one run of a template, and its bytes edited
    (`_flipped_bytes`) or its records mutated (`mutate_records`: segment name ->
    records)."""
    kind = draw(st.sampled_from(ANALYSIS_TEMPLATES))
    run = draw(st.sampled_from(sorted(os.listdir(templates[kind]))))
    path = os.path.join(templates[kind], run)
    if draw(st.booleans()):
        return kind, run, draw(_flipped_bytes(path))
    segments = read_segments(path)
    mutate_records(draw, segments)
    return kind, run, segments


def _mutate(run: str, mutation: list[_Edit] | dict[str, list[dict]]) -> None:
    """Apply a mutation of `hostile_runs` to the run directory ``run``."""
    if isinstance(mutation, dict):
        for name, records in mutation.items():
            with open(os.path.join(run, name), "wb") as file:
                for record in records:
                    file.write(msgpack.packb(record, use_bin_type=True))
        return
    for name, at, content, xor in mutation:
        with open(os.path.join(run, name), "r+b") as file:
            data = bytearray(file.read())
            if xor:
                content = bytes(a ^ b for a, b in zip(data[at:], content))
            data[at : at + len(content)] = content
            file.seek(0)
            file.write(data)
            file.truncate()


def check_analyses(templates: dict[str, str], data: st.DataObject) -> None:
    """Every analysis of one hostile run: the reader's queries, `report` both ways,
    `diff` against its honest template both ways (and once for people)."""
    kind, run, mutation = data.draw(hostile_runs(templates))
    honest = templates[kind]
    with tempfile.TemporaryDirectory() as root:
        logdir = os.path.join(root, "logdir")
        shutil.copytree(honest, logdir)
        _mutate(os.path.join(logdir, run), mutation)
        with (
            peak_memory() as peak,
            address_space_limit(ADDRESS_SPACE_HEADROOM),
            watchdog(HANG_SECONDS),
            no_runtime_warnings(),
        ):
            try:
                with reader.open_run(logdir, run) as dump:
                    run_every_query(dump)
            except DumpError:
                pass
            rank_every_job(logdir)
            outcomes = [
                ("report", True, run_command(report.main, [logdir, "--run", run, "--json"])),
                ("report", False, run_command(report.main, [logdir, "--run", run])),
                (
                    "diff",
                    True,
                    run_command(diff_report.main, [honest, logdir, "--run-b", run, "--json"]),
                ),
                (
                    "diff",
                    True,
                    run_command(diff_report.main, [logdir, honest, "--run-a", run, "--json"]),
                ),
                ("diff", False, run_command(diff_report.main, [honest, logdir, "--run-b", run])),
            ]
    for command, is_json, (status, out, err) in outcomes:
        assert_clear_outcome(status, out, err, peak.growth, command=command, is_json=is_json)


def rank_every_job(logdir: str) -> list[list[WorkerRun]]:
    """Every multi-worker job of ``logdir`` ranked as the run picker ranks it, and the
    run the app lands on opened; a logdir that cannot be read gives nothing."""
    try:
        runs = reader.list_runs(logdir)
        with open_landing_run(logdir, runs):
            pass
    except DumpError:
        return []
    clusters = dict.fromkeys(r.cluster for r in runs if r.cluster is not None)
    return [job_workers(runs, cluster) for cluster in clusters]


# The short profile's examples for this search: each reports and compares five times.
CI_EXAMPLES = 100


@hostile_search(max_examples=CI_EXAMPLES)
def test_every_analysis_of_a_hostile_run_ends_clearly(analysis_templates, data):
    check_analyses(analysis_templates, data)


@hostile_search(long=True)
def test_every_analysis_of_a_hostile_run_long_search(analysis_templates, data):
    """The long profile: ``python -m pytest -m benchmark -k hostile``."""
    check_analyses(analysis_templates, data)
