"""The watch tier on the host: the watched sites, the thread that reads them, and what
happens at a hit.

`Watcher` owns the watched run (a dump with no per-op records: its `watch_site`,
`watch_steps` and `watch_hit` records, docs/format.md). Its thread reads the sticky
flag, each site's step counter and the rows of its ring every `POLL_INTERVAL_S` and
writes them; it never runs in the training thread and adds no sync to the program's
steps. When the flag is set it notes the hit; the training thread's next eager op (the
call of the next step) handles it there (`on_eager_op`): the state and batch saved, the
step replayed fully recorded (instrument/watch/replay.py), then by default
`NonFiniteError`.
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from instrument.non_finite import NonFiniteError
from instrument.watch import gate, step_state
from instrument.watch.kept_calls import KeptCalls
from reader.contract import WatchHitRecord, WatchSiteRecord, WatchStepsRecord
from reader.contract.metadata import CHECK_GRADIENT, CHECK_LOSS, CHECK_UPDATE, CHECK_VARIABLE

logger = logging.getLogger("instrument")

# How often the host reads the flag and the rows: the lag of the stop after a hit, and
# (with `gate.RING_STEPS`) how fast a program may step before rows are lost.
POLL_INTERVAL_S = 0.5

# What a hit does (`instrument.watch`'s ``on_hit``).
ON_HIT_STOP = "stop"  # replay, save, raise NonFiniteError
ON_HIT_SKIP = "skip"  # replay, save, skip the step and watch on (up to max_replays)
ON_HIT_STOP_WITHOUT_REPLAY = "stop_without_replay"  # save, raise
ON_HIT = (ON_HIT_STOP, ON_HIT_SKIP, ON_HIT_STOP_WITHOUT_REPLAY)


@dataclass
class StepOfKeras:
    """A Keras model's ``train_step`` being traced, and the data it was called with."""

    model: Any
    data: Any


class Watcher:
    """The watch tier of one process (`instrument.watch`)."""

    def __init__(
        self,
        writer: Any,
        *,
        on_hit: str,
        max_replays: int,
        hold_update: bool = True,
        poll_interval_s: float = POLL_INTERVAL_S,
    ) -> None:
        self.writer = writer
        self.hold_update = hold_update
        self.on_hit = on_hit
        self.max_replays = max_replays
        self.replays = 0
        self.flags: gate.WatchFlags | None = None
        self.sites: list[gate.WatchSite] = []
        self._site_of: weakref.WeakKeyDictionary[Any, gate.WatchSite] = weakref.WeakKeyDictionary()
        # Per graph: the Keras train_step traced in it.
        self._keras_steps: weakref.WeakKeyDictionary[Any, dict[int, StepOfKeras]] = (
            weakref.WeakKeyDictionary()
        )
        # Per tf.function: the sites its calls step (their batches kept on the host); per
        # thread, the eager calls of tf.functions under way (`call_function`).
        self._sites_of_function: weakref.WeakKeyDictionary[Any, list[gate.WatchSite]] = (
            weakref.WeakKeyDictionary()
        )
        self._calls = threading.local()
        # id(inner optimizer) -> the LossScaleOptimizer around it, once its apply traced.
        self._scalers: dict[int, Any] = {}
        self._lock = threading.RLock()
        self._rows_read: dict[int, int] = {}
        self._said: set[str] = set()
        self.hit: gate.Hit | None = None
        self._handling = False
        self.closed = False
        # A hit stopped the job: the flag stays set, and is not a new hit.
        self.stopped = False
        self._wake = threading.Event()
        self._thread: threading.Thread | None = threading.Thread(
            target=self._poll_loop, name="tfdbg-tui-watch", args=(poll_interval_s,), daemon=True
        )
        self._thread.start()

    # -- tracing (the step's graph) -----------------------------------------------------

    def _flags(self) -> gate.WatchFlags:
        with self._lock:
            if self.flags is None:
                self.flags = gate.make_flags()
            return self.flags

    def keras_train_step(self, model: Any, data: Any, train_step: Any) -> Any:
        """Trace a Keras model's ``train_step(data)``, its non-trainable variables (batch
        statistics, seed generators) copied first, to be restored if the step is
        skipped and for a replay."""
        import tensorflow as tf

        if gate.replaying() or not tf.inside_function():
            return train_step(data)
        graph = tf.compat.v1.get_default_graph()
        replica = gate.traced_replica()
        if replica is None:
            flags = self._flags()
            state = [v for v in model.variables if not v.trainable]
            step_state.keep(flags.kept_state, state)
            step_state.copy_before_step(flags.kept_state, state, flags.hit_step())
        # Under a strategy, each replica's step is traced into the one graph, in turn.
        self._keras_steps.setdefault(graph, {})[replica or 0] = StepOfKeras(model, data)
        return train_step(data)

    def apply(self, optimizer: Any, apply: Any, grads: list[Any], variables: list[Any]) -> None:
        """Trace a watched ``optimizer.apply(grads, variables)``."""
        import tensorflow as tf

        flags = self._flags()
        site = self._site(optimizer, variables)
        graph = tf.compat.v1.get_default_graph()
        batch, names = self._step_function(site, graph)
        if batch and site.compiled:
            # XLA cannot write a variable of another shape: the batch is kept by the
            # graph that calls the compiled step (`call_compiled`).
            self._calls.deferred = [*getattr(self._calls, "deferred", []), (site, names)]
            batch = []
        if batch:
            gate.keep_batch(site, batch, names)
        if site.step_function is not None and site.step_function[0] == "call":
            self._keep_written_state(flags, site, graph)
        self._say_legacy_random(graph)
        gate.guarded_apply(
            flags, site, apply, grads, variables, batch, self.say_once, self.hold_update
        )

    def _say_legacy_random(self, graph: Any) -> None:
        """Say once when the step draws from a legacy stateful random op, whose state
        cannot be put back for a replay."""
        ops = step_state.legacy_random_ops(graph)
        if ops:
            self.say_once(
                "legacy_random",
                f"the watched step draws from TensorFlow's legacy stateful random ops "
                f"({', '.join(ops)}: tf.random.normal, tf.random.uniform, tf.nn.dropout "
                "and the like), whose state is the kernel's own: a replay of a hit step "
                "draws other values, and may not reproduce it (a tf.random.Generator or "
                "Keras' layers keep theirs in variables, which the watch puts back)",
            )

    def _keep_written_state(self, flags: gate.WatchFlags, site: gate.WatchSite, graph: Any) -> None:
        """Keep what a custom loop's step writes besides its optimizer's update
        (`step_state.written_state`), to be copied after each good update."""
        # Not the state: the variables the optimizer trains and its own (the gate's).
        state, size = step_state.written_state(graph, site.variables)
        if size > step_state.STATE_LIMIT_BYTES:
            self.say_once(
                "state_too_large",
                f"the watched step writes {size >> 20} MiB of variables besides its "
                "optimizer's update: they are not kept, so a skipped step leaves them "
                "as it wrote them, and the saved state and a replay start from there",
            )
            return
        step_state.keep(flags.kept_state, state)
        known = {id(v) for v in site.state}
        site.state.extend(v for v in state if id(v) not in known)

    def loss_scaled_apply(
        self, optimizer: Any, apply: Any, grads: Any, trainable_variables: Any
    ) -> Any:
        """Trace a ``LossScaleOptimizer``'s apply (``apply``: its own): its inner
        optimizer's watched apply, made while tracing it, records the loss scale in
        its rows, and a step the scaler skips is counted (`gate.count_skipped_step`;
        under a ``MirroredStrategy``, once, in a ``merge_call`` after every replica's
        apply: Keras' scaler decides in one for all of them)."""
        import tensorflow as tf

        scale_before = tf.identity(optimizer.dynamic_scale)
        # Not per thread: a strategy traces the inner apply in its replicas' threads.
        self._scalers[id(optimizer.inner_optimizer)] = optimizer
        result = apply(optimizer, grads, trainable_variables)
        site = self._site_of.get(optimizer.inner_optimizer)
        if site is None or site.loss_scale is None:
            return result
        if tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context():

            def count(distribution: Any, before: Any) -> None:
                gate.count_skipped_step(site, distribution.experimental_local_results(before)[0])

            tf.distribute.get_replica_context().merge_call(count, args=(scale_before,))
        else:
            gate.count_skipped_step(site, scale_before)
        return result

    def call_compiled(self, function: Any, call: Any, args: Any, kwargs: Any) -> Any:
        """A call, while a graph is traced, of a tf.function compiled with XLA: a
        watched step traced inside it has its batch (the call's tensors) kept here,
        after the call, in the calling graph (`gate.keep_batch_after_call`)."""
        import tensorflow as tf

        outer = getattr(self._calls, "deferred", [])
        self._calls.deferred = []
        try:
            result = call(function, *args, **kwargs)
            requests = self._calls.deferred
        finally:
            self._calls.deferred = outer
        flat = [
            t
            for t in tf.nest.flatten((args, kwargs))
            if tf.is_tensor(t) and t.dtype not in (tf.resource, tf.variant)
        ]
        flags = self.flags
        for site, names in requests:
            if flags is None or len(flat) != len(names):
                continue
            gate.keep_batch(site, flat, names)
            gate.keep_batch_after_call(flags, site, site.kept_batches[0], flat)
        return result

    def apply_across_replicas(
        self, optimizer: Any, original_apply: Any, grads: list[Any], variables: list[Any]
    ) -> None:
        """Trace a watched ``optimizer.apply(grads, variables)`` in a replica's context
        (a ``MirroredStrategy``'s step): this replica's check, then, in a ``merge_call``,
        the update of every replica gated on all of theirs."""
        import tensorflow as tf

        flags = self._flags()
        site = self._site(optimizer, variables)
        context = tf.distribute.get_replica_context()
        replica = gate.traced_replica() or 0
        site.replicas = max(site.replicas, context.num_replicas_in_sync)
        graph = tf.compat.v1.get_default_graph()
        batch, names = self._step_function(site, graph, replica)
        if batch:
            gate.keep_batch(site, batch, names, replica)
            gate.keep_batch_in_graph(flags, site.kept_batches[replica], batch)
        self._say_legacy_random(graph)
        loss = gate.loss_of(graph)
        norms, first_bad = gate.local_check(loss, grads)

        def across(
            distribution: Any, norms: Any, first_bad: Any, grads: Any, variables: Any
        ) -> None:
            def each(grads: Any, variables: Any) -> None:
                original_apply(optimizer, grads, variables)

            def apply() -> None:
                distribution.extended.call_for_each_replica(each, args=(grads, variables))

            gate.guarded_apply_across_replicas(
                flags,
                site,
                distribution,
                norms,
                first_bad,
                apply,
                variables,
                self.say_once,
                self.hold_update,
            )

        context.merge_call(across, args=(norms, first_bad, grads, variables))

    def _site(self, optimizer: Any, variables: list[Any]) -> gate.WatchSite:
        """The watched site of ``optimizer``, made (and its record written) at its first
        trace."""
        if not optimizer.built:
            optimizer.build(variables)
            optimizer.built = True
        with self._lock:
            site = self._site_of.get(optimizer)
            if site is None:
                scaler = self._scalers.get(id(optimizer))
                scale = (
                    scaler.dynamic_scale
                    if scaler is not None and scaler.inner_optimizer is optimizer
                    else None
                )
                site = gate.make_site(len(self.sites), optimizer, variables, scale)
                self.sites.append(site)
                self._site_of[optimizer] = site
                self.writer.add_watch_record(
                    WatchSiteRecord,
                    {
                        WatchSiteRecord.ID: site.site_id,
                        WatchSiteRecord.OPTIMIZER: site.optimizer_name,
                        WatchSiteRecord.COLUMNS: site.columns,
                        WatchSiteRecord.RING: gate.RING_STEPS,
                    },
                )
            return site

    def _step_function(
        self, site: gate.WatchSite, graph: Any, replica: int = 0
    ) -> tuple[list[Any], list[str]]:
        """What a replay of ``site``'s step calls, noted on ``site``, and the batch
        tensors to keep (with names)."""
        import tensorflow as tf

        from instrument.tf_internals.graph_frames import compiled_with_xla, traced_call

        scope = graph
        while scope is not None:
            keras = self._keras_steps.get(scope, {}).get(replica)
            if keras is not None:
                flat = [t for t in tf.nest.flatten(keras.data) if tf.is_tensor(t)]
                site.step_function = ("keras", keras.model, keras.data)
                site.compiled = getattr(keras.model, "jit_compile", False) is True
                return flat, [f"data[{i}]" for i in range(len(flat))]
            outer = getattr(scope, "outer_graph", None)
            if outer is None or not getattr(outer, "building_function", False):
                break
            scope = outer
        call = traced_call(scope)
        calls = getattr(self._calls, "stack", None)
        if call is None or not calls:
            self.say_once(
                "no_step_function",
                "the watched step's function was not found (it was not called "
                "eagerly): a hit stops the job, but the step cannot be replayed",
            )
            return [], []
        function, args, kwargs = call
        if any(
            tf.is_tensor(t) and t.dtype in (tf.resource, tf.variant)
            for t in tf.nest.flatten((args, kwargs))
        ):
            self.say_once(
                "iterator_argument",
                "the watched step takes an iterator or a "
                "dataset: its batch cannot be kept, and the step not replayed",
            )
            site.step_function = None
            return [], []
        site.step_function = ("call", function)
        # The eager call being traced: from now on its calls keep their arguments as
        # this site's steps, this one (the site's next step) first.
        outer, call_args, call_kwargs = calls[0]
        site.compiled = compiled_with_xla(outer)
        sites = self._sites_of_function.setdefault(outer, [])
        if site not in sites:
            sites.append(site)
            if site.kept_calls is None:
                site.kept_calls = KeptCalls()
            site.kept_calls.keep(call_args, call_kwargs)
        return [], []

    def call_function(self, function: Any, call: Any, args: Any, kwargs: Any) -> Any:
        """An eager call of the tf.function ``function`` (``call``: tf.function's own
        ``__call__``): its arguments kept as the next step of each site it steps."""
        sites = self._sites_of_function.get(function)
        if sites:
            for site in sites:
                if site.kept_calls is not None and site.kept_calls.keep(args, kwargs):
                    self._wake.set()  # the reader lets go of the fine ones
        stack = getattr(self._calls, "stack", None)
        if stack is None:
            stack = self._calls.stack = []
        stack.append((function, args, kwargs))
        try:
            return call(function, *args, **kwargs)
        finally:
            stack.pop()

    def say_once(self, key: str, message: str) -> None:
        """Say once, as a warning notice of the watched run and on the logger."""
        with self._lock:
            if key in self._said:
                return
            self._said.add(key)
        logger.warning("tfdbg-tui watch: %s", message)
        self.writer.add_notice("watch", message)

    # -- the host ------------------------------------------------------------------------

    def _poll_loop(self, interval_s: float) -> None:
        while not self.closed:
            self._wake.wait(interval_s)
            self._wake.clear()
            if self.closed:
                break
            try:
                self.poll()
            except Exception as error:  # noqa: BLE001 - the job must never die of it
                logger.warning("tfdbg-tui watch: reading the watched steps failed: %s", error)

    def poll(self) -> None:
        """Read the flag and the new rows of every site; note a hit."""
        with self._lock:
            flags, sites = self.flags, list(self.sites)
        if flags is None:
            return
        self.poll_rows()
        # A hit stopped the job: its flag stays set, and is not a new hit.
        if self.hit is not None or self._handling or self.stopped:
            return
        state = [int(v) for v in flags.state.numpy()]
        hit_step = state[gate.FLAG_STEP]
        if hit_step < 0:
            # The steps counted before the flag was read passed the check.
            for site in sites:
                if site.kept_calls is not None:
                    site.kept_calls.fine_before(self._rows_read.get(site.site_id, 0))
            return
        site = sites[state[gate.FLAG_SITE]]
        check, variable = gate.check_of_column(state[gate.FLAG_COLUMN], len(site.variable_names))
        replica = (
            state[gate.FLAG_REPLICA]
            if site.replicas > 1 and check in (CHECK_LOSS, CHECK_GRADIENT)
            else None
        )
        hit = gate.Hit(site, hit_step, check, _what_failed(site, check, variable), replica)
        self.writer.add_watch_record(WatchHitRecord, self._hit_fields(hit))
        self.hit = hit

    def _read_rows(self, site: gate.WatchSite) -> None:
        done = self._rows_read.get(site.site_id, 0)
        steps = int(site.steps.numpy())
        if steps <= done:
            return
        first = max(done, steps - gate.RING_STEPS)
        # Only the new rows are read (the ring is 4,096 rows: 6.5 MB for 200 variables).
        slots = np.arange(first, steps, dtype=np.int64) % gate.RING_STEPS
        rows = site.ring.sparse_read(slots).numpy()
        self.writer.add_watch_record(
            WatchStepsRecord,
            {
                WatchStepsRecord.SITE: site.site_id,
                WatchStepsRecord.FIRST: first,
                WatchStepsRecord.LOST: first - done,
                WatchStepsRecord.ROWS: rows.astype(
                    WatchStepsRecord.column(WatchStepsRecord.ROWS)
                ).tobytes(),
                WatchStepsRecord.COLUMNS: rows.shape[1],
            },
        )
        self._rows_read[site.site_id] = steps

    def _hit_fields(self, hit: gate.Hit) -> dict[str, Any]:
        return {
            WatchHitRecord.SITE: hit.site.site_id,
            WatchHitRecord.STEP: hit.step,
            WatchHitRecord.CHECK: hit.check,
            WatchHitRecord.TENSOR: hit.tensor,
            **({} if hit.replica is None else {WatchHitRecord.REPLICA: hit.replica}),
        }

    def on_eager_op(self) -> None:
        """In the training thread, at each eager op: handle a hit the host noted."""
        hit = self.hit
        if hit is None or self._handling or self.closed:
            return
        self._handling = True
        try:
            self._handle(hit)
        finally:
            self._handling = False

    def _handle(self, hit: gate.Hit) -> None:
        from instrument.watch import replay

        self.poll_rows()
        run_path = self.writer.path
        saved = replay.save_state_and_batch(hit, run_path)
        outcome = None
        # A variable found non-finite after an update wrote it has no state before that
        # update to replay from.
        if (
            self.on_hit != ON_HIT_STOP_WITHOUT_REPLAY
            and self.replays < self.max_replays
            and hit.check != CHECK_VARIABLE
        ):
            self.replays += 1
            kept = [v for v, _ in self.flags.kept_state] if self.flags else []
            outcome = replay.replay_hit(hit, run_path, kept)
        fields = {
            **self._hit_fields(hit),
            WatchHitRecord.SAVED_STATE: saved.state,
            WatchHitRecord.SAVED_BATCH: saved.batch,
            WatchHitRecord.REPLAY_RUN: outcome.run_id if outcome else None,
            WatchHitRecord.XLA_REPLAY_RUN: outcome.xla_run_id if outcome else None,
            WatchHitRecord.VERDICT: outcome.verdict if outcome else None,
            WatchHitRecord.REPLAY_ERROR: outcome.error if outcome else None,
        }
        self.writer.add_watch_record(WatchHitRecord, fields)
        self.writer.flush()
        error = replay.hit_error(hit, saved, outcome, run_path)
        if self.on_hit == ON_HIT_SKIP and self.replays < self.max_replays:
            logger.warning("tfdbg-tui watch: %s", error)
            self._rearm()
            return
        self.hit = None
        self.closed = self.stopped = True
        raise error

    def poll_rows(self) -> None:
        with self._lock:
            sites = list(self.sites)
        for site in sites:
            self._read_rows(site)

    def _rearm(self) -> None:
        """Skip the hit step and watch on: the flag cleared, the hit forgotten."""
        assert self.flags is not None
        self.flags.state.assign(gate.NO_HIT)
        self.hit = None

    def close(self, *, handle_hit: bool = True) -> None:
        """Read what is left and close the watched run.

        A hit the host had not read yet (a job that ended before the next read) is
        handled here: its state and batch saved and its step replayed; with
        ``handle_hit`` its `NonFiniteError` is raised once the run is closed.
        """
        if self._thread is None:
            return
        self.closed = True
        self._wake.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None
        error: NonFiniteError | None = None
        try:
            # A job the watch stopped still has its flag set: that is not a new hit.
            if self.stopped:
                self.poll_rows()
            else:
                self.poll()
            if self.hit is not None and not self._handling:
                self._handling = True
                try:
                    self._handle(self.hit)
                except NonFiniteError as raised:
                    error = raised
        except Exception as failure:  # noqa: BLE001 - closing at exit must not fail
            logger.warning("tfdbg-tui watch: reading the last watched steps failed: %s", failure)
        self.writer.close()
        if error is not None:
            if not handle_hit:
                logger.warning("tfdbg-tui watch: %s", error)
                return
            raise error


def _what_failed(site: gate.WatchSite, check: str, variable: int | None) -> str:
    names = site.variable_names
    if check == CHECK_LOSS:
        return "the loss"
    name = names[variable] if variable is not None and 0 <= variable < len(names) else None
    if check == CHECK_GRADIENT:
        return f"the gradient of {name}" if name else "a gradient"
    if check == CHECK_UPDATE:
        return f"the update of {name}" if name else "an update"
    return f"{name} after the update" if name else "a variable after the update"


__all__ = ["NonFiniteError", "Watcher", "ON_HIT"]
