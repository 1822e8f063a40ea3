"""A MultiWorkerMirroredStrategy job of two worker processes on this machine, both
writing into one logdir: both runs complete and readable, and the worker that went
non-finite first is named (programs/multi_worker.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

import reader
from instrument.api import distributed_task
from reader.analysis.diagnosis.diagnosis import diagnose_cause
from reader.analysis.jobs import first_nonfinite_workers, job_workers, origin_worker
from reader.progress import read_progresses
from tests.present import present
from tests.program_runs import PROGRAM_TIMEOUT_S, PROGRAMS, free_ports, line_of, program_env
from tests.reader.job_rankings import comparable, ranked_in_full
from tfdbg_tui.commands.report import main as report_main
from tfdbg_tui.dialogs.run_picker import run_label

PROGRAM = PROGRAMS / "multi_worker.py"


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """The logdir both workers wrote, and what each printed."""
    logdir = tmp_path_factory.mktemp("multi_worker") / "logdir"
    ports = [str(p) for p in free_ports(2)]
    workers = [
        subprocess.Popen(
            [sys.executable, str(PROGRAM), str(logdir), str(i), *ports],
            env=program_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outputs = []
    for worker in workers:
        out, err = worker.communicate(timeout=PROGRAM_TIMEOUT_S)
        assert worker.returncode == 0, err[-3000:]
        outputs.append([line.split()[1:] for line in out.splitlines() if line.startswith("STEP")])
    return logdir, outputs


def test_both_workers_train_and_both_runs_are_complete(job):
    logdir, outputs = job
    # Instrumented, the job computes what it computes without us: -inf at step 2 only.
    for printed in outputs:
        assert [value for _, value in printed] == ["-1.0260303020477295"] * 2 + ["-inf"] + [
            "-1.0260303020477295"
        ]
    runs = reader.list_runs(logdir)
    assert sorted(str(r.task) for r in runs) == ["worker 0", "worker 1"]
    assert len({r.cluster for r in runs}) == 1 and runs[0].cluster
    assert all(r.finished for r in runs)
    for info in runs:
        with reader.open_run(info.path) as dump:
            assert dump.metadata.task == info.task and dump.num_traces > 0
            assert dump.steps().first_alert_step == 2


def test_the_worker_that_went_non_finite_first_is_named(job):
    logdir, _ = job
    runs = {r.task: r for r in reader.list_runs(logdir)}
    with reader.open_run(runs["worker 0"].path) as dump:
        origin, other = first_nonfinite_workers(dump)
        # Worker 0 only received the -inf through the all-reduce.
        diagnosis = diagnose_cause(dump, present(dump.root_cause()))
    assert (origin.task, origin.op_type, origin.received, origin.first_step) == (
        "worker 1",
        "Log",
        False,
        2,
    )
    assert origin.frame is not None
    assert (origin.frame.path, origin.frame.line) == (str(PROGRAM), line_of(PROGRAM, "LOG_LINE"))
    assert (other.task, other.received, other.op_type) == ("worker 0", True, "CollectiveReduceV2")
    assert diagnosis.pattern == "nonfinite_input"
    assert "from another worker or replica" in diagnosis.explanation


def test_the_ranking_from_the_progress_files_is_the_ranking_of_the_runs_read_in_full(
    job, monkeypatch
):
    """Each worker's writer kept a progress file: worker 1's first alert is its Log,
    worker 0's the all-reduce that handed it the -inf. Ranked from them, the job names
    the worker that ranking both runs read in full names, and says the same of each."""
    logdir, _ = job
    runs = reader.list_runs(logdir)
    progress = {r.task: present(read_progresses([r.path])[0]) for r in runs}
    made, received = (present(progress[t].alert) for t in ("worker 1", "worker 0"))
    assert (made.op_type, made.received, progress["worker 1"].step_of(made)) == ("Log", False, 2)
    assert made.frame == (str(PROGRAM), line_of(PROGRAM, "LOG_LINE"), "replica_step")
    assert (received.op_type, received.received) == ("CollectiveReduceV2", True)
    assert progress["worker 0"].step_of(received) == 2
    cluster = present(runs[0].cluster)
    fast = job_workers(runs, cluster)
    full = ranked_in_full(monkeypatch, lambda: job_workers(runs, cluster))
    assert [comparable(w) for w in fast] == [comparable(w) for w in full]
    assert present(origin_worker(fast)).task == "worker 1"


def test_report_names_the_workers(job, capsys):
    logdir, _ = job
    worker0 = next(r for r in reader.list_runs(logdir) if r.task == "worker 0")
    assert report_main([str(logdir), "--run", worker0.run_id, "--json"]) == 0
    workers = json.loads(capsys.readouterr().out)["workers"]
    assert [(w["task"], w["received"], w["this_run"]) for w in workers] == [
        ("worker 1", False, False),
        ("worker 0", True, True),
    ]
    assert workers[0]["source"]["line"] == line_of(PROGRAM, "LOG_LINE")
    assert report_main([str(logdir), "--run", worker0.run_id]) == 0
    out = capsys.readouterr().out
    assert "first non-finite: worker 1 at step 2: Log 'Log'" in out
    assert "worker 0 at step 2: received it through CollectiveReduceV2 (this run)" in out
    # The run picker says which worker each run is.
    assert "worker 0" in run_label(worker0).plain


@pytest.mark.parametrize(
    "tf_config, task",
    [
        (None, None),
        ("", None),
        ("not json", None),
        ('{"task": {}}', None),
        (
            '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}',
            ("worker", 1),
        ),
    ],
)
def test_the_task_comes_from_tf_config(tf_config, task):
    found = distributed_task(tf_config)
    if not task:
        assert found is None
        return
    assert found is not None
    assert (found["type"], found["index"]) == task
    assert len(found["cluster"]) == 12


def test_the_run_picker_marks_the_worker_that_went_non_finite_first(job):
    """Opened on worker 0 (which only received the -inf), `r` lists both workers and
    marks worker 1 (the Pilot run, in an event loop of its own)."""
    logdir, _ = job
    runs = {r.task: r for r in reader.list_runs(logdir)}
    asyncio.run(_pick_in_the_tui(logdir, runs))


async def _pick_in_the_tui(logdir, runs) -> None:
    from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
    from tfdbg_tui.dialogs.run_picker import RunPickerDialog

    async with hunted_app(logdir, (120, 30), run_id=runs["worker 0"].run_id) as (app, pilot):
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RunPickerDialog), what="picker")
        rows = lambda: [  # noqa: E731
            line
            for line in screen_text(app).splitlines()
            if "worker" in line and "first non-finite" in line
        ]
        await wait_for(pilot, lambda: rows(), what="the first worker marked")
        (marked,) = rows()
        assert runs["worker 1"].run_id in marked and "worker 1" in marked
