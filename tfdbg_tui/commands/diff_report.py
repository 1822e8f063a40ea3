"""`tfdbg-tui diff A B [--json] [--rtol R] [--atol A]`: where a good run and a bad run
part, `reader.analysis.compare.diff` printed (human or `--json`).

A and B are each a run directory, or a logdir whose newest run is taken (``--run-a`` /
``--run-b`` pick another). `reader.analysis.compare.diff` aligns their tensors and finds the first
divergence in B's execution order; this module prints it: the op, its step, both
summaries, what differs, and B's source line with the expression marked. Dump text is
shown literally, never read as markup. ``--json`` prints exactly one JSON object.
``--name-a`` and ``--name-b`` say what the human output calls the runs ("A" and "B"
unless given: ``run --ab`` names them by what each run is, since its good run may be
the one it made under ``.../B/``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import reader
from reader import DumpError
from reader.analysis.compare.diff import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    SIDE_NAMES,
    Divergence,
    RunDiff,
    compare_runs,
)
from reader.analysis.diagnosis.expressions import expression_of, line_span
from tfdbg_tui.commands.report import caret_lines, summary_dict
from tfdbg_tui.exit_codes import (
    EXIT_DAMAGED,
    EXIT_NEWER_FORMAT,
    EXIT_NO_DUMP,
    EXIT_OK,
    EXIT_USAGE,
    fail,
)
from tfdbg_tui.text.summary_format import summary_text

# Op types listed per side in the human output's "only in" lines.
UNMATCHED_SHOWN = 6


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfdbg-tui diff",
        description="Compare two runs (A: the good one, B: the bad one) and show the "
        "first tensor where they part: finite in one and not in the other "
        "first, else the first whose values differ beyond the tolerance.",
        epilog=f"exit status: {EXIT_OK} ran (divergence or not); {EXIT_NO_DUMP} missing, "
        f"empty, unreadable or foreign directory; {EXIT_NEWER_FORMAT} dump written "
        f"by a newer format version; {EXIT_DAMAGED} nothing readable in a dump.",
    )
    parser.add_argument("a", metavar="A", help="the good run: a run directory or a logdir")
    parser.add_argument("b", metavar="B", help="the bad run: a run directory or a logdir")
    parser.add_argument(
        "--run-a",
        metavar="ID",
        default=None,
        help="run id (or unique prefix) in A (default: the newest)",
    )
    parser.add_argument(
        "--run-b",
        metavar="ID",
        default=None,
        help="run id (or unique prefix) in B (default: the newest)",
    )
    parser.add_argument(
        "--rtol",
        type=float,
        default=DEFAULT_RTOL,
        help=f"relative tolerance for counts and values (default {DEFAULT_RTOL:g})",
    )
    parser.add_argument(
        "--atol",
        type=float,
        default=DEFAULT_ATOL,
        help=f"absolute tolerance for counts and values (default {DEFAULT_ATOL:g})",
    )
    parser.add_argument(
        "--name-a",
        metavar="NAME",
        default=SIDE_NAMES[0],
        help="what the human report calls A (default A)",
    )
    parser.add_argument(
        "--name-b",
        metavar="NAME",
        default=SIDE_NAMES[1],
        help="what the human report calls B (default B)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the human report"
    )
    return parser


def main(argv: list[str]) -> int:
    """Run the comparison; returns the exit status (see `build_parser`'s epilog)."""
    args = build_parser().parse_args(argv)
    if args.rtol < 0 or args.atol < 0:
        print("tfdbg-tui diff: --rtol and --atol must not be negative", file=sys.stderr)
        return EXIT_USAGE
    try:
        with reader.open_run(args.a, args.run_a) as a, reader.open_run(args.b, args.run_b) as b:
            # The JSON object's keys name the runs "a" and "b"; so does its detail.
            names = SIDE_NAMES if args.json else (args.name_a, args.name_b)
            diff = compare_runs(a, b, rtol=args.rtol, atol=args.atol, names=names)
            if args.json:
                print(json.dumps(diff_dict(a, b, diff)))
            else:
                _print_human(a, b, diff)
    except DumpError as error:
        return fail("tfdbg-tui diff", error)
    return EXIT_OK


def diff_dict(a: reader.AnalysedRun, b: reader.AnalysedRun, diff: RunDiff) -> dict[str, Any]:
    """The ``--json`` object (keys documented in docs/keys.md, "`diff --json`")."""
    return {
        "a": a.path,
        "b": b.path,
        "a_mode": a.metadata.tensor_debug_mode,
        "b_mode": b.metadata.tensor_debug_mode,
        "aligned": diff.aligned,
        "aligned_graph": diff.aligned_graph,
        "aligned_eager": diff.aligned_eager,
        "unmatched_a": sum(diff.unmatched_a.values()),
        "unmatched_b": sum(diff.unmatched_b.values()),
        "unmatched_a_by_op": dict(diff.unmatched_a.most_common()),
        "unmatched_b_by_op": dict(diff.unmatched_b.most_common()),
        "compared": diff.compared,
        "rtol": diff.rtol,
        "atol": diff.atol,
        "first_divergence": _divergence_dict(b, diff.first_divergence),
    }


def _divergence_dict(b: reader.AnalysedRun, d: Divergence | None) -> dict[str, Any] | None:
    if d is None:
        return None
    source = None
    if d.frame is not None:
        source = {
            "file": d.frame.path,
            "line": d.frame.line,
            "function": d.frame.function,
            "expression": expression_of(b, d.frame),
        }
    return {
        "kind": d.kind,
        "reason": d.reason,
        "detail": d.detail,
        "op_type": d.op_type,
        "op_name": d.op_name,
        "graph_name": d.graph_name,
        "slot": d.slot,
        "step": d.step,
        "occurrence": d.occurrence,
        "index_a": d.a.index,
        "index_b": d.b.index,
        "a": summary_dict(d.a.summary),
        "b": summary_dict(d.b.summary),
        "max_abs_error": d.max_abs_error,
        "max_rel_error": d.max_rel_error,
        "source": source,
    }


def _print_human(a: reader.AnalysedRun, b: reader.AnalysedRun, diff: RunDiff) -> None:
    # Rich is imported here: `--json` and errors never pay for it.
    from tfdbg_tui.text.console_output import literal_line, output_console

    console = output_console()

    def line(*parts: str | tuple[str, str]) -> None:
        console.print(literal_line(*parts))

    name_a, name_b = diff.names
    width = max(len(name_a), len(name_b))
    for label, run in ((name_a, a), (name_b, b)):
        line(
            (f"{label.ljust(width)} ", "bold"),
            run.path,
            f"  ({run.metadata.tensor_debug_mode}, {run.num_executions:,} eager "
            f"executions, {run.num_traces:,} graph traces)",
        )
    line(
        f"aligned {diff.aligned_graph:,} graph tensors and {diff.aligned_eager:,} eager "
        f"outputs; compared {diff.compared} (rtol {diff.rtol:g}, atol {diff.atol:g})"
    )
    for label, unmatched in ((name_a, diff.unmatched_a), (name_b, diff.unmatched_b)):
        if unmatched:
            shown = ", ".join(f"{op} {n:,}" for op, n in unmatched.most_common(UNMATCHED_SHOWN))
            more = len(unmatched) - UNMATCHED_SHOWN
            line(
                f"only in {label}: {sum(unmatched.values()):,} ({shown}"
                + (f", {more} more op types" if more > 0 else "")
                + ")"
            )
    d = diff.first_divergence
    if d is None:
        line("")
        line(("No divergence: ", "bold green"), "every aligned tensor agrees within the tolerance.")
        return
    what = (
        f"{d.op_type} '{d.op_name}:{d.slot}'"
        if d.op_name
        else f"{d.op_type} (eager, output {d.slot})"
    )
    where = f" in graph '{d.graph_name}'" if d.graph_name else ""
    when = f" at step {d.step}" if d.step is not None else ""
    nth = f", occurrence {d.occurrence + 1} in the step" if d.occurrence else ""
    line("")
    line(("First divergence: ", "bold"), what + where + when + nth)
    line(("  ", ""), (d.detail, "bold red"))
    line(f"  {name_a} #{d.a.index}: {summary_text(d.a.summary).plain}")
    line(f"  {name_b} #{d.b.index}: {summary_text(d.b.summary).plain}")
    if d.frame is None:
        line(f"  (no user source frame recorded in {name_b})")
        return
    line("  ", (f"{d.frame.path}:{d.frame.line}", "bold"), f" in {d.frame.function}")
    text = b.source_line(d.frame)
    if text is not None:
        shown, carets = caret_lines(text, line_span(d.frame, text))
        line(f"    {shown}")
        if carets:
            line(("    ", ""), (carets, "bold red"))
