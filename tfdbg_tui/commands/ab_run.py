"""`tfdbg-tui run --ab VARIANT -- python PROGRAM.py ARGS`: two runs, the good and the
bad one, then `--compare` or `diff`; says when a variant cannot apply.

Run A is the program as it is; run B changes one thing: XLA (off for the functions
that ask for it; on when none does), the precision (Keras' ``mixed_float16`` policy
against float32) or one environment variable. The run that holds a harmful NaN or
infinity is the bad one (B when both or neither do); the comparison opens on it in
the TUI (``--compare`` the good one), or `diff` is printed. The comparison names each
run by what it is beside good or bad ("good (XLA off)", "bad (as it is)"), never by
A and B: the good run may be B's. When a variant cannot
apply (the program makes no tf.function, sets its own dtype policy, ...) this says so
instead of comparing two identical runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Any

from instrument.runner import new_logdir
from tfdbg_tui import exit_codes as codes
from tfdbg_tui.commands.program_runs import (
    CommandError,
    Outcome,
    Program,
    harmful_alert,
    logdir_and_run,
    open_debugger,
    opens_debugger,
    recording_arguments,
    run_child,
    say,
)

MIXED_POLICY = "mixed_float16"
# What run A is: the program as it is.
AS_IT_IS = "as it is"


@dataclass
class Variant:
    """What B changes: ``kind`` "xla", "precision" or "env", and for "env" the
    variable and its value."""

    kind: str
    name: str = ""
    value: str = ""

    @classmethod
    def parse(cls, text: str) -> Variant:
        if text in ("xla", "precision"):
            return cls(text)
        if text.startswith("env:") and "=" in text[4:] and text[4:].split("=", 1)[0]:
            name, value = text[4:].split("=", 1)
            return cls("env", name, value)
        raise CommandError(
            f"--ab {text!r}: expected xla, precision or env:NAME=VALUE", codes.EXIT_USAGE
        )

    def before_b(self, a: dict[str, Any]) -> tuple[list[str], dict[str, str] | None, str]:
        """B's extra child options, its environment (None: ours) and how it reads;
        raises `NotApplicable` when run A shows that B would change nothing."""
        if self.kind == "xla":
            if not a.get("functions"):
                raise NotApplicable("the program makes no tf.function: XLA has nothing to compile")
            force = "off" if a.get("num_xla_functions") else "on"
            return ["--xla", force], None, f"XLA {force}"
        if self.kind == "precision":
            policy = a.get("final_policy")
            if policy is None:
                raise NotApplicable(
                    "the program never imports Keras: there is no dtype policy to change"
                )
            if policy != "float32":
                raise NotApplicable(f"the program sets its own dtype policy ({policy})")
            return ["--precision", MIXED_POLICY], None, MIXED_POLICY
        if os.environ.get(self.name) == self.value:
            raise NotApplicable(f"{self.name} is already {self.value!r} here")
        return [], dict(os.environ, **{self.name: self.value}), f"{self.name}={self.value}"

    def after_b(self, b: dict[str, Any]) -> None:
        """Raise `NotApplicable` when run B shows the change did not hold."""
        if self.kind == "precision" and b.get("final_policy") != MIXED_POLICY:
            raise NotApplicable(
                f"the program sets its own dtype policy "
                f"({b.get('final_policy')}) over {MIXED_POLICY}"
            )


class NotApplicable(Exception):
    """The variant cannot apply to this program; the text says why."""


def main(args: argparse.Namespace, program: Program) -> int:
    """`run --ab`: run A, then B, then compare; returns the exit status."""
    variant = Variant.parse(args.ab)
    if args.pdb:
        raise CommandError("--pdb stops one run; it does not go with --ab", codes.EXIT_USAGE)
    root = args.logdir or new_logdir(program.name)
    stdout = sys.stderr if args.json else None
    say(f"--ab {args.ab}: run A, the program {AS_IT_IS}, into {os.path.join(root, 'A')}")
    a = run_child(program, recording_arguments(args, os.path.join(root, "A")), stdout=stdout)
    if a.run_path is None:
        say(f"run A recorded nothing (status {a.exit_status()})")
        return a.exit_status() or codes.EXIT_NO_PROGRAM
    try:
        extra, env, label = variant.before_b(a.info)
        say(f"run B, with {label}, into {os.path.join(root, 'B')}")
        b = run_child(
            program,
            recording_arguments(args, os.path.join(root, "B")) + extra,
            env=env,
            stdout=stdout,
        )
        if b.run_path is None:
            say(f"run B recorded nothing (status {b.exit_status()})")
            return b.exit_status() or codes.EXIT_NO_PROGRAM
        variant.after_b(b.info)
    except NotApplicable as reason:
        say(f"--ab {args.ab} cannot apply: {reason}; no comparison (run A: {a.run_path})")
        return a.exit_status() or codes.EXIT_AB_NOT_APPLICABLE
    good, bad, sentence = _good_and_bad(a, b, label)
    say(f"comparing {sentence}")
    status = _show_comparison(args, good, bad)
    for outcome in (a, b):
        if outcome.status != 0:
            return outcome.exit_status()
    if status != codes.EXIT_OK:
        return status
    if args.fail_on_alert and any(harmful_alert(str(o.run_path)) for o in (a, b)):
        say("a run holds a harmful NaN or infinity (--fail-on-alert)")
        return codes.EXIT_ALERT
    return codes.EXIT_OK


@dataclass(frozen=True)
class ComparedRun:
    """One run of the comparison: its path, whether it is the good or the bad one, and
    what it is ("as it is", "XLA off")."""

    path: str
    role: str  # "good" or "bad": what the TUI's narrow columns call it
    what: str

    @property
    def name(self) -> str:
        """Its name in the printed comparison: "good (XLA off)", "bad (as it is)"."""
        return f"{self.role} ({self.what})"


def _good_and_bad(a: Outcome, b: Outcome, label: str) -> tuple[ComparedRun, ComparedRun, str]:
    """(the good run, the bad run, how they read): the bad one holds a harmful alert.
    Each is named by what it is (``label``: what B changed), beside good or bad."""
    a_path, b_path = str(a.run_path), str(b.run_path)
    a_harm, b_harm = harmful_alert(a_path), harmful_alert(b_path)

    def state(harm: bool | None) -> str:
        return {
            True: "a harmful NaN or infinity",
            False: "no harmful NaN or infinity",
            None: "unreadable",
        }[harm]

    if a_harm and not b_harm:
        return (
            ComparedRun(b_path, "good", label),
            ComparedRun(a_path, "bad", AS_IT_IS),
            f"B ({label}: {state(b_harm)}) as the good run with A ({AS_IT_IS}: "
            f"{state(a_harm)}) as the bad one",
        )
    return (
        ComparedRun(a_path, "good", AS_IT_IS),
        ComparedRun(b_path, "bad", label),
        f"A ({AS_IT_IS}: {state(a_harm)}) as the good run with B ({label}: "
        f"{state(b_harm)}) as the bad one",
    )


def _show_comparison(args: argparse.Namespace, good: ComparedRun, bad: ComparedRun) -> int:
    if opens_debugger(args):
        return open_debugger(
            args,
            [
                *logdir_and_run(bad.path),
                "--compare",
                good.path,
                "--name-a",
                good.role,
                "--name-b",
                bad.role,
            ],
        )
    from tfdbg_tui.commands.diff_report import main as diff_main

    sys.stdout.flush()
    return diff_main(
        [good.path, bad.path, "--name-a", good.name, "--name-b", bad.name]
        + (["--json"] if args.json else [])
    )
