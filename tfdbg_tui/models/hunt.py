"""The hunt: what the debugger lands on (alerts, root cause, diagnosis, places, steps),
read in one go from a run's reader; `open_for_landing` opens a run and reads it in
the opening thread.

The listed alerts, the root cause (the first harmful value) and its diagnosis (or the
run's healthy verdict), where in the model each listed alert was made, the alert
traces and the steps. `read_hunt` reads them in a worker; `open_for_landing` opens a
run and reads its hunt in the same thread, so the app lands on the root cause in its
first frame after the open, without a round trip through the screen and a frame of
the run's first records in between.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import reader as dump_reader_module
from reader.analysis.diagnosis.diagnosis import Diagnosis, diagnose_cause
from reader.analysis.diagnosis.verdict import healthy_verdict, no_alert_statement
from reader.analysis.hunt.model_place import Place
from reader.analysis.hunt.steps import Steps
from reader.analysis.jobs import open_landing_run
from reader.errors import DumpError
from reader.model import AlertSummary, RootCause, RunInfo

# Alerts listed per type (the counts stay exact).
ALERT_LIMIT_PER_TYPE = 1000


@dataclass(frozen=True)
class Hunt:
    """What the panes land on.

    Attributes:
        alerts: Every alert counted, the first `ALERT_LIMIT_PER_TYPE` of each type listed.
        root_cause: The first harmful value, walked back; None when there is none.
        diagnosis: The root cause's diagnosis, or the run's healthy verdict (None when
            the run has no non-finite value at all).
        places: Where in the model each listed alert was made, in `alerts.alerts` order.
        alert_traces: Ascending indices of the graph traces that alerted.
        steps: The run's steps (step numbers, gaps, alerts per step).
        no_alert: What the run says when it has no alert: clean only when it finished
            (`reader.analysis.diagnosis.verdict.no_alert_statement`).
    """

    alerts: AlertSummary
    root_cause: RootCause | None
    diagnosis: Diagnosis | None
    places: list[Place]
    alert_traces: np.ndarray
    steps: Steps
    no_alert: str = ""


def read_hunt(reader: dump_reader_module.AnalysedRun) -> Hunt:
    """The hunt of a run as its reader sees it now.

    Raises:
        DumpError: A record left the disk while it was read (a circular buffer
            rotating under a live run).
    """
    alerts = reader.alerts(limit_per_type=ALERT_LIMIT_PER_TYPE)
    root_cause = reader.root_cause() if alerts.total else None
    diagnosis = (
        diagnose_cause(reader, root_cause) if root_cause is not None else healthy_verdict(reader)
    )
    return Hunt(
        alerts=alerts,
        root_cause=root_cause,
        diagnosis=diagnosis,
        places=[reader.place(alert) for alert in alerts.alerts],
        alert_traces=reader.trace_alert_indices(),
        steps=reader.steps(),
        no_alert=""
        if alerts.total
        else _with_pair_key(reader, no_alert_statement(reader, reader.writer_state())),
    )


def _with_pair_key(reader: dump_reader_module.AnalysedRun, statement: str) -> str:
    """A watched run's statement, with the key that opens its replay when it has one."""
    log = reader.watch_log() if reader.metadata.watched else None
    if log is not None and log.hit is not None and log.hit.replay_run:
        return "w: open the replay.  " + statement
    return statement


@dataclass(frozen=True)
class Opened:
    """A run opened for the app: its reader, its liveness state
    (`reader.run.liveness`) and its hunt (None when reading it failed: the screen
    reads it again)."""

    reader: dump_reader_module.DumpReader
    state: str
    hunt: Hunt | None


def open_for_landing(logdir: str, run_id: str | None, runs: list[RunInfo] | None = None) -> Opened:
    """Open a run and read its hunt: ``run_id`` (`reader.open_run`), or when None the
    run to land on (`reader.analysis.jobs.open_landing_run`: the newest, or in a
    multi-worker job the worker that went non-finite first), among ``runs`` when the
    caller listed the logdir already.

    Raises:
        DumpError: The run cannot be opened (its one-line error is the app's).
    """
    opened = (
        open_landing_run(logdir, runs)
        if run_id is None
        else dump_reader_module.open_run(logdir, run_id)
    )
    state = opened.writer_state()
    try:
        hunt = read_hunt(opened)
    except DumpError:
        hunt = None  # a record left the disk meanwhile: the screen's worker reads it again
    return Opened(opened, state, hunt)
