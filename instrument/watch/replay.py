"""At a hit: the last good state and the offending batch saved, the step replayed fully
recorded, and the error that names the op, the line and the step.

The replay runs in the training thread, between two steps, after the gate has frozen
every write (instrument/watch/gate.py): the variables hold the state before the hit
step, the non-trainable ones (batch statistics, Keras' seed generators) restored to
their copies from before it. The step function is traced again under a FULL_HEALTH
recording of its own (a run in the same logdir whose run record names the watched run
and step, ``replay_of``) and called on the kept batch; its watched ``apply`` writes
nothing. What the replay's forward pass writes (batch statistics, seeds, metrics) is
put back afterwards: nothing the replay computes feeds back into training.

The verdict compares the replay's checked values with the watched step's:
``reproduced`` when the replay holds a harmful non-finite value too,
``not_reproduced`` when it stays finite (nondeterminism, a fault of the hardware, an
input the step read that was not kept).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from instrument.non_finite import NonFiniteError, first_alert_error
from instrument.watch.gate import CHECK_UPDATE, Hit
from instrument.watch.kept_calls import KEPT_BYTES, tensor_leaves
from reader.contract import ReplayOfMap

# The verdicts (`reader.watch_log.VERDICTS`).
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not_reproduced"
XLA_ONLY = "xla_only"


@dataclass
class Saved:
    """Where the hit's last good state and batch were saved (None: not saved, and why)."""

    state: str | None
    batch: str | None
    why_not: str | None = None


@dataclass
class Replay:
    """A replay's run and verdict, or why it failed."""

    run_id: str | None
    run_path: str | None
    verdict: str | None
    error: str | None = None
    xla_run_id: str | None = None
    """Of a step compiled with XLA: the replay compiled with XLA."""


def saved_path(run_path: str, step: int, what: str) -> str:
    """Where a hit's saved state or batch goes: beside the watched run's segments."""
    return os.path.join(run_path, f"watch_step_{step}_{what}.npz")


def save_state_and_batch(hit: Hit, run_path: str) -> Saved:
    """Save the variables (the state before the hit step) and the hit step's batch as
    ``.npz`` files beside the watched run's segments; a bucket's run saves nothing."""
    from reader import storage

    if storage.is_url(run_path):
        return Saved(
            None,
            None,
            "the watched run is in a bucket; saved state and batches "
            "are written on local disks only",
        )
    variables = _state_variables(hit)
    state = saved_path(run_path, hit.step, "state")
    np.savez(
        state,
        **{
            _key(name, i): value  # type: ignore[arg-type]
            for i, (name, value) in enumerate(variables)
        },
    )
    batch = None
    named = _batch(hit)
    if named is not None:
        batch = saved_path(run_path, hit.step, "batch")
        np.savez(batch, **{_key(name, i): value for i, (name, value) in enumerate(named)})
    return Saved(state, batch)


def _batch(hit: Hit) -> list[tuple[str, Any]] | None:
    """(name, value) of the hit step's batch, or None where it was not kept."""
    kept = hit.site.kept_batches.get(hit.replica or 0)
    if kept is not None:
        return [(name, v.numpy()) for name, v in zip(kept.names, kept.variables)]
    call = hit.site.kept_calls.call(hit.step) if hit.site.kept_calls is not None else None
    return tensor_leaves(call) if call is not None else None


def _not_kept(hit: Hit) -> str:
    """Why the hit step's call is not kept."""
    calls = hit.site.kept_calls
    if calls is not None and calls.dropped_through >= hit.step:
        return (
            f"the batch of step {hit.step} was let go: the steps the watch had not read "
            f"yet held more than {KEPT_BYTES >> 20} MiB of batches"
        )
    return f"the batch of step {hit.step} was not kept"


def _state_variables(hit: Hit) -> list[tuple[str, np.ndarray]]:
    """(name, value) of every variable the watched steps write: a Keras model's
    variables and its optimizer's, or the optimizer's and the ones it trains."""
    from instrument.watch.gate import variable_name

    step = hit.site.step_function
    variables: list[Any] = list(hit.site.variables)
    if step is not None and step[0] == "keras":
        model = step[1]
        variables += list(model.variables) + list(getattr(model.optimizer, "variables", []))
    seen: set[int] = set()
    named = []
    for variable in variables:
        if id(variable) not in seen:
            seen.add(id(variable))
            named.append((variable_name(variable), np.asarray(variable.numpy())))
    return named


def _key(name: str, index: int) -> str:
    """An ``.npz`` key for a variable: its name, numbered where names repeat."""
    return f"{index:04d}:{name}"


def replay_hit(hit: Hit, watched_path: str, kept_state: list[Any]) -> Replay:
    """Replay the hit step fully recorded; the verdict from the replay's dump.

    A step compiled with XLA is replayed twice, with XLA and then without it (every op
    recorded as it ran; the newest run, where the debugger lands): ``reproduced`` when
    the one without holds a harmful non-finite value, ``xla_only`` when only the one
    with XLA does, and that one is then the replay named.

    The replays run in a thread of their own, which the calling thread waits for: the
    hit is handled inside an op callback, where TensorFlow calls no op callback for
    the ops built, so a replay traced there would record none of its graph.
    """
    outcome: list[Replay] = []

    def both() -> None:
        xla = _replay(hit, watched_path, kept_state, xla=True) if hit.site.compiled else None
        plain = _replay(hit, watched_path, kept_state, xla=False)
        outcome.append(plain if xla is None else _combined(plain, xla))

    thread = threading.Thread(target=both, name="tfdbg-tui-replay", daemon=True)
    thread.start()
    thread.join()
    return outcome[0] if outcome else Replay(None, None, None, "the replay did not finish")


def _combined(plain: Replay, xla: Replay) -> Replay:
    """The verdict of a compiled step's two replays, without XLA and with it."""
    if plain.verdict != REPRODUCED and xla.verdict == REPRODUCED:
        return Replay(xla.run_id, xla.run_path, XLA_ONLY, None, xla.run_id)
    return Replay(plain.run_id, plain.run_path, plain.verdict, None, xla.run_id)


def _replay(hit: Hit, watched_path: str, kept_state: list[Any], *, xla: bool) -> Replay:
    import tensorflow as tf

    from instrument import api
    from instrument.watch import gate

    step = hit.site.step_function
    if step is None:
        return Replay(None, None, None, "the step function or its batch was not kept")
    kept = hit.site.kept_batches.get(hit.replica or 0)
    values = kept.values() if kept is not None else []
    call = None
    if step[0] == "call":
        call = hit.site.kept_calls.call(hit.step) if hit.site.kept_calls is not None else None
        if call is None:
            return Replay(None, None, None, _not_kept(hit))
    restore = _snapshot(kept_state, step)
    logdir = os.path.dirname(watched_path.rstrip("/"))
    run_path = api.enable_for_replay(
        logdir,
        {
            ReplayOfMap.RUN: os.path.basename(watched_path.rstrip("/")),
            ReplayOfMap.STEP: hit.step,
            ReplayOfMap.SITE: hit.site.site_id,
            ReplayOfMap.CHECK: hit.check,
            ReplayOfMap.TENSOR: hit.tensor,
            **({ReplayOfMap.XLA: True} if xla else {}),
        },
    )
    error = None
    try:
        with gate.replay_tracing():
            if step[0] == "keras":
                model, data = step[1], step[2]
                replayed = _rebuilt(data, values)
                tf.function(model.train_step, jit_compile=xla)(replayed)
            else:
                assert call is not None
                tf.function(step[1], jit_compile=xla)(*call.args, **call.kwargs)
    except Exception as failure:  # noqa: BLE001 - the replay must not take the job down
        error = f"{type(failure).__name__}: {' '.join(str(failure).split())[:300]}"
    finally:
        api.disable_dump_debug_info()
        restore()
    return Replay(
        os.path.basename(run_path.rstrip("/")),
        run_path,
        _verdict(run_path) if error is None else None,
        error,
    )


def _rebuilt(data: Any, values: list[Any]) -> Any:
    """``data`` (a structure of placeholders and Python values) with its tensors
    replaced, in order, by ``values``."""
    import tensorflow as tf

    queue = list(values)
    return tf.nest.map_structure(lambda t: queue.pop(0) if tf.is_tensor(t) else t, data)


def _snapshot(kept_state: list[Any], step: Any) -> Any:
    """Take what a replay's forward pass writes (``kept_state``: the non-trainable
    variables; Keras' metrics); returns the function that puts it back."""
    variables = list(kept_state)
    if step[0] == "keras":
        variables += list(getattr(step[1], "metrics_variables", []))
    values = [(v, v.numpy()) for v in variables]

    def restore() -> None:
        for variable, value in values:
            variable.assign(value)

    return restore


def _verdict(run_path: str) -> str:
    import reader
    from reader.errors import DumpError

    try:
        with reader.DumpReader(run_path) as dump:
            return REPRODUCED if dump.root_cause() is not None else NOT_REPRODUCED
    except (DumpError, OSError):
        return NOT_REPRODUCED


def hit_error(hit: Hit, saved: Saved, replay: Replay | None, run_path: str) -> NonFiniteError:
    """The error the job stops with: the watched step and the check it failed, the
    replay's root cause (op, line) and verdict, and what was saved where."""
    if hit.check == CHECK_UPDATE:
        head = (
            f"watch: step {hit.step} of {hit.site.optimizer_name}: {hit.tensor} held NaN "
            "or infinity: the optimizer made it from finite gradients (an epsilon of 0, "
            "a division by a zero slot); nothing was written after that step, but its "
            "own update was (the state before it was not kept)"
        )
    else:
        head = (
            f"watch: step {hit.step} of {hit.site.optimizer_name}: {hit.tensor}"
            + (f" on replica {hit.replica}" if hit.replica is not None else "")
            + " held NaN or infinity; the update was not applied, and nothing was "
            "written after it"
        )
    lines = [head]
    cause = None
    state_label = (
        "the state after it" if hit.check == CHECK_UPDATE else f"the state before step {hit.step}"
    )
    if replay is not None and replay.run_path and replay.verdict in (REPRODUCED, XLA_ONLY):
        cause = first_alert_error(replay.run_path)
        how = (
            "only when compiled with XLA (xla_only): without XLA the step stayed finite"
            if replay.verdict == XLA_ONLY
            else replay.verdict
        )
        lines.append(f"replayed fully recorded ({how}): " + str(cause))
    elif replay is not None and replay.error:
        lines.append(f"the replay failed: {replay.error}")
    elif replay is not None:
        lines.append(
            f"replayed fully recorded: {replay.verdict}: the replay stayed finite "
            "(nondeterminism, a fault of the hardware, or an input the step read "
            f"that was not kept); the replay: {replay.run_path}"
        )
    else:
        lines.append("not replayed")
    if saved.state:
        lines.append(f"{state_label}: {saved.state}")
    if saved.batch:
        lines.append(f"its batch: {saved.batch}")
    if saved.why_not:
        lines.append(saved.why_not)
    lines.append(
        f"the watched run: {run_path} (open it with: tfdbg-tui "
        f"{os.path.dirname(run_path.rstrip('/'))})"
    )
    if cause is not None:
        return NonFiniteError(
            "\n".join(lines),
            run_path=cause.run_path,
            op_type=cause.op_type,
            tensor_name=cause.tensor_name,
            graph_name=cause.graph_name,
            step=hit.step,
            file=cause.file,
            line=cause.line,
        )
    return NonFiniteError("\n".join(lines), run_path=run_path, step=hit.step)
