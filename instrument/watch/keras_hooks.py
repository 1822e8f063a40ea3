"""Where the watch tier enters a program: Keras' optimizer `apply`, TensorFlow's
`GradientTape.gradient`, Keras' `Model.fit`, `tf.function`'s call, and one op
callback.

- ``keras.optimizers.Optimizer.apply`` (which ``apply_gradients`` calls, in ``fit``, an
  overridden ``train_step`` and custom loops alike) is replaced by a watched apply
  while a graph is traced (`Watcher.apply`); eager applies run as they are. A
  ``LossScaleOptimizer`` is left as it is: its inner optimizer's apply, which it calls
  only with finite unscaled gradients, is the watched one, so the loss scaler's
  skipped steps are not hits.
- ``LossScaleOptimizer.apply`` (its own) is traced as it is, its inner optimizer's
  watched apply inside it recording the loss scale, and a step it skips counted
  (`Watcher.loss_scaled_apply`).
- ``GradientTape.gradient`` notes its target, traced in a graph, as that graph's loss.
- ``Model.fit`` wraps its model's ``train_step`` once (an override included), so that
  the non-trainable variables a step writes are copied before it and a replay knows
  the model and the data.
- ``tf.function``'s ``__call__``, called eagerly, keeps a watched step function's
  arguments (a custom loop's batch) on the host, by reference (`Watcher.call_function`).
- TensorFlow's variable-write op wrappers hold an optimizer's writes while its
  watched update is traced (instrument/tf_internals/held_writes.py): the gate makes
  them only when the update's changes are finite.
- The op callback runs in the thread that called ``watch`` for every eager op (the
  call of each step): it handles a hit the host noted. It does nothing while a graph
  is traced.

All public API methods; `remove` puts them back.
"""

from __future__ import annotations

import functools
from typing import Any

from instrument.tf_internals import entry_points, held_writes
from instrument.tf_internals.graph_frames import compiled_with_xla
from instrument.watch import gate, held_update
from instrument.watch.watcher import Watcher

# Set on a model whose train_step is wrapped (its train_function is made again).
_WRAPPED = "_tfdbg_tui_watched_train_step"


class WatchHooks:
    """The patches of one watch, installed and removed together."""

    def __init__(self, watcher: Watcher) -> None:
        self._watcher = watcher
        self._saved: list[tuple[Any, str, Any]] = []
        self._callback: Any = None
        self._held = False

    def install(self) -> None:
        import keras
        import tensorflow as tf

        watcher = self._watcher
        original_apply = keras.optimizers.Optimizer.apply

        @functools.wraps(original_apply)
        def apply(optimizer: Any, grads: Any, trainable_variables: Any = None) -> Any:
            if gate.replaying():
                # The replay records the step's update too (a NaN the optimizer makes
                # is its root cause), its writes held and never made.
                held_update.replayed_update(
                    lambda: original_apply(optimizer, grads, trainable_variables)
                )
                return None
            if watcher.closed or trainable_variables is None:
                return original_apply(optimizer, grads, trainable_variables)
            if not tf.inside_function():
                watcher.say_once(
                    "eager",
                    "an optimizer update ran eagerly (outside any "
                    "tf.function): eager updates are not watched",
                )
                return original_apply(optimizer, grads, trainable_variables)
            grads, variables = list(grads), list(trainable_variables)
            pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
            if not pairs:
                return original_apply(optimizer, grads, trainable_variables)
            if tf.distribute.has_strategy():
                if _strategy_not_gated():
                    watcher.say_once(
                        "strategy",
                        "the step's updates run under a tf.distribute strategy the watch "
                        f"cannot gate ({type(tf.distribute.get_strategy()).__name__}, "
                        "or XLA on GPUs): they are not watched",
                    )
                    return original_apply(optimizer, grads, trainable_variables)
                watcher.apply_across_replicas(
                    optimizer, original_apply, [g for g, _ in pairs], [v for _, v in pairs]
                )
                return None

            def run() -> None:
                original_apply(optimizer, [g for g, _ in pairs], [v for _, v in pairs])

            watcher.apply(optimizer, run, [g for g, _ in pairs], [v for _, v in pairs])
            return None

        scaler_class = keras.optimizers.LossScaleOptimizer
        original_scaled_apply = scaler_class.apply

        @functools.wraps(original_scaled_apply)
        def scaled_apply(optimizer: Any, grads: Any, trainable_variables: Any = None) -> Any:
            if (
                gate.replaying()
                or watcher.closed
                or not tf.inside_function()
                or trainable_variables is None
                or (tf.distribute.has_strategy() and _strategy_not_gated())
            ):
                return original_scaled_apply(optimizer, grads, trainable_variables)
            if not optimizer.built:  # its scale is made when it is built
                optimizer.build(trainable_variables)
                optimizer.built = True
            return watcher.loss_scaled_apply(
                optimizer, original_scaled_apply, grads, trainable_variables
            )

        original_gradient = tf.GradientTape.gradient

        @functools.wraps(original_gradient)
        def gradient(tape: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
            if tf.inside_function() and tf.is_tensor(target):
                gate.note_loss(target)
            return original_gradient(tape, target, *args, **kwargs)

        original_fit = keras.Model.fit

        @functools.wraps(original_fit)
        def fit(model: Any, *args: Any, **kwargs: Any) -> Any:
            if not getattr(model, _WRAPPED, False) and not watcher.closed:
                train_step = model.train_step

                def watched_train_step(data: Any) -> Any:
                    return watcher.keras_train_step(model, data, train_step)

                model.train_step = watched_train_step
                setattr(model, _WRAPPED, True)
                model.train_function = None  # made again, with the watched step
            return original_fit(model, *args, **kwargs)

        function_class = type(tf.function(lambda: None))
        original_call = function_class.__call__

        @functools.wraps(original_call)
        def call(function: Any, *args: Any, **kwargs: Any) -> Any:
            if watcher.closed:
                return original_call(function, *args, **kwargs)
            if not tf.executing_eagerly():
                if tf.inside_function() and compiled_with_xla(function):
                    return watcher.call_compiled(function, original_call, args, kwargs)
                return original_call(function, *args, **kwargs)
            return watcher.call_function(function, original_call, args, kwargs)

        self._replace(keras.optimizers.Optimizer, "apply", apply)
        self._held = held_writes.install()
        self._replace(scaler_class, "apply", scaled_apply)
        self._replace(function_class, "__call__", call)
        self._replace(tf.GradientTape, "gradient", gradient)
        self._replace(keras.Model, "fit", fit)

        def on_op(
            op_type: str,
            inputs: Any,
            attrs: Any,
            outputs: Any,
            op_name: str | None = None,
            graph: Any = None,
        ) -> None:
            if graph is None:
                watcher.on_eager_op()

        self._callback = on_op
        entry_points.add_op_callback(on_op)

    def _replace(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, value)

    def remove(self) -> None:
        for owner, name, value in reversed(self._saved):
            if value is None:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        self._saved.clear()
        if self._held:
            held_writes.remove()
            self._held = False
        if self._callback is not None:
            try:
                entry_points.remove_op_callback(self._callback)
            except KeyError:
                pass  # removed from another thread than the one that added it
            self._callback = None


def _strategy_not_gated() -> bool:
    """Under a tf.distribute strategy: whether its step's updates cannot be gated (the
    apply runs in the cross-replica context, or the strategy runs no ``merge_call``:
    XLA on GPUs, multi-worker strategies)."""
    import tensorflow as tf

    return tf.distribute.in_cross_replica_context() or bool(
        tf.__internal__.distribute.strategy_supports_no_merge_call()
    )
