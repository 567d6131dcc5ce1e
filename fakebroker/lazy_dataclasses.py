"""``dataclass``, made when a class is first used rather than when its module is imported.

The standard decorator writes each class's ``__init__``, ``__repr__``, ``__eq__`` (and for a
frozen class ``__hash__``, ``__setattr__`` and ``__delattr__``) as source text and compiles
each one: about 0.27 ms a class on Python 3.11, and fakebroker has well over a hundred, most of
which a given test never makes an instance of. Importing fakebroker paid 30-40 ms for them,
every test session's first test waiting on it.

This decorator takes the same arguments and leaves the class as it is, with three hooks that
apply the standard decorator, with those arguments, the first time any of them is reached:

* ``__init__``: making an instance (directly, or through a subclass or ``super()``);
* ``__dataclass_fields__``: ``dataclasses.fields``, ``is_dataclass``, ``replace`` and
  ``asdict`` of the class, and the standard decorator processing a subclass;
* ``__signature__``: ``inspect.signature`` of the class (hypothesis's ``builds``).

From then on the class is exactly what the standard decorator makes: the same methods, fields
and errors. Being made then costs it about one and a half times what the decorator costs at
import (its ``__init__`` comes from a second run of the decorator, see ``_make``), so this pays
for the classes a process never uses. A class whose making cannot wait is made at once: with ``slots=True`` (the
decorator returns a new class), ``init=False``, an ``__init__`` of its own, or a base class
with an ``__init_subclass__``. An instance made without ``__init__`` (unpickled in a process
that never made one) finds its class unmade: nothing in fakebroker does that. Type checkers
see the standard decorator.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import threading
from typing import TYPE_CHECKING, Any

_pending: dict[type, dict[str, Any]] = {}  # class -> the decorator's arguments, until made
_lock = threading.RLock()  # a class's first use may come from two threads at once


def make_now(cls: type) -> None:
    """Apply the standard decorator to ``cls`` (and first to any waiting class it inherits
    from), if it is still waiting."""
    with _lock:
        for base in reversed(cls.__mro__):
            options = _pending.pop(base, None)
            if options is not None:
                _make(base, options)


def _make(cls: type, options: dict[str, Any]) -> None:
    # The decorator writes an ``__init__`` only where the class has none, and taking the hook
    # away first would let another thread find the base class's ``__init__`` meanwhile. So the
    # class gets everything but ``__init__`` from the decorator, with the hook still in place
    # (another thread making an instance waits in it for the lock), and then, in one step, the
    # ``__init__`` the decorator writes for a subclass of it that adds nothing.
    docless = not cls.__dict__.get("__doc__")
    dataclasses.dataclass(cls, **{**options, "init": False})
    twin = type(cls.__name__, (cls,), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
    frozen = options.get("frozen", False)  # as the class's, or the decorator refuses the twin
    twin = dataclasses.dataclass(twin, frozen=frozen, repr=False, eq=False, match_args=False)
    cls.__init__ = twin.__init__  # type: ignore[misc]
    params = copy.copy(cls.__dataclass_params__)  # type: ignore[attr-defined]
    params.init = True  # as the decorator says of a class it made with its __init__
    cls.__dataclass_params__ = params  # type: ignore[attr-defined]
    del cls.__signature__  # type: ignore[attr-defined]
    if docless:  # the decorator's docstring, from the real ``__init__``
        cls.__doc__ = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")


class _MadeOnLook:
    """A class attribute that makes its class when read, then reads what the decorator put
    there (``__signature__`` reads None, so ``inspect`` goes on to the real ``__init__``)."""

    def __init__(self, owner: type, name: str):
        self.owner, self.name = owner, name

    def __get__(self, instance: object, cls: type | None = None) -> Any:
        make_now(self.owner)
        if isinstance(self.owner.__dict__.get(self.name), _MadeOnLook):
            return None  # read by the decorator itself while it makes the class (this thread)
        return getattr(self.owner, self.name, None)


def _first_init(owner: type) -> Any:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        make_now(owner)
        owner.__init__(self, *args, **kwargs)  # type: ignore[misc]  # now the decorator's

    return __init__


def _dataclass(cls: type | None = None, /, **options: Any) -> Any:
    def wrap(cls: type) -> type:
        cannot_wait = options.get("slots") or not options.get("init", True) or "__init__" in cls.__dict__
        # a base's __init_subclass__ would run for the subclass that lends the class its __init__
        if cannot_wait or any("__init_subclass__" in vars(base) for base in cls.__mro__[1:-1]):
            make_now(cls)  # its waiting bases first: the decorator reads their fields
            return dataclasses.dataclass(cls, **options)
        _pending[cls] = options
        cls.__init__ = _first_init(cls)  # type: ignore[misc]
        cls.__dataclass_fields__ = _MadeOnLook(cls, "__dataclass_fields__")  # type: ignore[attr-defined]
        cls.__signature__ = _MadeOnLook(cls, "__signature__")  # type: ignore[attr-defined]
        return cls

    return wrap if cls is None else wrap(cls)


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:
    dataclass = _dataclass

__all__ = ["dataclass", "make_now"]
