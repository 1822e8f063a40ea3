"""Variable writes held back while an update is traced, and written (or not) after.

While a `HeldWrites` is open on a graph being traced, a write to a resource variable
made in that graph (``AssignVariableOp``, ``AssignAddVariableOp``,
``AssignSubVariableOp``: every ``tf.Variable.assign``, ``assign_add`` and
``assign_sub``, Keras' variables' and optimizers' included) is not built: it is held.
A later read of that variable in the same graph gets the value the held writes give
it, computed then as a tensor (the value assigned, or the value before plus or minus
the changes), so the traced computation is the same, op for op, as the one that
writes in place. `write_held` then builds the writes, where the caller wants them (in
a ``cond`` on a check of the changes, say): until then nothing was written.

What it costs at run time: a variable no later op of the update reads (the weights,
which an optimizer writes last) is written in place by `write_held`, as the update
would have written it; one the update reads after writing it (Adam's moments) adopts
the value computed for that read (``AssignVariableOp`` takes the buffer of a value no
other op uses; callgrind counts no copy). That value is a buffer of its own, not the
variable's: the same bytes are read and written, but on a CPU whose caches held the
variable, a write to other memory costs more time than one in place.

What it cannot hold, and says so by `WriteConflict` (the caller then traces the update
as it is): a sparse write (``ResourceScatter*``) or read (``ResourceGather``) of a
variable whose value it holds, and a write from a graph nested in the held one (a
``cond`` of the update's own) into such a variable. Sparse writes and writes from nested
graphs into variables it does not hold are made as they come; `made_as_they_came`
counts them, and `changes` has them, measured where they were made, if the caller
asked (``on_nested_change``).

The patch: the generated op wrappers ``gen_resource_variable_ops.read_variable_op``,
``assign_variable_op``, ``assign_add_variable_op``, ``assign_sub_variable_op`` and the
``resource_scatter_*`` and ``resource_gather*`` ones are replaced while `install` is in
effect (by the functions below, which pass every call through unless a `HeldWrites`
is open on the caller's graph or one it is nested in); ``resource_variable_ops`` calls
them through that module's attributes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from instrument.tf_internals import debug_once

_READ = "read_variable_op"
_WRITES = {
    "assign_variable_op": "assign",
    "assign_add_variable_op": "add",
    "assign_sub_variable_op": "sub",
}
_SPARSE_WRITE_PREFIX = "resource_scatter_"
_SPARSE_READ_PREFIX = "resource_gather"

_lock = threading.Lock()
_installs = 0
_originals: dict[str, Callable[..., Any]] = {}
_open: dict[int, HeldWrites] = {}  # id(graph) -> the HeldWrites open on it


class WriteConflict(Exception):
    """A variable access `HeldWrites` cannot hold (module docstring)."""


def install() -> bool:
    """Put the patched op wrappers in (counted: as many `remove` calls take them out).
    False (and a debug notice) when TensorFlow's module lacks one of them."""
    global _installs
    from tensorflow.python.ops import gen_resource_variable_ops as ops

    names = [_READ, *_WRITES] + [
        name
        for name in dir(ops)
        if (name.startswith(_SPARSE_WRITE_PREFIX) or name.startswith(_SPARSE_READ_PREFIX))
        and not name.endswith("_eager_fallback")
        and callable(getattr(ops, name))
    ]
    missing = [name for name in [_READ, *_WRITES] if not callable(getattr(ops, name, None))]
    if missing:
        debug_once(
            "held_writes",
            "tfdbg-tui: gen_resource_variable_ops lacks %s; watched updates are written "
            "before they are checked",
            ", ".join(missing),
        )
        return False
    with _lock:
        if _installs == 0:
            for name in names:
                _originals[name] = getattr(ops, name)
                setattr(ops, name, _patched(name, _originals[name]))
        _installs += 1
    return True


def remove() -> None:
    global _installs
    from tensorflow.python.ops import gen_resource_variable_ops as ops

    with _lock:
        if _installs == 0:
            return
        _installs -= 1
        if _installs == 0:
            for name, original in _originals.items():
                setattr(ops, name, original)
            _originals.clear()


def installed() -> bool:
    return _installs > 0


def _patched(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    if name == _READ:

        def read(resource: Any, dtype: Any, name: str | None = None) -> Any:
            held = _held_for_graph()
            if held is not None:
                value = held[0].pending_value(resource)
                if value is not None:
                    return value
            return original(resource, dtype, name=name)

        return read
    if name in _WRITES:
        kind = _WRITES[name]

        def write(resource: Any, value: Any, name: str | None = None, **kwargs: Any) -> Any:
            held = _held_for_graph()
            if held is None:
                return original(resource, value, name=name, **kwargs)
            writes, nested = held
            if nested:
                return writes.nested_write(original, resource, value, kind, name, kwargs)
            return writes.hold(resource, value, kind)

        return write

    def sparse(resource: Any, *args: Any, **kwargs: Any) -> Any:
        held = _held_for_graph()
        if held is not None:
            writes, _ = held
            if writes.holds(resource):
                raise WriteConflict(
                    f"{name} of a variable whose new value is held (a sparse access after "
                    "a dense write in one update)"
                )
            if name.startswith(_SPARSE_WRITE_PREFIX):
                writes.made_as_they_came += 1
        return original(resource, *args, **kwargs)

    return sparse


def _held_for_graph() -> tuple[HeldWrites, bool] | None:
    """The `HeldWrites` open on the graph being built or one it is nested in, and
    whether it is nested; None when there is none (nearly always: the quick path)."""
    if not _open:
        return None
    from tensorflow.python.framework import ops

    graph = ops.get_default_graph()
    nested = False
    while graph is not None:
        held = _open.get(id(graph))
        if held is not None:
            return held, nested
        graph = getattr(graph, "outer_graph", None)
        nested = True
    return None


class HeldWrites:
    """Hold the variable writes made in the current graph while open (module docstring).

    ``measured``: the id of each measured variable's handle (each replica's copy under a
    strategy), and the index the caller knows it by; the change each write makes to one
    of them (the value added or subtracted, or the value assigned less the value
    before) is kept in `changes`, for the caller's check and norms.
    ``on_nested_change`` is called with (index, id of the handle, change) for a write
    into a measured variable from a graph nested in the held one, inside that graph (it
    was made as it came).
    """

    def __init__(
        self,
        measured: dict[int, int],
        on_nested_change: Callable[[int, int, Any], None] | None = None,
    ) -> None:
        self._measured = measured
        self._on_nested_change = on_nested_change
        self._pending: dict[int, _Held] = {}  # id(handle) -> its held writes
        self.changes: list[tuple[int, int, Any]] = []
        """(index, id of the handle, change) of each held write into a measured
        variable, in the order made."""
        self.made_as_they_came = 0
        """Writes not held: sparse ones, and those from graphs nested in the held one."""
        self._graph: Any = None

    def __enter__(self) -> HeldWrites:
        from tensorflow.python.framework import ops

        if not installed():
            raise WriteConflict("the held writes' op wrappers are not installed")
        self._graph = ops.get_default_graph()
        with _lock:
            if id(self._graph) in _open:
                raise WriteConflict("writes are already held in this graph")
            _open[id(self._graph)] = self
        return self

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _open.pop(id(self._graph), None)

    def holds(self, handle: Any) -> bool:
        """Whether the update has a held write of ``handle``'s variable."""
        return id(handle) in self._pending

    def pending_value(self, handle: Any) -> Any:
        """The value a read of ``handle`` gets in the held update: its held writes
        applied to the value before them (computed here, in the held graph, once), or
        None when the update has not written it."""
        entry = self._pending.get(id(handle))
        if entry is None:
            return None
        if entry.changes:
            with self._graph.as_default():
                entry.materialize(_originals[_READ])
        return entry.base

    def hold(self, handle: Any, value: Any, kind: str) -> Any:
        """A write in the held graph: held (not computed: a value no later op of the
        update reads is written in place, by the write `write_held` builds), its change
        kept where the variable is measured. Returns an op of the update's that made
        the written value, for the control dependencies callers put on a write."""
        import tensorflow as tf

        value = tf.convert_to_tensor(value)
        entry = self._pending.get(id(handle))
        if entry is None:
            entry = self._pending[id(handle)] = _Held(handle, value.dtype)
        change = value
        if kind == "assign":
            change = None
            if id(handle) in self._measured:
                before = self.pending_value(handle)
                if before is None:
                    before = _originals[_READ](handle, value.dtype)
                change = value - before
            entry.base, entry.changes = value, []
        else:
            entry.changes.append((kind, value))
        index = self._measured.get(id(handle))
        if index is not None and change is not None:
            self.changes.append((index, id(handle), change))
        return value.op

    def nested_write(
        self,
        original: Callable[..., Any],
        handle: Any,
        value: Any,
        kind: str,
        name: str | None,
        kwargs: dict[str, Any],
    ) -> Any:
        """A write from a graph nested in the held one: made as it comes, unless the
        variable has a held value (`WriteConflict`: the nested graph's write and the
        held value's would race)."""
        if self.holds(handle):
            raise WriteConflict(
                "a write from a cond or loop of the update's own into a variable the "
                "update wrote before it"
            )
        self.made_as_they_came += 1
        index = self._measured.get(id(handle))
        if index is not None and self._on_nested_change is not None:
            import tensorflow as tf

            value = tf.convert_to_tensor(value)
            if kind == "assign":
                change = value - _originals[_READ](handle, value.dtype)
            else:
                change = value
            self._on_nested_change(index, id(handle), change)
        return original(handle, value, name=name, **kwargs)

    def held_values(self) -> list[Any]:
        """The values held, one a variable (in the order first written), computed."""
        return [self.pending_value(entry.handle) for entry in list(self._pending.values())]

    def write_held(self) -> list[Any]:
        """Build the writes of every held value (in the order first written): a value
        computed for a read is adopted by its variable (``AssignVariableOp`` takes the
        buffer of a value no other op uses), the changes after it are made in place
        (``AssignAddVariableOp``, ``AssignSubVariableOp``), as the update would have
        made them. Returns their ops."""
        ops = []
        for entry in self._pending.values():
            if entry.base is not None:
                ops.append(_originals["assign_variable_op"](entry.handle, entry.base))
            for kind, value in entry.changes:
                write = "assign_add_variable_op" if kind == "add" else "assign_sub_variable_op"
                ops.append(_originals[write](entry.handle, value))
        return ops


class _Held:
    """A variable's held writes: a value it was given (an assign's, or one computed for
    a read), or None for the variable's own value, then the changes added or
    subtracted after it."""

    def __init__(self, handle: Any, dtype: Any) -> None:
        self.handle = handle
        self.dtype = dtype
        self.base: Any = None
        self.changes: list[tuple[str, Any]] = []

    def materialize(self, read: Callable[..., Any]) -> None:
        """Compute the held value (in the graph being built): the changes applied to
        the base, or to a read of the variable."""
        value = self.base if self.base is not None else read(self.handle, self.dtype)
        for kind, change in self.changes:
            value = value + change if kind == "add" else value - change
        self.base, self.changes = value, []
