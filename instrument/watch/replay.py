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

A replay that reproduced the hit is then run once more on the same state and batch:
the values replay, recording FULL_TENSOR of its root cause's op and of the ops of its
inputs only (by name), into the replay's own directory
(`reader.format.REPLAY_VALUES_DIR`). The replay keeps every tensor's summary, the
values replay the values the report shows and the proof reruns, without storing every
tensor of a big step.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from instrument.non_finite import NonFiniteError, first_alert_error
from instrument.watch.gate import Hit
from instrument.watch.kept_calls import KEPT_BYTES, tensor_leaves
from reader import format as fmt
from reader import storage
from reader.contract import ReplayOfMap
from reader.contract.metadata import (
    CHECK_UPDATE,
    CHECK_VARIABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    XLA_ONLY,
)


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
    values_run_path: str | None = None
    """The values replay kept inside the replay's directory, or None."""
    values_error: str | None = None
    """Why a replay that reproduced the hit kept no values, or None."""


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
    variables and its optimizer's, or the optimizer's, the ones it trains and the
    others a custom loop's step writes (`WatchSite.state`)."""
    from instrument.watch.gate import variable_name

    step = hit.site.step_function
    variables: list[Any] = list(hit.site.variables) + list(hit.site.state)
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
        return Replay(
            xla.run_id,
            xla.run_path,
            XLA_ONLY,
            None,
            xla.run_id,
            values_error="FULL_TENSOR traces nothing inside a step compiled with XLA",
        )
    return Replay(
        plain.run_id,
        plain.run_path,
        plain.verdict,
        None,
        xla.run_id,
        plain.values_run_path,
        plain.values_error,
    )


def _replay(hit: Hit, watched_path: str, kept_state: list[Any], *, xla: bool) -> Replay:
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
    link = {
        ReplayOfMap.RUN: os.path.basename(watched_path.rstrip("/")),
        ReplayOfMap.STEP: hit.step,
        ReplayOfMap.SITE: hit.site.site_id,
        ReplayOfMap.CHECK: hit.check,
        ReplayOfMap.TENSOR: hit.tensor,
        **({ReplayOfMap.XLA: True} if xla else {}),
    }
    logdir = os.path.dirname(watched_path.rstrip("/"))
    replayed = _StepCall(step, values, call, kept_state, xla)
    run_path, error = replayed.recorded(logdir, link)
    replay = Replay(os.path.basename(run_path.rstrip("/")), run_path, None, error)
    if error is not None:
        return replay
    replay.verdict, ops = _verdict(run_path)
    if replay.verdict == REPRODUCED and not xla:
        if ops:
            values_logdir = storage.store_for(run_path).join(run_path, fmt.REPLAY_VALUES_DIR)
            values_path, failed = replayed.recorded(values_logdir, link, values=ops)
            replay.values_error = (
                f"the values replay failed: {failed}" if failed else _values_missing(run_path)
            )
            replay.values_run_path = None if replay.values_error else values_path
        else:
            replay.values_error = "the root cause is not a graph op of the step"
    return replay


@dataclass
class _StepCall:
    """The hit step's call, made again on its kept batch and the state before it."""

    step: Any
    batch: list[Any]
    call: Any
    kept_state: list[Any]
    xla: bool

    def recorded(
        self, logdir: str, link: dict[str, Any], values: list[str] | None = None
    ) -> tuple[str, str | None]:
        """Call the step once under a recording of its own (`api.enable_for_replay`;
        with ``values``, the values replay of those ops); put back what its forward
        pass wrote. Returns the run's path and why the call failed, or None."""
        import tensorflow as tf

        from instrument import api
        from instrument.watch import gate

        restore = _snapshot(self.kept_state, self.step)
        run_path = api.enable_for_replay(logdir, link, values)
        error = None
        try:
            with gate.replay_tracing():
                if self.step[0] == "keras":
                    model, data = self.step[1], self.step[2]
                    tf.function(model.train_step, jit_compile=self.xla)(_rebuilt(data, self.batch))
                else:
                    tf.function(self.step[1], jit_compile=self.xla)(
                        *self.call.args, **self.call.kwargs
                    )
        except Exception as failure:  # noqa: BLE001 - the replay must not take the job down
            error = f"{type(failure).__name__}: {' '.join(str(failure).split())[:300]}"
        finally:
            api.disable_dump_debug_info()
            restore()
        return run_path, error


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


def _verdict(run_path: str) -> tuple[str, list[str]]:
    """The replay's verdict and, when it reproduced at a graph op, the names of that op
    and of the ops of its inputs (what its values replay keeps)."""
    import reader
    from reader.errors import DumpError

    try:
        with reader.DumpReader(run_path) as dump:
            cause = dump.root_cause()
            if cause is None:
                return NOT_REPRODUCED, []
            if cause.op is None:
                return REPRODUCED, []
            names = [cause.op.name]
            for ref, _ in cause.inputs:
                names.append(_op_name(dump, ref))
            return REPRODUCED, list(dict.fromkeys(names))
    except (DumpError, OSError):
        return NOT_REPRODUCED, []


def _op_name(dump: Any, ref: Any) -> str:
    """The name of the op that made the input ``ref`` (`reader.model.TensorRef`)."""
    from reader.errors import DumpError

    fallback = str(ref.name).rsplit(":", 1)[0]
    if ref.op_id is None:
        return fallback
    try:
        return str(dump.op(ref.op_id).name)
    except DumpError:
        return fallback


def _values_missing(run_path: str) -> str | None:
    """Why the replay at ``run_path`` has no values of its root cause (read as every
    reader reads them: `culprit_values`), or None when it has them."""
    import reader
    from reader.analysis.diagnosis.culprit_values import culprit_values
    from reader.errors import DumpError

    try:
        with reader.DumpReader(run_path) as dump:
            cause = dump.root_cause()
            values = None if cause is None else culprit_values(dump, cause)
    except (DumpError, OSError) as error:
        return f"the replay cannot be read back: {error}"
    if values is None or not values.kept:
        return values.missing if values is not None else "the replay has no root cause"
    return None


def hit_error(hit: Hit, saved: Saved, replay: Replay | None, run_path: str) -> NonFiniteError:
    """The error the job stops with: the watched step and the check it failed, the
    replay's root cause (op, line) and verdict, and what was saved where."""
    made_by_optimizer = (
        "the optimizer made it from finite gradients (an epsilon of 0, a division by a "
        "zero slot, a learning rate that is not finite)"
    )
    if hit.check == CHECK_UPDATE:
        head = (
            f"watch: step {hit.step} of {hit.site.optimizer_name}: {hit.tensor} held NaN "
            f"or infinity: {made_by_optimizer}; the update was not applied, and nothing "
            "was written after it"
        )
    elif hit.check == CHECK_VARIABLE:
        head = (
            f"watch: step {hit.step} of {hit.site.optimizer_name}: {hit.tensor} held NaN "
            f"or infinity: {made_by_optimizer}, in a write the watch did not hold "
            "back; nothing was written after that step, but its own update was (the "
            "state before it was not kept)"
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
        "the state after it" if hit.check == CHECK_VARIABLE else f"the state before step {hit.step}"
    )
    if replay is not None and replay.run_path and replay.verdict in (REPRODUCED, XLA_ONLY):
        cause = first_alert_error(replay.run_path)
        how = (
            "only when compiled with XLA (xla_only): without XLA the step stayed finite"
            if replay.verdict == XLA_ONLY
            else replay.verdict
        )
        lines.append(f"replayed fully recorded ({how}): " + str(cause))
        if replay.values_run_path:
            lines.append(
                f"the values of {cause.op_type}'s inputs and output: {replay.values_run_path}"
            )
        elif replay.values_error:
            lines.append(f"no values of {cause.op_type} were kept: {replay.values_error}")
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
