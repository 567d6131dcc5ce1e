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
and errors. A class whose making cannot wait is made at once: with ``slots=True`` (the
decorator returns a new class), ``init=False``, or an ``__init__`` of its own. Type checkers
see the standard decorator.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import TYPE_CHECKING, Any

_pending: dict[type, dict[str, Any]] = {}  # class -> the decorator's arguments, until made
_lock = threading.RLock()  # a class's first instance may come from two threads at once
_HOOKS = ("__init__", "__dataclass_fields__", "__signature__")


def make_now(cls: type) -> None:
    """Apply the standard decorator to ``cls`` (and first to any waiting class it inherits
    from), if it is still waiting."""
    with _lock:
        for base in reversed(cls.__mro__):
            options = _pending.pop(base, None)
            if options is not None:
                for hook in _HOOKS:
                    delattr(base, hook)
                dataclasses.dataclass(base, **options)


class _MadeOnLook:
    """A class attribute that makes its class when read, then reads what the decorator put
    there (``__signature__`` reads None, so ``inspect`` goes on to the real ``__init__``)."""

    def __init__(self, owner: type, name: str):
        self.owner, self.name = owner, name

    def __get__(self, instance: object, cls: type | None = None) -> Any:
        make_now(self.owner)
        return getattr(self.owner, self.name, None)


def _first_init(owner: type) -> Any:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        make_now(owner)
        owner.__init__(self, *args, **kwargs)  # type: ignore[misc]  # now the decorator's

    return __init__


def _dataclass(cls: type | None = None, /, **options: Any) -> Any:
    def wrap(cls: type) -> type:
        if options.get("slots") or not options.get("init", True) or "__init__" in cls.__dict__:
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
