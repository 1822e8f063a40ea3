"""`tfdbg-tui report LOGDIR [--run ID] [--json]`: a headless summary of one run (without
``--run``, the run the app opens: the newest, or in a multi-worker job the worker that
went non-finite first), human (Rich `Text`, dump text literal) or `--json` (no Rich).

Prints the run, its mode and counts, what of it is kept on disk (the gaps a circular
buffer leaves around the first alert's window), the alerts by type and per step, the
root cause of the first NaN/inf (its op, its step, its inputs' summaries, the user's
source line with the expression marked by carets, as in a Python traceback) and its
diagnosis (`reader.analysis.diagnosis.diagnosis`: the pattern, why, the usual fix) with its
proof when the dump holds the values (`instrument.repro.proof`: the op rerun on its
stored inputs as it ran and fixed, in a process of its own; ``--no-proof`` skips it). Human
output uses Rich; every piece of dump text is escaped, never read as markup. ``--json`` prints
exactly one JSON object for scripts and CI.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import reader
from instrument.repro.proof import Proof, prove
from reader import DumpError
from reader import format as fmt
from reader.analysis.diagnosis.culprit_values import CulpritValues, culprit_values
from reader.analysis.diagnosis.diagnosis import Diagnosis, diagnose_cause
from reader.analysis.diagnosis.expressions import expression_of, line_span
from reader.analysis.diagnosis.verdict import (
    CLEAN_RUN,
    contained_line,
    healthy_verdict,
    no_alert_statement,
)
from reader.analysis.hunt.steps import Gap, Steps
from reader.analysis.jobs import WorkerRun, first_nonfinite_workers, open_landing_run
from reader.analysis.trends.watch_rules import RuleSpecError, WatchReport, parse_rule_specs
from reader.contract.metadata import CHECK_VARIABLE
from reader.model import DUMPER_TENSORFLOW, Alert, RootCause, Summary
from reader.notices import Notice
from reader.run.watch_pair import WatchPair, watch_pair
from tfdbg_tui.commands.report_place import consumed_step, place_dict, place_lines
from tfdbg_tui.exit_codes import (
    EXIT_DAMAGED,
    EXIT_NEWER_FORMAT,
    EXIT_NO_DUMP,
    EXIT_OK,
    EXIT_USAGE,
    fail,
)
from tfdbg_tui.text.literal import literal, literal_columns
from tfdbg_tui.text.run_state import STATE_WORDS, TENSORFLOW_DUMP
from tfdbg_tui.text.step_sparkline import sparkline, step_range

# Alerts listed in the human report; the totals always count every one.
ALERTS_SHOWN = 10
# A multi-worker job's workers listed by name in the human report (the first ones, and
# this run); the rest are counted, and `--json` lists every one.
WORKERS_SHOWN = 8
# Cells of the human report's alerts-per-step line.
SPARKLINE_WIDTH = 60


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfdbg-tui report",
        description="Summarise one run of a tfdbg-tui dump: counts, NaN/inf alerts by "
        "type, and the op and source line that produced the first one.",
        epilog=f"exit status: {EXIT_OK} ran (alerts or not); {EXIT_NO_DUMP} missing, empty, "
        f"unreadable or foreign directory; {EXIT_NEWER_FORMAT} dump written by a newer "
        f"format version; {EXIT_DAMAGED} dump damaged beyond reading.",
    )
    parser.add_argument(
        "logdir", metavar="LOGDIR", help="directory holding runs (or one run directory)"
    )
    parser.add_argument(
        "--run",
        metavar="ID",
        default=None,
        help="run id or unique prefix (default: the newest run; in a multi-worker job, "
        "the worker that went non-finite first)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the human report"
    )
    parser.add_argument(
        "--no-proof",
        action="store_true",
        help="do not rerun the root cause's op on its stored values (FULL_TENSOR) to prove the fix",
    )
    parser.add_argument(
        "--rule",
        metavar="NAME:KEY=VALUE",
        action="append",
        default=[],
        help="a watch rule's threshold, e.g. exploding:k=5 (repeatable; "
        "rules: exploding k, window; vanishing n, relu; "
        "float16_headroom factor; loss_scale)",
    )
    return parser


def main(argv: list[str]) -> int:
    """Run the report; returns the exit status (see `build_parser`'s epilog)."""
    args = build_parser().parse_args(argv)
    try:
        rules = parse_rule_specs(args.rule)
    except RuleSpecError as error:
        import sys

        print(f"tfdbg-tui report: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        # Without --run, the run the app opens: in a multi-worker job, the worker that
        # went non-finite first.
        dump = (
            reader.open_run(args.logdir, args.run)
            if args.run is not None
            else open_landing_run(args.logdir)
        )
        with dump:
            summary = dump.alerts(limit_per_type=ALERTS_SHOWN)
            cause = dump.root_cause()
            diagnosis = diagnose_cause(dump, cause) if cause is not None else healthy_verdict(dump)
            watched = dump.watch(rules)
            values = None if cause is None else culprit_values(dump, cause)
            proof = None if values is None or args.no_proof else prove(values)
            if args.json:
                print(
                    json.dumps(report_dict(dump, summary, cause, diagnosis, watched, proof, values))
                )
            else:
                _print_human(dump, summary, cause, diagnosis, proof, values)
                _say_rules(dump, watched)
    except DumpError as error:
        return fail("tfdbg-tui report", error)
    return EXIT_OK


def _counts(alert: Alert) -> dict[str, int]:
    return {"nan": alert.nan, "neg_inf": alert.neg_inf, "pos_inf": alert.pos_inf}


def summary_dict(summary: Summary | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    return {
        key: getattr(summary, key)
        for key in fmt.SUMMARY_COLUMNS[fmt.FULL_STATS] + (fmt.MAGNITUDE_COLUMN,)
        if getattr(summary, key) is not None
    } | ({"shape": list(summary.shape)} if summary.shape is not None else {})


def report_dict(
    dump: reader.AnalysedRun,
    summary: reader.AlertSummary,
    cause: RootCause | None,
    diagnosis: Diagnosis | None = None,
    watched: WatchReport | None = None,
    proof: Proof | None = None,
    values: CulpritValues | None = None,
) -> dict[str, Any]:
    """The JSON report: the run, its counts, alerts and first alert, the root cause's
    inputs and their values where kept, the exact expression, the diagnosis and its
    proof, damage and the watch rules' hits (docs/keys.md)."""
    watched = watched if watched is not None else dump.watch()
    meta = dump.metadata
    pair = watch_pair(dump)
    steps = dump.steps()
    first_alert = None
    if cause is not None:
        alert = cause.alert
        source = None
        if cause.frame is not None:
            span = line_span(cause.frame, cause.line_text)
            source = {
                "file": cause.frame.path,
                "line": cause.frame.line,
                "function": cause.frame.function,
                "text": cause.line_text,
                "column": span[0] if span else None,
                "end_column": span[1] if span else None,
                "expression": expression_of(dump, cause.frame),
            }
        first_alert = {
            "kind": alert.kind,
            "index": alert.index,
            "op_type": alert.op_type,
            "op_name": alert.op_name,
            "graph_name": alert.graph_name,
            "device": alert.device,
            "slot": alert.slot,
            "step": alert.step,
            "step_number": consumed_step(dump, alert, steps),
            "counts": _counts(alert),
            "source": source,
            "inputs": [{"name": ref.name, "summary": summary_dict(s)} for ref, s in cause.inputs],
            "values": None if values is None else values.as_dict(),
            **place_dict(dump, alert, diagnosis),
        }
    return {
        "run": meta.run_id,
        "dumper": meta.dumper,
        "tensor_debug_mode": meta.tensor_debug_mode,
        "num_executions": dump.num_executions,
        "num_graph_traces": dump.num_traces,
        "first_execution": dump.first_execution,
        "first_graph_trace": dump.first_trace,
        "finished": dump.finished,
        "state": dump.writer_state(),
        "reached": _reached_dict(dump, steps),
        "num_alerts": summary.total,
        "alerts_by_type": summary.counts,
        "harmful": summary.harmful,
        "contained": summary.contained,
        "first_alert": first_alert,
        "steps": _steps_dict(steps),
        "gaps": [_gap_dict(gap) for gap in steps.gaps],
        "diagnosis": None
        if diagnosis is None
        else {
            "pattern": diagnosis.pattern,
            "explanation": diagnosis.explanation,
            "suggestion": diagnosis.suggestion,
            "evidence": list(diagnosis.evidence),
            "source": None if diagnosis.source is None else diagnosis.source.as_dict(),
            "fix": None if diagnosis.fix is None else diagnosis.fix.as_dict(),
            "chain": [link.as_dict() for link in diagnosis.chain],
            "chain_note": diagnosis.chain_note,
            "proof": None if proof is None else proof.as_dict(),
        },
        "damage": list(dump.damage),
        "notices": [notice_dict(n) for n in dump.notices()],
        "workers": [_worker_dict(w, dump) for w in first_nonfinite_workers(dump)],
        "watch": None if pair is None else pair.as_dict(),
        "replay_of": None
        if meta.replay_of is None
        else {"run": meta.replay_of.run_id, "step": meta.replay_of.step},
        "rules": [hit.as_dict() for hit in watched.hits],
        "first_anomaly": None if watched.first_anomaly is None else watched.first_anomaly.as_dict(),
        "lead_steps": watched.lead_steps,
    }


def _reached_dict(dump: reader.AnalysedRun, steps: Steps) -> dict[str, Any] | None:
    """How far the run got: its last execution on disk and that execution's step (a
    run killed while it hung ends there)."""
    if not dump.num_executions:
        return None
    last = dump.num_executions - 1
    return {"execution": last, "step": steps.of_execution(last)}


def _say_watch(say, dump: reader.AnalysedRun, pair: WatchPair | None) -> None:
    """The watch tier's lines: a watched run's steps and hit, or which step a replay
    replays."""
    if pair is None:
        return
    hit = pair.log.hit
    if pair.watched_run != dump.metadata.run_id:
        say(
            ("  replay", "bold"),
            f" of step {hit.step if hit else '?'} of the watched run "
            f"{pair.watched_run}" + (f": {hit.what} held NaN or infinity" if hit else ""),
        )
        if hit is not None and hit.verdict:
            say(f"  verdict: {hit.verdict}")
        return
    optimizers = ", ".join(site.optimizer for site in pair.log.sites.values()) or "no optimizer yet"
    say(
        ("  watched", "bold"),
        f": {pair.log.num_steps:,} steps of {optimizers}"
        + (f" ({pair.log.lost_rows:,} rows not read in time)" if pair.log.lost_rows else ""),
    )
    if hit is None:
        say("  no step went non-finite")
        return
    written = hit.check == CHECK_VARIABLE  # found after a write the watch could not hold
    say(
        "  ",
        ("hit:", "bold red"),
        f" step {hit.step}: {hit.what} held NaN or infinity (the {hit.check} check); "
        + (
            "that step's update was written, nothing after it"
            if written
            else "the update was not applied"
        ),
    )
    if pair.replay_run:
        say(
            f"  replay: {pair.replay_run} ({hit.verdict or 'no verdict'}); open it with "
            f"--run {pair.replay_run}"
        )
    elif hit.replay_error:
        say(f"  the replay failed: {hit.replay_error}")
    state_label = "state after the step" if written else "state before the step"
    for label, path in ((state_label, hit.saved_state), ("its batch", hit.saved_batch)):
        if path:
            say(f"  {label}: {path}")


def _say_workers(say, dump: reader.AnalysedRun, workers: list[WorkerRun]) -> None:
    """The job's workers, the one that went non-finite first first: the first
    `WORKERS_SHOWN` and this run by name, the others counted."""
    if not workers:
        return
    say("")
    say(
        ("Workers:", "bold"),
        f" {len(workers)} runs of this job in the logdir (this run is {dump.metadata.task})",
    )
    for rank, worker in enumerate(workers):
        if rank < WORKERS_SHOWN or worker.path == dump.path:
            say(*_worker_line(worker, dump, first=rank == 0))
    rest = [w for rank, w in enumerate(workers) if rank >= WORKERS_SHOWN and w.path != dump.path]
    if rest:
        say(f"  and {len(rest):,} more: {_workers_counted(rest)}")


def _worker_line(worker: WorkerRun, dump: reader.AnalysedRun, first: bool) -> tuple:
    """One worker's line: its task, when and how it went non-finite, its run."""
    this = " (this run)" if worker.path == dump.path else f" (run {worker.run_id})"
    if not worker.has_alerts:
        return (f"  {worker.task}: no NaN or infinity{this}",)
    at = "" if worker.first_step is None else f" at step {worker.first_step}"
    if worker.received:
        what = f"received it through {worker.op_type}"
    else:
        name = f" '{worker.op_name}'" if worker.op_name else ""
        where = "" if worker.frame is None else f" at {worker.frame.path}:{worker.frame.line}"
        what = f"{worker.op_type}{name}{where}"
    lead = ("first non-finite: ", "bold red") if first and not worker.received else ("", "")
    return ("  ", lead, f"{worker.task}{at}: {what}{this}")


def _workers_counted(workers: list[WorkerRun]) -> str:
    """Workers in words, by what they did: "250 received it (steps 120-121), 6 without
    NaN or infinity"."""
    parts = []
    for label, group in (
        ("received it", [w for w in workers if w.has_alerts and w.received]),
        ("made one of their own", [w for w in workers if w.has_alerts and not w.received]),
    ):
        steps = [w.first_step for w in group if w.first_step is not None]
        if group:
            span = "" if not steps else f" ({_steps_text(min(steps), max(steps))})"
            parts.append(f"{len(group):,} {label}{span}")
    healthy = sum(1 for w in workers if not w.has_alerts)
    if healthy:
        parts.append(f"{healthy:,} without NaN or infinity")
    return ", ".join(parts)


def _steps_text(first: int, last: int) -> str:
    """ "step 120", or "steps 120-121"."""
    return f"step {first}" if first == last else f"steps {first}-{last}"


def _worker_dict(worker: WorkerRun, dump: reader.AnalysedRun) -> dict[str, Any]:
    frame = worker.frame
    return {
        "run": worker.run_id,
        "task": worker.task,
        "this_run": worker.path == dump.path,
        "first_non_finite_step": worker.first_step,
        "time": worker.first_time,
        "op_type": worker.op_type,
        "op_name": worker.op_name,
        "device": worker.device,
        "received": worker.received,
        "indexed": worker.indexed,
        "source": None
        if frame is None
        else {"file": frame.path, "line": frame.line, "function": frame.function},
    }


def notice_dict(notice: Notice) -> dict[str, Any]:
    """A notice as the JSON report gives it."""
    return {
        "kind": notice.kind,
        "level": notice.level,
        "message": notice.message,
        "details": notice.details,
    }


def _steps_dict(steps: Steps) -> dict[str, Any]:
    return {
        "function": steps.function,
        "first_non_finite_step": steps.first_alert_step,
        "kept": [list(r) for r in steps.kept_steps()],
        "alerts_per_step": [
            [int(s), int(c)] for s, c in zip(steps.alert_steps, steps.alert_counts)
        ],
    }


def _gap_dict(gap: Gap) -> dict[str, Any]:
    return {
        "executions": list(gap.executions) if gap.executions else None,
        "graph_traces": list(gap.traces) if gap.traces else None,
        "steps": list(gap.steps) if gap.steps else None,
        "text": gap.describe(),
    }


def _print_human(
    dump: reader.AnalysedRun,
    summary: reader.AlertSummary,
    cause: RootCause | None,
    diagnosis: Diagnosis | None,
    proof: Proof | None = None,
    values: CulpritValues | None = None,
) -> None:
    # Rich is imported here, not at module level: `--json` and errors never pay for it.
    from rich.table import Table

    from tfdbg_tui.text.console_output import literal_line, output_console
    from tfdbg_tui.text.summary_format import summary_text

    console = output_console()

    def say(*parts: str | tuple[str, str]) -> None:
        """Print one line of parts, plain or ``(text, style)``; every part is shown
        literally (`tfdbg_tui.text.literal`), never read as markup."""
        console.print(literal_line(*parts))

    meta = dump.metadata
    state = (
        TENSORFLOW_DUMP if meta.dumper == DUMPER_TENSORFLOW else STATE_WORDS[dump.writer_state()]
    ).sentence
    say(("Run", "bold"), f" {meta.run_id}  ({state})")
    say(
        f"  mode {meta.tensor_debug_mode}, host {meta.host}, pid {meta.pid}, "
        f"TensorFlow {meta.tf_version}"
    )
    say(
        f"  {dump.num_executions:,} eager executions, {dump.num_traces:,} graph "
        "execution traces"
        + (
            f" (from #{dump.first_execution:,} / #{dump.first_trace:,} on disk)"
            if dump.first_execution or dump.first_trace
            else ""
        )
    )
    steps = dump.steps()
    if steps.has_steps:
        kept = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in steps.kept_steps())
        say(f"  steps: calls of {steps.function or ''}; kept: steps {kept}")
    for gap in steps.gaps:
        say("  ", ("gap:", "yellow"), f" {gap.describe()}")
    for damage in dump.damage:
        say("  ", ("damage:", "yellow"), f" {damage}")
    for notice in dump.notices():
        style = "bold yellow" if notice.is_warning else "cyan"
        say(
            "  ",
            (f"{'⚠ ' if notice.is_warning else ''}{notice.level}:", style),
            f" {notice.message}",
        )
    _say_workers(say, dump, first_nonfinite_workers(dump))
    pair = watch_pair(dump)
    _say_watch(say, dump, pair)
    if not summary.total:
        say("")
        statement = no_alert_statement(dump, dump.writer_state())
        say((statement, "green" if statement == CLEAN_RUN else "bold yellow"))
        return
    by_type = ", ".join(f"{k}: {v:,}" for k, v in summary.counts.items())
    say("")
    if cause is None and diagnosis is not None:
        say(
            (f"{summary.total:,} alerts, all contained:", "bold green"),
            f" {contained_line(summary, dump.harm())}",
        )
        _say_diagnosis(say, diagnosis)
        return
    say((f"{summary.total:,} alerts", "bold red"), f" ({by_type})")
    if any(summary.contained.values()):
        say(f"  {contained_line(summary, dump.harm())}")
    if steps.first_alert_position is not None:
        say(f"  first non-finite value at {steps.place(steps.first_alert_position)}")
    span = step_range(steps)
    if span is not None:
        say(f"  alerts per step {span[0]}..{span[1]}: {sparkline(steps, SPARKLINE_WIDTH)}")
    harmful_first = [a for a in sorted(summary.alerts, key=_order_key) if not a.contained]
    listed = harmful_first[:ALERTS_SHOWN]
    # CURT_HEALTH records no counts (the reader's -1): no count columns then, as the
    # TUI's Alerts rows give none.
    counted = any(a.nan >= 0 for a in listed)
    table = Table(show_edge=False, pad_edge=False)
    for column in (
        "kind",
        "index",
        "step",
        "op",
        "graph",
        *(("nan", "-inf", "+inf") if counted else ()),
    ):
        table.add_column(column)
    for alert in listed:
        name = alert.op_type + (f" {alert.op_name}:{alert.slot}" if alert.op_name else "")
        step = steps.of_execution(alert.step) if steps.has_steps else alert.step
        counts = (alert.nan, alert.neg_inf, alert.pos_inf) if counted else ()
        table.add_row(
            *(
                literal_line(cell)
                for cell in (
                    alert.kind,
                    str(alert.index),
                    "-" if step is None else str(step),
                    name,
                    alert.graph_name or "",
                    *(_count_text(c) for c in counts),
                )
            )
        )
    console.print(table)
    if cause is None:
        return
    alert = cause.alert
    what = (
        f"{alert.op_type} '{alert.op_name}:{alert.slot}'"
        if alert.op_name
        else f"{alert.op_type} (eager execution #{alert.index}, output {alert.slot})"
    )
    where = f" in graph '{alert.graph_name}'" if alert.graph_name else ""
    say("")
    step = consumed_step(dump, alert, steps)
    at = f"step {step}" if step is not None else steps.place(alert.step)
    say(("Root cause:", "bold"), f" {what}{where} at {at}")
    for line in place_lines(dump, alert, diagnosis):
        say(f"  {line}")
    for ref, s in cause.inputs:
        say(f"  input {ref.name}: {summary_text(s).plain}")
    if cause.frame is not None:
        say("  ", (f"{cause.frame.path}:{cause.frame.line}", "bold"), f" in {cause.frame.function}")
        if cause.line_text is not None:
            shown, carets = caret_lines(cause.line_text, line_span(cause.frame, cause.line_text))
            say(f"    {shown}")
            if carets:
                say("    ", (carets, "bold red"))
    else:
        say("  (no user source frame recorded)")
    if values is not None and values.kept:
        say("  ", ("Values:", "bold"), f" kept by {values.origin}")
        for line in values.lines():
            say(f"    {line}")
    if diagnosis is not None:
        _say_diagnosis(say, diagnosis, proof)


# Rule hits listed in the human report; the JSON report lists every one.
RULE_HITS_SHOWN = 10


def _say_rules(dump: reader.AnalysedRun, watched: WatchReport) -> None:
    """The watch rules' hits (they never change the verdict): the first anomaly and
    its lead on the first harmful value, then the first hits in step order."""
    from tfdbg_tui.text.console_output import literal_line, output_console

    console = output_console()
    unit = dump.trends().unit
    console.print(literal_line(""))
    if not watched.hits:
        console.print(literal_line(("Watch rules:", "bold"), " no rule fired"))
        return
    first = watched.first_anomaly
    lead = ""
    if first is not None and watched.lead_steps is not None:
        lead = (
            f", {watched.lead_steps} {unit}{'s' if watched.lead_steps != 1 else ''} "
            f"before the first harmful non-finite value ({unit} "
            f"{watched.first_harmful_step})"
        )
    console.print(
        literal_line(
            ("Watch rules:", "bold"),
            f" {len(watched.hits)} hit{'s' if len(watched.hits) != 1 else ''}"
            f"; first anomaly at {unit} {first.step if first else '-'}"
            f"{lead} (shown, not part of the verdict)",
        )
    )
    for hit in watched.hits[:RULE_HITS_SHOWN]:
        console.print(literal_line(f"  {hit.describe(unit)}"))
    if len(watched.hits) > RULE_HITS_SHOWN:
        console.print(
            literal_line(
                f"  ... and {len(watched.hits) - RULE_HITS_SHOWN} more "
                "(report --json lists every one)"
            )
        )


def _say_diagnosis(say, diagnosis: Diagnosis, proof: Proof | None = None) -> None:
    say("")
    say(("Diagnosis:", "bold"), f" {diagnosis.pattern}")
    say(f"  {diagnosis.explanation}")
    say("  ", ("Fix:", "bold"), f" {diagnosis.suggestion}")
    if diagnosis.chain:
        say("  ", ("Chain:", "bold"), " from where the bad values were made to the root cause")
        for link in diagnosis.chain:
            say(f"    {link.subject} [{link.op_type}]: {link.why}")
    elif diagnosis.chain_note:
        say("  ", ("Chain:", "bold"), f" {diagnosis.chain_note}")
    if proof is not None:
        say("  ", ("Proof:", "bold"), f" {proof.text()}")
    for line in diagnosis.evidence:
        say(f"  - {line}")


def caret_lines(line_text: str, span: tuple[int, int] | None) -> tuple[str, str]:
    """The source line as shown (indentation removed, tabs expanded, escaped) and a
    line of carets under the span, as Python tracebacks print them ("" without one)."""
    from rich.cells import cell_len

    full = literal(line_text.expandtabs(8))
    indent = len(full) - len(full.lstrip())
    shown = full[indent:].rstrip()
    if span is None:
        return shown, ""
    start, end = literal_columns(line_text, *span)
    return shown, " " * cell_len(full[indent:start]) + "^" * max(1, cell_len(full[start:end]))


def _order_key(alert: Alert) -> tuple[int, int, int]:
    return (alert.step, 0 if alert.kind == "graph" else 1, alert.index)


def _count_text(count: int) -> str:
    return "" if count < 0 else f"{count:,}"
