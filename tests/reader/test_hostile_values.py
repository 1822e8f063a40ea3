"""Valid msgpack with hostile values: the reader and `report` stay bounded and clear.

Two tiers. Each failure class found by mutating real-shaped dumps is a case of
`tests.reader.hostile_dumps`, opened here by the reader and by `report --json`. Then a
structure-aware property test: Hypothesis mutates the records of small dumps (hostile
ints, wrong types, missing and extra keys, records moved, dropped or added, compressed
values whose sizes lie) and every result must open, or fail with one `DumpError` line,
in bounded time and memory. The Hypothesis profiles (a short one for every test run,
a long one for ``-m benchmark``) are registered in tests/conftest.py; the README says
how to run the long one.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import tempfile
import warnings
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from reader import DumpError, DumpReader, byte_sources
from reader import format as fmt
from reader.limits import MAX_INFLATED_VALUE_BYTES
from tests.peak_memory import address_space_limit, peak_memory
from tests.present import present
from tests.reader.hostile_dumps import (
    CASES,
    bomb_value,
    closed_run,
    hostile_seed,
    run_every_query,
    zlib_of_zeros,
)
from tests.synthetic import FINITE, NAN, add_legacy_execution, make_run
from tfdbg_tui.commands import report
from tfdbg_tui.exit_codes import EXIT_DAMAGED, EXIT_NEWER_FORMAT, EXIT_NO_DUMP, EXIT_OK

# Above an honest dump of a few kilobytes, what one hostile dump may make the reader
# and `report` allocate (Python and numpy memory, as tracemalloc sees it): one value
# inflated up to the ceiling, and the arrays that summarise it.
MEMORY_BOUND = 4 * MAX_INFLATED_VALUE_BYTES
# What it may reserve without touching (`address_space_limit`): an array of zeros sized
# by an id the dump claims touches a few pages of gigabytes.
ADDRESS_SPACE_HEADROOM = 4 * MEMORY_BOUND
# Seconds one dump may take to open and report before the test calls it a hang.
HANG_SECONDS = 30


class Hang(BaseException):
    """Raised by the watchdog; a BaseException, so no handler under test swallows it."""


@contextlib.contextmanager
def watchdog(seconds: float) -> Iterator[None]:
    """Interrupt the block with `Hang` after ``seconds`` (the reader runs in this
    thread: `DumpReader` and `report` start none)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise Hang(f"no result after {seconds} s")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def no_runtime_warnings() -> Iterator[None]:
    """Fail when the block warns at run time (numpy's overflow or invalid value): a
    command would print the warning on its stderr, beside its result."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        yield
    found = [
        f"{w.filename}:{w.lineno}: {w.message}"
        for w in caught
        if issubclass(w.category, RuntimeWarning)
    ]
    assert not found, found


def run_command(main: Callable[[list[str]], int], argv: list[str]) -> tuple[int, str, str]:
    """A `tfdbg-tui` command's ``main(argv)``, in-process: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def report_json(logdir: str) -> tuple[int, str, str]:
    """`tfdbg-tui report LOGDIR --json`, in-process: (status, stdout, stderr)."""
    return run_command(report.main, [logdir, "--json"])


def open_and_report(logdir: str) -> tuple[DumpReader | None, int, str, str, int]:
    """Open the newest run of ``logdir`` and ask everything, then report it; returns
    (the reader or None when it refused, status, stdout, stderr, peak bytes)."""
    run_path = os.path.join(logdir, sorted(os.listdir(logdir))[-1])
    with (
        peak_memory() as peak,
        address_space_limit(ADDRESS_SPACE_HEADROOM),
        watchdog(HANG_SECONDS),
        no_runtime_warnings(),
    ):
        dump = None
        try:
            dump = DumpReader(run_path)
        except DumpError:
            pass
        if dump is not None:
            run_every_query(dump)
            dump.close()
        status, out, err = report_json(logdir)
    return dump, status, out, err, peak.growth


def assert_clear_outcome(
    status: int, out: str, err: str, peak: int, *, command: str = "report", is_json: bool = True
) -> None:
    """A result (one JSON object when ``is_json``), or one line and a documented
    status; bounded memory."""
    assert status in (EXIT_OK, EXIT_NO_DUMP, EXIT_NEWER_FORMAT, EXIT_DAMAGED), (status, err)
    if status == EXIT_OK:
        assert not err, err
        if is_json:
            json.loads(out)
    else:
        assert len(err.splitlines()) == 1 and err.startswith(f"tfdbg-tui {command}: "), err
    assert peak < MEMORY_BOUND, f"{peak / 2**20:.0f} MiB"


# -- the failure classes, one case each --------------------------------------------------

# The cases whose hostile record is damage: skipped with a notice. In the others the
# value is harmless once ids are sparse-safe (a device or trace point far from the rest).
DAMAGED = {
    "device_id_2_62",
    "device_id_2_64",
    "trace_point_2_63",
    "op_id_2_63",
    "trace_index_2_63",
    "trace_step_2_63",
    "metadata_id_2_32",
    "value_bomb",
    "exec_value_bomb",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_value_is_skipped_and_the_rest_shows(tmp_path, case):
    logdir = str(tmp_path / "logdir")
    CASES[case](logdir)
    dump, status, out, err, peak = open_and_report(logdir)
    assert_clear_outcome(status, out, err, peak)
    assert dump is not None and status == EXIT_OK
    damage = json.loads(out)["damage"]
    assert bool(damage) == (case in DAMAGED), damage
    assert all("\n" not in line for line in damage)
    if dump.mode == fmt.FULL_HEALTH:
        assert dump.num_traces == 6 and present(present(dump.root_cause()).op).name == "Log"


def test_device_names_are_kept_by_id_whatever_the_ids(tmp_path):
    logdir = str(tmp_path / "logdir")
    CASES["device_id_1e9"](logdir)
    dump = DumpReader(os.path.join(logdir, os.listdir(logdir)[0]))
    assert dump.metadata.devices == (
        "/job:localhost/replica:0/task:0/device:CPU:0",
        "/device:GPU:0",
    )
    assert dump.device(10**9) == "/device:GPU:0"


def test_a_trace_point_far_past_the_others_still_names_its_op(tmp_path):
    logdir = str(tmp_path / "logdir")
    run = make_run(logdir)
    far = 10**9
    exp = run.writer.add_op(
        graph_id=run.graph,
        op_type="Exp",
        op_name="Exp",
        inputs=["Neg:0"],
        num_outputs=1,
        output_dtypes=[1],
        device_id=None,
        stack_id=None,
        trace_points=[far],
    )
    run.writer.add_traces(
        np.array([far, 1], dtype=np.int32), summaries=np.array([FINITE, NAN], dtype=np.float64)
    )
    run.writer.close()
    dump = DumpReader(run.path)
    assert dump.trace(0).op_id == exp and dump.trace(0).slot == 0
    assert dump.find_trace("Exp", 0) == 0 and dump.find_trace("Log", 0) == 1


def test_a_value_inflating_past_the_ceiling_is_damaged_when_asked_for(tmp_path):
    logdir = str(tmp_path / "logdir")
    CASES["value_bomb"](logdir)
    dump = DumpReader(os.path.join(logdir, os.listdir(logdir)[0]))
    with pytest.raises(DumpError, match="more than the 67108864 a compressed value"):
        dump.trace_value(0)


@pytest.mark.parametrize("size", [4 << 20, 1 << 16])
def test_a_value_claiming_more_than_its_bytes_can_inflate_to_is_damaged(tmp_path, size):
    logdir = str(tmp_path / "logdir")
    path = closed_run(logdir, mode=fmt.FULL_TENSOR)
    # A stream of 4 MiB (or 64 KiB) of zeros, claiming 1032 times its own size more.
    lying = dict(bomb_value(size), shape=[len(zlib_of_zeros(size)) * 1100 // 4])
    _append_value_trace(path, lying)
    dump = DumpReader(path)
    assert "more than its" in dump.damage[0]
    with pytest.raises(DumpError, match="can inflate to"):
        dump.trace_value(0)


@pytest.mark.parametrize(
    "claim", ["past the ceiling", "past zlib's ratio", "many parts each at the ceiling"]
)
def test_a_compressed_part_claiming_too_much_is_damage_and_never_inflated(tmp_path, claim):
    """A bucket's run copied down (format 2.5): the traces' part 1 claims more than it
    may hold. Nothing is inflated, nothing is reserved for the claims, the traces of
    part 0 show."""
    logdir = str(tmp_path / "logdir")
    path = closed_run(logdir)
    whole = os.path.join(path, fmt.segment_filename(fmt.STREAM_GRAPH_TRACES, 0))
    os.rename(whole, os.path.join(path, fmt.part_filename(fmt.STREAM_GRAPH_TRACES, 0, 0)))
    bomb = zlib_of_zeros(1 << 20)  # a MiB of zeros, in about a kilobyte
    size = len(bomb) * 1100 if claim == "past zlib's ratio" else fmt.MAX_COMPRESSED_PART_BYTES
    for number in range(1, 200 if claim.startswith("many") else 2):
        name = fmt.part_filename(fmt.STREAM_GRAPH_TRACES, 0, number, size + (number == 1))
        with open(os.path.join(path, name), "wb") as f:
            f.write(bomb if claim != "many parts each at the ceiling" else bomb * 70)
    dump, status, out, err, peak = open_and_report(logdir)
    assert_clear_outcome(status, out, err, peak)
    assert dump is not None and status == EXIT_OK and dump.num_traces == 6
    damage = json.loads(out)["damage"]
    assert len(damage) == 1 and ".000001.z" in damage[0], damage
    reserved = dump._loader.traces.tp.buffer.shape[0]
    assert reserved <= byte_sources.RESERVE_BYTES // (4 + 8 * 9) + 1024, reserved  # rows


def test_an_honest_compressed_value_below_the_ceiling_reads(tmp_path):
    logdir = str(tmp_path / "logdir")
    path = closed_run(logdir, mode=fmt.FULL_TENSOR)
    _append_value_trace(path, bomb_value(MAX_INFLATED_VALUE_BYTES))
    dump = DumpReader(path)
    assert dump.damage == ()
    assert present(dump.trace_value(0)).size == MAX_INFLATED_VALUE_BYTES // 4


def _append_value_trace(path: str, value: dict) -> None:
    from tests.reader.hostile_dumps import append_records

    append_records(
        path,
        fmt.STREAM_GRAPH_TRACES,
        {
            "k": fmt.KIND_TRACES,
            "i": 0,
            "n": 1,
            "x": 0,
            "tp": np.zeros(1, "<i4").tobytes(),
            "v": [value],
        },
    )


def test_the_writer_stores_a_value_past_the_ceiling_raw():
    from instrument.dump.value_encoding import encode_value

    big = {
        "dtype": "<f4",
        "shape": [MAX_INFLATED_VALUE_BYTES // 4 + 1],
        "data": bytes(MAX_INFLATED_VALUE_BYTES + 4),
    }
    assert encode_value(big) is big
    small = dict(big, shape=[1024], data=bytes(4096))
    assert encode_value(small)["codec"] == fmt.CODEC_SHUFFLE_ZLIB


# -- the property test -------------------------------------------------------------------

HOSTILE_INTS = [
    0,
    -1,
    1,
    2,
    10**8,
    10**9,
    2**31 - 1,
    2**31,
    2**32,
    2**32 + 1,
    2**62,
    2**63 - 1,
    2**63,
    2**64 - 1,
    -(2**31),
    -(2**63),
]
WRONG_TYPES = [
    None,
    True,
    False,
    "",
    "x",
    "exec",
    b"",
    b"\x00\x01\x02",
    1.5,
    float("nan"),
    [],
    {},
    [1, "a"],
    {"k": 1},
]
DTYPES = [
    "<f4",
    "<f8",
    "|u1",
    "<i8",
    "<c8",
    "|b1",
    "O",
    "V8",
    "<U3",
    "(3,)<f4",
    "<M8[s]",
    "f16",
    "",
]
KINDS = [
    "header",
    "run",
    "device",
    "end",
    "notice",
    "file",
    "frame",
    "stack",
    "graph",
    "op",
    "exec",
    "execs",
    "traces",
    "progress",
    "hologram",
]

ints = st.sampled_from(HOSTILE_INTS) | st.integers(-2, 8)
scalars = ints | st.sampled_from(WRONG_TYPES)


def _packed(values: list[int], width: int) -> bytes:
    return b"".join((v % (1 << (8 * width))).to_bytes(width, "little") for v in values)


binaries = st.binary(max_size=48) | st.builds(
    _packed, st.lists(ints, max_size=6), st.sampled_from([4, 8])
)
# Zlib streams: honest small ones, and one that inflates past the ceiling.
streams = st.sampled_from([0, 1, 4096, 1 << 20, 2 * MAX_INFLATED_VALUE_BYTES]).map(
    zlib_of_zeros
) | st.builds(zlib.compress, st.binary(max_size=64))
values = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(DTYPES) | scalars,
        "shape": st.lists(ints, max_size=4) | scalars,
        "data": streams | binaries | scalars,
    },
    optional={
        "codec": st.sampled_from([None, "zlib", "shuffle-zlib", "lzma", 7]),
        "repr": st.lists(st.text(max_size=3), max_size=3) | scalars,
    },
)


# Zlib streams of zeros whose value claims their true size times this (1: honest).
_LIES = [1, 1, 2, 1024, 1 << 20]
lying_values = st.builds(
    lambda size, lie, codec: {
        "dtype": "<f4",
        "shape": [size * lie // 4],
        "codec": codec,
        "data": zlib_of_zeros(size),
    },
    st.sampled_from([4096, 1 << 20, 2 * MAX_INFLATED_VALUE_BYTES]),
    st.sampled_from(_LIES),
    st.sampled_from(list(fmt.VALUE_CODECS)),
)


@st.composite
def _element_replaced(draw: st.DrawFn, original: bytes) -> bytes:
    """``original`` (a column of 4- or 8-byte ints) with one element hostile."""
    width = draw(st.sampled_from([w for w in (4, 8) if len(original) % w == 0]))
    at = draw(st.integers(0, len(original) // width - 1)) * width
    return original[:at] + _packed([draw(ints)], width) + original[at + width :]


def _field(original: Any) -> st.SearchStrategy[Any]:
    """A hostile replacement for a field whose honest value is ``original``: mostly of
    its own shape (so that it reaches past the type checks), sometimes of any type."""
    if isinstance(original, bytes):
        columns = _element_replaced(original) if original and len(original) % 4 == 0 else binaries
        return columns | columns | binaries | scalars
    if isinstance(original, list) and original and isinstance(original[0], dict):
        return st.lists(lying_values | values, min_size=len(original), max_size=len(original))
    if isinstance(original, list):
        one = st.builds(
            lambda at, v: original[:at] + [v] + original[at + 1 :],
            st.integers(0, max(len(original) - 1, 0)),
            ints,
        )
        return one | one | st.lists(ints | scalars, max_size=4) | scalars
    if isinstance(original, dict):
        return lying_values | values | scalars
    return ints | ints | scalars


def write_template(root: str, kind: str) -> str:
    """A small closed run of each shape the reader reads differently; its logdir."""
    logdir = os.path.join(root, kind)
    if kind == "full_health":
        closed_run(logdir)
    elif kind == "legacy":  # format 1.2: one `exec` record per execution
        run = make_run(logdir, legacy=True)
        for _ in range(3):
            add_legacy_execution(
                run.writer,
                op_type="Log",
                graph_id=None,
                input_ids=[1],
                output_ids=[2],
                device_ids=[0],
                output_dtypes=[1],
                stack_id=run.user_stack,
                summaries=[NAN],
            )
        run.writer.close()
    else:
        from instrument.dump.value_encoding import tensor_value_record

        run = make_run(logdir, mode=fmt.FULL_TENSOR)
        value = tensor_value_record(np.array([1.0, -np.inf, 0.0] * 200, np.float32), compress=True)
        run.writer.add_traces(np.arange(3, dtype=np.int32), values=[value] * 3)
        run.writer.add_execution(
            op_type="__inference_step_7",
            graph_id=run.graph,
            input_ids=[1],
            output_ids=[2],
            device_ids=[run.device],
            output_dtypes=[1],
            stack_id=run.user_stack,
            values=[value],
        )
        run.writer.close()
    return logdir


TEMPLATES = ("full_health", "legacy", "full_tensor")


@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[str, str]:
    root = str(tmp_path_factory.mktemp("hostile_templates"))
    return {kind: write_template(root, kind) for kind in TEMPLATES}


def read_segments(run: str) -> dict[str, list[dict]]:
    """Segment file name -> its records, of the run directory ``run`` (and its progress
    file's, a multi-worker job's run's)."""
    found = {}
    for name in sorted(os.listdir(run)):
        if fmt.parse_segment_filename(name) is None and name != fmt.PROGRESS_FILENAME:
            continue
        with open(os.path.join(run, name), "rb") as file:
            found[name] = list(msgpack.Unpacker(file, raw=False, strict_map_key=False))
    return found


@st.composite
def mutated_dumps(draw: st.DrawFn, templates: dict[str, str]) -> tuple[str, dict]:
    """(template, segment name -> records): a template's records, mutated."""
    kind = draw(st.sampled_from(TEMPLATES))
    logdir = templates[kind]
    segments = read_segments(os.path.join(logdir, os.listdir(logdir)[0]))
    mutate_records(draw, segments)
    return kind, segments


def mutate_records(draw: st.DrawFn, segments: dict[str, list[dict]]) -> None:
    """Mutate ``segments`` (segment name -> records) in place: one to three fields set
    to hostile values, keys dropped or added, records inserted, swapped or deleted."""
    names = sorted(segments)
    for _ in range(draw(st.integers(1, 3))):
        fields = [
            (name, j, key)
            for name in names
            for j, record in enumerate(segments[name])
            for key in record
            if key != "k"
        ]
        action = draw(st.sampled_from(["set"] * 6 + ["drop", "add", "insert", "swap", "delete"]))
        name, j, key = draw(st.sampled_from(fields))
        records = segments[name]
        record = dict(records[j])
        if action == "set":
            record[key] = draw(_field(record[key]))
        elif action == "drop":
            del record[draw(st.sampled_from(sorted(record)))]
        elif action == "add":  # an extra key, or a kind's key in the wrong record
            key = draw(
                st.sampled_from(
                    ["extra", "id", "i", "n", "x", "xr", "v", "tps", "codec", "update", "k"]
                )
            )
            record[key] = draw(scalars | binaries | st.lists(values, max_size=2))
        elif action == "insert":  # a record of another stream, or of another kind, here
            record["k"] = draw(st.sampled_from(KINDS) | scalars)
            records.insert(draw(st.integers(0, len(records))), record)
            continue
        elif action == "swap":  # out of order
            k = draw(st.integers(0, len(records) - 1))
            records[j], records[k] = records[k], records[j]
            continue
        else:  # a definition gone: references to it dangle
            del records[j]
            continue
        records[j] = record


def _write(logdir: str, template: str, segments: dict[str, list[dict]]) -> None:
    shutil.copytree(template, logdir)
    run = os.path.join(logdir, os.listdir(logdir)[0])
    for name, records in segments.items():
        with open(os.path.join(run, name), "wb") as file:
            for record in records:
                file.write(msgpack.packb(record, use_bin_type=True))


def check_mutated_dump(templates: dict[str, str], data: st.DataObject) -> None:
    kind, segments = data.draw(mutated_dumps(templates))
    with tempfile.TemporaryDirectory() as root:
        logdir = os.path.join(root, "logdir")
        _write(logdir, templates[kind], segments)
        _, status, out, err, peak = open_and_report(logdir)
    assert_clear_outcome(status, out, err, peak)


_SUPPRESSED = [
    HealthCheck.function_scoped_fixture,
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
]


def hostile_search(
    *, long: bool = False, max_examples: int | None = None
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Make a test of ``(fixtures..., data)`` a hostile-dump search: one `st.data()`
    drawn from per example, the session's seed, the short profile (``max_examples``
    of it when given) or, ``long``, the benchmark-marked long one."""
    base = settings.get_profile("hostile-long") if long else settings.default
    chosen = (
        settings(base, suppress_health_check=_SUPPRESSED)
        if max_examples is None
        else settings(base, suppress_health_check=_SUPPRESSED, max_examples=max_examples)
    )

    def decorate(test: Callable[..., None]) -> Callable[..., None]:
        search = chosen(seed(hostile_seed())(given(data=st.data())(test)))
        return pytest.mark.benchmark(search) if long else search

    return decorate


@hostile_search()
def test_hostile_records_open_or_fail_clearly(templates, data):
    check_mutated_dump(templates, data)


@hostile_search(long=True)
def test_hostile_records_long_run(templates, data):
    """The long profile: ``python -m pytest -m benchmark -k hostile``."""
    check_mutated_dump(templates, data)
