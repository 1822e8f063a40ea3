"""A job of 256 workers in one logdir: how soon the worker that went non-finite first is
named, in memory, on a disk and in a bucket, and how soon a live job's ranking follows.

    python -m tests.benchmarks.bench_workers [--workers 256] [--traces 100000] [--rounds 3]
        [--no-bucket] [--no-live]     # prints a Markdown table of medians
    pytest -m benchmark tests/benchmarks/bench_workers.py   # 64 workers of 20,000 traces

The job (`tests.synthetic_job`): each worker's run holds ``--traces`` FULL_HEALTH graph
traces (500 a step, a step every 0.25 s), written by `DumpWriter` as a
MultiWorkerMirroredStrategy job's workers write theirs (its task and cluster in the
`run` record; the progress file a job's writer keeps). Worker 37's `Log` goes -inf at
step 120, the NaN after it; every other worker reaches that step later and receives
the NaN through the all-reduce (a `CollectiveReduceV2` root cause) at that step or the
next; every 32nd stops before it, healthy. Each measurement starts a fresh process:

- **report**: ``tfdbg-tui report LOGDIR --no-proof``, from the process's start to its
  exit (wall), and its peak resident set (``ru_maxrss``, in a process of its own that
  starts no other); it must name worker 37.
- **app**: ``tfdbg-tui LOGDIR`` in a detached tmux session at 120x40 (the installed
  entry point's module, byte-compiled), the pane polled every 10 ms: the time to the
  landing's root cause on screen (the app lands on the worker that went non-finite
  first: its `loss/Log`), then ``r`` pressed, to the run picker with that worker
  marked "first non-finite"; its peak resident set (VmHWM) then, and again once the
  picker has counted every run's alerts (`SETTLE_S` later).
- **bucket**: the same logdir written into a bucket of moto's S3 server on 127.0.0.1
  (s3fs), each process with an empty object cache; the client's set-up (importing
  fsspec and s3fs, the client, its first listing: timed first in the same process,
  `_SETUP`) is subtracted, as the target says ("at most 3x the local time, not counting
  the client's set-up").
- **live**: ``--live-writers`` (16) processes write their workers' runs as the job runs
  (a step every 50 ms, the writer flushing every 0.5 s by itself), the app follows
  the logdir from before the NaN; the lag is from the moment the origin's writer
  recorded its NaN step to the app saying which worker went non-finite first.

Requires tmux (and for the bucket moto's server and s3fs: tests/cloud).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import replace

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.benchmarks.bench_root_cause import compile_packages  # noqa: E402
from tests.synthetic_job import JobShape, run_id_of, write_job  # noqa: E402

SIZE = (120, 40)
ORIGIN_TASK = f"worker {JobShape().origin}"
MARK = "first non-finite"
LANDED = "loss/Log"  # the origin's root cause, on screen once the app landed on it
FIRST_FRAME = "Graph Execution"
# Seconds the app is left after the mark, for the picker to count every run's alerts
# (its resident set is read again then).
SETTLE_S = 12.0
TARGET_S = 3.0
TARGET_RSS_MB = 1024
TARGET_BUCKET_RATIO = 3.0
TARGET_LAG_S = 2.0

# Run in every measured process first: the client's set-up, timed (nothing for a local
# path), its seconds written to the file named by BENCH_SETUP_FILE; then the command.
_SETUP = """
import os, sys, time
started = time.perf_counter()
from reader import storage
store = storage.store_for(sys.argv[1])
if store.remote:
    store.list_dir(sys.argv[1])
with open(os.environ["BENCH_SETUP_FILE"], "w") as f:
    f.write(str(time.perf_counter() - started))
from tfdbg_tui.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _command(logdir: str, args: list[str]) -> list[str]:
    return [sys.executable, "-c", _SETUP, logdir, *args]


def _setup_s(path: str) -> float:
    try:
        with open(path) as f:
            return float(f.read())
    except (OSError, ValueError):
        return float("nan")


def report(logdir: str, env: dict[str, str]) -> dict:
    """``tfdbg-tui report LOGDIR`` in a fresh process: wall seconds, set-up, peak RSS."""
    with tempfile.NamedTemporaryFile(suffix=".setup") as setup:
        started = time.perf_counter()
        process = subprocess.Popen(
            _command(logdir, ["report", logdir, "--no-proof"]),
            env=dict(env, BENCH_SETUP_FILE=setup.name, PYTHONPATH=ROOT),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = process.communicate(timeout=600)
        wall = time.perf_counter() - started
        rss_kib = _child_rss_kib()
        if process.returncode != 0:
            raise RuntimeError(err[-2000:])
        named = any(MARK in line and ORIGIN_TASK + " " in line for line in out.splitlines())
        return {
            "wall_s": wall,
            "setup_s": _setup_s(setup.name),
            "rss_mb": rss_kib / 1024,
            "named": named,
            "load": os.getloadavg()[0],
        }


def _child_rss_kib() -> float:
    """The largest resident set of a child this process waited for (ru_maxrss, KiB):
    the benchmark's children are waited for one at a time, so each measurement runs
    in a process of its own (`_isolated`)."""
    import resource

    return float(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def _isolated(function, *args) -> dict:
    """``function(*args)`` in a fresh Python process of its own, so that the peak
    resident set of children it reads is the measured process's alone."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]);"
        "from tests.benchmarks import bench_workers as b;"
        "print(json.dumps(getattr(b, sys.argv[2])(*json.loads(sys.argv[3]))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, ROOT, function.__name__, json.dumps(list(args))],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _pane(session: str) -> str:
    return subprocess.run(
        ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
    ).stdout


def _app_pid(session: str) -> int | None:
    """The app's process in the session's pane (the shell may have exec'd it, or be
    its parent)."""
    found = subprocess.run(
        ["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"], capture_output=True, text=True
    ).stdout.split()
    pending = [int(p) for p in found]
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"tfdbg_tui" in f.read():
                    return pid
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                pending += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return None


def _vm_hwm_mb(pid: int | None) -> float:
    if pid is None:
        return float("nan")
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def app(
    logdir: str, env: dict[str, str], settle_s: float = SETTLE_S, timeout: float = 120.0
) -> dict:
    """``tfdbg-tui LOGDIR`` in tmux: seconds from its start to its first frame, to the
    origin's root cause on screen, then (``r`` pressed at the landing) to the run
    picker marking the origin; its peak RSS then, and ``settle_s`` later."""
    session = f"bench_workers_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    setup = tempfile.NamedTemporaryFile(suffix=".setup", delete=False)
    setup.close()
    variables = dict(
        {k: v for k, v in env.items() if k.startswith(("AWS_", "TFDBG_TUI_"))},
        BENCH_SETUP_FILE=setup.name,
        PYTHONPATH=ROOT,
    )
    command = " ".join(
        ["env", *(shlex.quote(f"{k}={v}") for k, v in variables.items())]
        + [shlex.quote(part) for part in _command(logdir, [logdir])]
    )
    found: dict = {"load": os.getloadavg()[0]}
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    started = time.perf_counter()
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            str(SIZE[0]),
            "-y",
            str(SIZE[1]),
            command,
        ],
        check=True,
    )
    screen = ""
    pid = None
    try:
        while time.perf_counter() - started < timeout:
            screen = _pane(session)
            now = time.perf_counter() - started
            pid = pid or _app_pid(session)
            if "first_frame_s" not in found and FIRST_FRAME in screen:
                found["first_frame_s"] = now
            if "landed_s" not in found and LANDED in screen:
                found["landed_s"] = now
                subprocess.run(["tmux", "send-keys", "-t", session, "r"], check=True)
            lines = screen.splitlines()
            # The picker's mark; its row may wrap (the run id on the line above). The
            # Alerts pane behind it says "first non-finite value at step ...".
            marked = [
                lines[max(i - 1, 0)] + line
                for i, line in enumerate(lines)
                if MARK in line and f"{MARK} value" not in line
            ]
            if "landed_s" in found and marked:
                found["marked_s"] = now
                found["marked_origin"] = run_id_of(JobShape().origin) in marked[0]
                break
            time.sleep(0.01)
        else:
            raise TimeoutError(f"no mark after {timeout} s:\n{screen}")
        found["rss_mb"] = _vm_hwm_mb(pid)
        time.sleep(settle_s)
        found["rss_settled_mb"] = _vm_hwm_mb(pid)
        found["setup_s"] = _setup_s(setup.name)
        return found
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        os.unlink(setup.name)


# A live worker: writes its run step by step from time T0 (a step every STEP_S), the
# writer flushing by itself; prints "NAN <unix time>" when it wrote its first NaN step.
_LIVE_WORKER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.synthetic_job import JobShape, WorkerWriter
logdir, worker, t0 = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
shape = JobShape(**__import__("json").loads(sys.argv[5]))
run = WorkerWriter(logdir, worker, shape, flush_interval_s=0.5)
print("READY", flush=True)
first = shape.nan_step_of(worker)
for step in range(shape.steps_of(worker)):
    lead = shape.origin_lead_s if worker == shape.origin else 0.0
    delay = t0 + step * shape.step_s - lead - time.time()
    if delay > 0:
        time.sleep(delay)
    run.write_step()
    if step == first:
        print("NAN", time.time(), flush=True)
run.close()
print("DONE", flush=True)
"""


def live(root: str, writers: int = 16, traces: int = 100_000) -> dict:
    """``writers`` processes write a job's runs as it runs; the app (tmux) follows the
    logdir. Seconds from the origin's writer recording its NaN step to the app naming
    the worker that went non-finite first."""
    shape = JobShape(
        workers=writers,
        traces=traces,
        origin=min(JobShape().origin, writers - 1),
        nan_step=int(traces / 500 * 0.6),
        step_s=0.05,
        healthy_every=0,
    )
    logdir = os.path.join(root, "live")
    os.makedirs(logdir)
    fields = {
        k: getattr(shape, k)
        for k in (
            "workers",
            "traces",
            "traces_per_step",
            "origin",
            "nan_step",
            "step_s",
            "healthy_every",
        )
    }
    t0 = time.time() + 4.0 + 0.4 * writers
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _LIVE_WORKER, ROOT, logdir, str(w), str(t0), json.dumps(fields)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    session = f"bench_workers_live_{os.getpid()}"
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "READY"
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        command = shlex.join(
            ["env", f"PYTHONPATH={ROOT}", sys.executable, "-m", "tfdbg_tui.cli", logdir]
        )
        subprocess.run(
            [
                "tmux",
                "new-session",
                "-d",
                "-s",
                session,
                "-x",
                str(SIZE[0]),
                "-y",
                str(SIZE[1]),
                command,
            ],
            check=True,
        )
        origin = processes[shape.origin]
        assert origin.stdout is not None
        line = origin.stdout.readline().split()
        assert line and line[0] == "NAN", line
        nan_at = float(line[1])
        said = f"worker {shape.origin} went non-finite first"
        deadline = time.time() + 60
        while time.time() < deadline:
            if said in _pane(session):
                return {
                    "lag_s": time.time() - nan_at,
                    "writers": writers,
                    "load": os.getloadavg()[0],
                }
            time.sleep(0.01)
        raise TimeoutError(f"not named within 60 s:\n{_pane(session)}")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)


def measure(
    workers: int, traces: int, rounds: int, bucket: bool = True, live_writers: int = 16
) -> dict:
    """Every measurement, ``rounds`` times each (the local and the bucket's taking
    turns); the job written once to a disk and once to a bucket."""
    steps = traces // JobShape().traces_per_step
    shape = replace(JobShape(), workers=workers, traces=traces, nan_step=min(120, steps * 3 // 5))
    compile_packages()
    root = tempfile.mkdtemp(prefix="bench_workers_")
    server = None
    results: dict[str, list[dict]] = {}
    try:
        started = time.perf_counter()
        local = write_job(os.path.join(root, "job"), shape, processes=2)
        results["write"] = [{"local_s": time.perf_counter() - started}]
        env = dict(os.environ)
        url = None
        if bucket:
            from tests.cloud.conftest import start_server

            server = start_server()
            env = server.env()
            os.environ.update(env)
            import s3fs

            name = f"bench-{uuid.uuid4().hex[:8]}"
            s3fs.S3FileSystem(skip_instance_cache=True).mkdir(name)
            started = time.perf_counter()
            url = write_job(f"s3://{name}/job", shape, processes=2)
            results["write"][0]["bucket_s"] = time.perf_counter() - started
        results["write"][0]["settled_s"] = _settle()
        for round_ in range(rounds):
            cache = os.path.join(root, f"cache-{round_}")
            places = [("local", local)] + ([("bucket", url)] if url else [])
            for place, logdir in places if round_ % 2 == 0 else places[::-1]:
                round_env = dict(env, TFDBG_TUI_CACHE_DIR=f"{cache}-{place}-report")
                results.setdefault(f"report, {place}", []).append(
                    _isolated(report, logdir, round_env)
                )
                round_env = dict(env, TFDBG_TUI_CACHE_DIR=f"{cache}-{place}-app")
                results.setdefault(f"app, {place}", []).append(app(logdir, round_env))
        if live_writers:
            for round_ in range(rounds):
                results.setdefault("live", []).append(
                    live(os.path.join(root, f"live-{round_}"), live_writers, traces)
                )
        return results
    finally:
        if server is not None:
            from tests.cloud.conftest import stop_server

            stop_server(server)
        shutil.rmtree(root, ignore_errors=True)


# Before measuring, the load the job's writing made is let go down to this (at most
# `SETTLE_MAX_S`): the measurements are a process each, as short as a second.
SETTLE_LOAD = 1.5
SETTLE_MAX_S = 120.0


def _settle() -> float:
    """Wait until the 1-minute load is below `SETTLE_LOAD` (or `SETTLE_MAX_S`
    passed); returns the seconds waited."""
    started = time.perf_counter()
    while os.getloadavg()[0] >= SETTLE_LOAD and time.perf_counter() - started < SETTLE_MAX_S:
        time.sleep(2.0)
    return time.perf_counter() - started


def _median(founds: list[dict], key: str) -> float:
    values = [f[key] for f in founds if key in f]
    return statistics.median(values) if values else float("nan")


def _span(founds: list[dict], key: str, unit: str) -> str:
    """ "0.93 s (0.87-1.08)": the median and the range."""
    values = [f[key] for f in founds if key in f]
    digits = 2 if unit == "s" else 0
    low, mid, high = (
        f"{v:.{digits}f}" for v in (min(values), statistics.median(values), max(values))
    )
    return f"{mid} {unit} ({low}-{high})"


def _readings(founds: list[dict], place: str) -> None:
    """Each measurement's seconds less the client's set-up (a bucket's), in place."""
    for found in founds:
        setup = found["setup_s"] if place == "bucket" else 0.0
        for key in ("wall_s", "landed_s", "marked_s"):
            if key in found:
                found[key.replace("_s", "_reading_s")] = found[key] - setup


def _rows(results: dict[str, list[dict]]) -> list[tuple[str, list[dict], str, str, bool, str]]:
    """(measure, measurements, key, target, met, unit) of every row of the table."""
    rows = []
    reports, apps = results.get("report, local", []), results.get("app, local", [])
    named = all(f["named"] for f in reports)
    marked = all(f["marked_origin"] for f in apps)
    rss = f"<= {TARGET_RSS_MB} MB"
    if reports:
        _readings(reports, "local")
        _readings(apps, "local")
        rows += [
            (
                "report: start to exit, the worker named",
                reports,
                "wall_s",
                f"<= {TARGET_S:.0f} s",
                _median(reports, "wall_s") <= TARGET_S and named,
                "s",
            ),
            (
                "report: peak RSS",
                reports,
                "rss_mb",
                rss,
                _median(reports, "rss_mb") <= TARGET_RSS_MB,
                "MB",
            ),
            ("app: start to first frame", apps, "first_frame_s", "", True, "s"),
            (
                "app: start to the origin's root cause (its landing)",
                apps,
                "landed_s",
                "",
                True,
                "s",
            ),
            (
                "app: start to the run picker marking the origin (r pressed at the landing)",
                apps,
                "marked_s",
                f"<= {TARGET_S:.0f} s",
                _median(apps, "marked_s") <= TARGET_S and marked,
                "s",
            ),
            (
                "app: peak RSS at the mark",
                apps,
                "rss_mb",
                rss,
                _median(apps, "rss_mb") <= TARGET_RSS_MB,
                "MB",
            ),
            (
                f"app: peak RSS {SETTLE_S:.0f} s later (the picker counting every run's alerts)",
                apps,
                "rss_settled_mb",
                rss,
                _median(apps, "rss_settled_mb") <= TARGET_RSS_MB,
                "MB",
            ),
        ]
    buckets, bucket_apps = results.get("report, bucket", []), results.get("app, bucket", [])
    if buckets and reports:
        _readings(buckets, "bucket")
        _readings(bucket_apps, "bucket")
        limit_report = TARGET_BUCKET_RATIO * _median(reports, "wall_s")
        limit_app = TARGET_BUCKET_RATIO * _median(apps, "marked_s")
        ratio = f"{TARGET_BUCKET_RATIO:.0f}x local"
        rows += [
            (
                "bucket: the client's set-up (not counted)",
                buckets + bucket_apps,
                "setup_s",
                "",
                True,
                "s",
            ),
            (
                "bucket: report, start to exit less the set-up",
                buckets,
                "wall_reading_s",
                f"<= {ratio} ({limit_report:.2f} s)",
                _median(buckets, "wall_reading_s") <= limit_report
                and all(f["named"] for f in buckets),
                "s",
            ),
            (
                "bucket: report, peak RSS",
                buckets,
                "rss_mb",
                rss,
                _median(buckets, "rss_mb") <= TARGET_RSS_MB,
                "MB",
            ),
            (
                "bucket: app, start to the origin's root cause less the set-up",
                bucket_apps,
                "landed_reading_s",
                "",
                True,
                "s",
            ),
            (
                "bucket: app, start to the mark less the set-up",
                bucket_apps,
                "marked_reading_s",
                f"<= {ratio} ({limit_app:.2f} s)",
                _median(bucket_apps, "marked_reading_s") <= limit_app
                and all(f["marked_origin"] for f in bucket_apps),
                "s",
            ),
            (
                "bucket: app, peak RSS at the mark",
                bucket_apps,
                "rss_mb",
                rss,
                _median(bucket_apps, "rss_mb") <= TARGET_RSS_MB,
                "MB",
            ),
        ]
    lives = results.get("live", [])
    if lives:
        rows.append(
            (
                f"live: {lives[0]['writers']} writers, the origin's NaN to the app naming it",
                lives,
                "lag_s",
                f"<= {TARGET_LAG_S:.0f} s",
                _median(lives, "lag_s") <= TARGET_LAG_S,
                "s",
            )
        )
    return rows


def markdown(results: dict[str, list[dict]]) -> str:
    """Medians (and ranges) per measure, and each target's verdict."""
    lines = ["| measure | median (range) | target | met |", "| --- | --- | --- | --- |"]
    for name, founds, key, target, ok, unit in _rows(results):
        if any(key in f for f in founds):
            met = ("yes" if ok else "NO") if target else ""
            lines.append(f"| {name} | {_span(founds, key, unit)} | {target} | {met} |")
    loads = [f["load"] for founds in results.values() for f in founds if "load" in f]
    if loads:
        lines.append("")
        lines.append(
            f"Load average (1 min) at the measurements: {min(loads):.1f}-{max(loads):.1f}."
        )
    return "\n".join(lines)


@pytest.mark.benchmark
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_a_job_of_64_workers_is_ranked_in_seconds():
    """64 workers of 20,000 traces: the report and the picker name the origin, and a
    live job of 8 writers is followed. The bounds are the 256-worker job's targets,
    twice over for the app and the live lag (a start of the app takes 1-2 s on this
    shared machine, more when it is busy): the table printed says how they fared."""
    results = measure(64, 20_000, rounds=1, bucket=False, live_writers=8)
    print("\n" + markdown(results))
    (found,) = results["report, local"]
    assert found["named"] and found["wall_s"] <= TARGET_S and found["rss_mb"] <= TARGET_RSS_MB
    (found,) = results["app, local"]
    assert found["marked_origin"] and found["marked_s"] <= 2 * TARGET_S
    assert found["rss_settled_mb"] <= TARGET_RSS_MB
    assert results["live"][0]["lag_s"] <= 2 * TARGET_LAG_S


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=256)
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-bucket", action="store_true", help="skip the bucket (moto)")
    parser.add_argument("--live-writers", type=int, default=16, help="0: no live measurement")
    parser.add_argument("--json", action="store_true", help="also print every measurement")
    args = parser.parse_args(argv)
    results = measure(args.workers, args.traces, args.rounds, not args.no_bucket, args.live_writers)
    if args.json:
        print(json.dumps(results, indent=1))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
