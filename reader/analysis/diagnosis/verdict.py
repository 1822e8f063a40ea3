"""The verdict of a run whose non-finite values were all contained: healthy, or expected
loss scaling.

A run with alerts but no harmful one (`reader.analysis.hunt.harm`) gets a diagnosis of its
own instead of a root cause: ``expected_loss_scaling`` when a dynamic loss scale
skipped steps, ``healthy`` otherwise, worded in one line ("no harmful non-finite
values; 9 steps overflowed under the loss scale and were skipped, as designed; 20
deliberate -inf"). The report prints it and the TUI opens on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reader.analysis.diagnosis.diagnosis import Diagnosis
from reader.analysis.diagnosis.registry import EXPECTED_LOSS_SCALING, HEALTHY
from reader.analysis.hunt.harm import HarmVerdict
from reader.contract.metadata import CHECK_VARIABLE
from reader.model import DUMPER_TENSORFLOW, AlertSummary
from reader.run import liveness

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

# What a finished run without any non-finite value says (`no_alert_statement`).
CLEAN_RUN = "No NaN or infinity in this run."


def healthy_verdict(reader: AnalysedRun) -> Diagnosis | None:
    """The verdict of a run whose every alert is contained; None when the run has no
    alert, or a harmful one."""
    summary = reader.alerts()
    if not summary.total or reader.first_alert() is not None:
        return None
    harm = reader.harm()
    verdict = EXPECTED_LOSS_SCALING if harm.skipped_step_numbers else HEALTHY
    evidence = [
        f"{reason}: {n:,} alert{'s' if n != 1 else ''}"
        for reason, n in summary.contained.items()
        if n
    ]
    if harm.skipped_step_numbers:
        evidence.append("steps skipped by the loss scaler: " + _ranges(harm.skipped_step_numbers))
    if harm.loss_scale_evidence:
        evidence.append(harm.loss_scale_evidence)
    evidence.extend(_examples(reader, harm))
    return Diagnosis(
        verdict.pattern,
        contained_line(summary, harm)[0].upper() + contained_line(summary, harm)[1:] + ".",
        verdict.fix,
        tuple(evidence),
    )


def no_alert_statement(reader: AnalysedRun, state: str) -> str:
    """What a run without any non-finite value says, given its liveness ``state``.

    Only a run that finished is clean. One that ended without its end record (killed,
    or its recording stopped) or is still running had no NaN *so far*: a job killed
    while it hung, or that crashed, has none because it never got further. It says
    where it got to ("the last step recorded: 7").
    """
    watched = _watched_statement(reader)
    if watched is not None:
        return watched
    if state == liveness.FINISHED or reader.metadata.dumper == DUMPER_TENSORFLOW:
        return CLEAN_RUN
    reached = (
        "nothing ran"
        if not reader.num_executions
        else "the last recorded: " + reader.steps().place(reader.num_executions - 1)
    )
    if state == liveness.RUNNING:
        return f"No NaN or infinity so far: the run is live ({reached})."
    if state == liveness.STOPPED:
        return (
            f"No NaN or infinity before the recording stopped on a write error "
            f"({reached}); the program may have gone on unrecorded."
        )
    ended = (
        "its process ended without finishing the run"
        if state == liveness.KILLED
        else "it has no end record (killed, or live on another host)"
    )
    return (
        f"No NaN or infinity recorded, but the run never finished: {ended} "
        f"({reached}). A job killed while it hung, or one that crashed, stops there; "
        "what it would have done next is not in the dump."
    )


def _watched_statement(reader: AnalysedRun) -> str | None:
    """A watched run records no op: what its watch saw instead (None for other runs)."""
    log = reader.watch_log()
    if log is None:
        return None
    hit = log.hit
    if hit is None:
        return (
            f"A watched run: every one of its {log.num_steps:,} watched steps stayed "
            "finite (it records no op)."
        )
    replay = (
        f"its replay, run {hit.replay_run} ({hit.verdict or 'no verdict'}), has the op and the line"
        if hit.replay_run
        else "it was not replayed" + (f" ({hit.replay_error})" if hit.replay_error else "")
    )
    written = (
        "that step's update was written (the watch did not hold it back), nothing after it"
        if hit.check == CHECK_VARIABLE
        else "nothing was written from that step on"
    )
    return (
        f"A watched run: step {hit.step}'s {hit.check} check failed ({hit.tensor} held "
        f"NaN or infinity) and {written}; {replay}."
    )


def contained_line(summary: AlertSummary, harm: HarmVerdict) -> str:
    """ "no harmful non-finite values; 9 steps overflowed under the loss scale and were
    skipped, as designed; 20 deliberate -inf"."""
    parts = [
        "no harmful non-finite values"
        if summary.harmful == 0
        else f"{summary.harmful:,} harmful non-finite values"
    ]
    steps = len(harm.skipped_step_numbers)
    if steps:
        parts.append(
            f"{steps} step{'s' if steps != 1 else ''} overflowed under the loss "
            f"scale and {'were' if steps != 1 else 'was'} skipped, as designed"
        )
    deliberate = summary.contained.get("deliberate", 0)
    if deliberate:
        parts.append(f"{deliberate:,} deliberate {_deliberate_kind(summary)}")
    discarded = summary.contained.get("discarded", 0)
    if discarded:
        parts.append(
            f"{discarded:,} non-finite value{'s' if discarded != 1 else ''} a select discarded"
        )
    return "; ".join(parts)


def _deliberate_kind(summary: AlertSummary) -> str:
    kinds = {a.alert_type for a in summary.alerts if a.contained == "deliberate"}
    return kinds.pop() if len(kinds) == 1 and "inf/NaN" not in kinds else "infinities"


def _examples(reader: AnalysedRun, harm: HarmVerdict) -> list[str]:
    """One line per contained tensor (at most a few): what it is and why."""
    lines: list[str] = []
    for group, containment in enumerate(harm.group_containment):
        if containment is None or len(lines) >= 5:
            continue
        trace = reader.trace(int(harm.group_traces[group]))
        name = reader.op(trace.op_id).name if trace.op_id is not None else "?"
        lines.append(f"'{name}:{trace.slot}' {containment.reason}: {containment.explanation}")
    return lines


def _ranges(numbers: tuple[int, ...]) -> str:
    """ "0-8, 12" from ascending numbers."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans)
