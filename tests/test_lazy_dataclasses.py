"""``fakebroker.lazy_dataclasses``: a class is made by the standard decorator at its first use,
and is then what the standard decorator makes."""

from __future__ import annotations

import dataclasses
import inspect
import threading
import time
from dataclasses import InitVar, field
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

import fakebroker.lazy_dataclasses as lazy_module
from fakebroker.lazy_dataclasses import dataclass


def test_a_class_waits_until_its_first_instance_then_is_the_standard_one():
    @dataclass(frozen=True)
    class Lazy:
        a: int
        b: str = "x"
        c: frozenset[int] = field(default_factory=frozenset)

    @dataclasses.dataclass(frozen=True)
    class Standard:
        a: int
        b: str = "x"
        c: frozenset[int] = field(default_factory=frozenset)

    assert "__repr__" not in Lazy.__dict__ and Lazy in lazy_module._pending
    one = Lazy(1)
    assert Lazy not in lazy_module._pending
    assert [n for n in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__") if n in Lazy.__dict__] == [
        "__init__",
        "__repr__",
        "__eq__",
        "__hash__",
        "__setattr__",
    ]
    assert repr(one) == repr(Standard(1)).replace("Standard", "Lazy")
    assert one == Lazy(1, "x", frozenset()) and one != Lazy(2) and hash(one) == hash(Lazy(1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.a = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        Lazy()  # type: ignore[call-arg]


def test_introspection_before_any_instance_makes_the_class():
    @dataclass
    class Plain:
        a: int
        b: int = 2

    assert dataclasses.is_dataclass(Plain)
    assert [f.name for f in dataclasses.fields(Plain)] == ["a", "b"]
    assert Plain not in lazy_module._pending

    @dataclass
    class Signed:
        a: int
        b: int = 2

    assert str(inspect.signature(Signed)) == "(a: 'int', b: 'int' = 2) -> None"
    assert dataclasses.replace(Signed(1), b=3) == Signed(1, 3)
    assert dataclasses.asdict(Signed(1)) == {"a": 1, "b": 2}


def test_subclasses_lazy_plain_and_standard_see_their_bases_fields():
    @dataclass
    class Base:
        a: int

    @dataclass
    class Child(Base):
        b: int = 0

    assert (
        Child(1, 2) == Child(a=1, b=2)
        and repr(Child(1)) == "test_subclasses_lazy_plain_and_standard_see_their_bases_fields.<locals>.Child(a=1, b=0)"
    )

    @dataclass
    class Base2:
        a: int

    class NoDecorator(Base2):
        pass

    assert NoDecorator(5).a == 5  # the inherited first __init__ makes the base

    @dataclass
    class Base3:
        a: int

    class OwnInit(Base3):
        def __init__(self) -> None:
            super().__init__(7)

    assert OwnInit().a == 7  # through super(): no loop back into the subclass's __init__

    @dataclass
    class Base4:
        a: int

    @dataclasses.dataclass
    class Standard(Base4):  # the standard decorator reads the waiting base's fields
        b: int = 0

    assert [f.name for f in dataclasses.fields(Standard)] == ["a", "b"]


def test_what_cannot_wait_is_made_at_once():
    @dataclass(slots=True)
    class Slotted:
        a: int

    @dataclass(init=False)
    class NoInit:
        a: int = 0

    @dataclass
    class OwnInit:
        a: int

        def __init__(self) -> None:
            self.a = 1

    assert "__slots__" in Slotted.__dict__ and "__repr__" in Slotted.__dict__
    assert "__repr__" in NoInit.__dict__ and "__repr__" in OwnInit.__dict__
    assert not {Slotted, NoInit, OwnInit} & set(lazy_module._pending)


def test_two_threads_making_the_first_instances_at_once():
    @dataclass(frozen=True)
    class Shared:
        a: int

    made: list[Shared] = []
    start = threading.Barrier(4)

    def make(n: int) -> None:
        start.wait()
        made.append(Shared(n))

    threads = [threading.Thread(target=make, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(s.a for s in made) == [0, 1, 2, 3]


@dataclass
class _Built:
    a: int
    b: str


@given(st.builds(_Built))
def test_hypothesis_builds_reads_the_real_signature(built: _Built) -> None:
    assert isinstance(built.a, int) and isinstance(built.b, str)


def shapes(decorate):
    """The same classes made by one decorator (the standard one or the lazy one)."""

    @decorate(frozen=True)
    class Frozen:
        a: int
        b: str = "x"

    @decorate(order=True)
    class Ordered:
        a: int
        b: list[int] = field(default_factory=list)

    @decorate(kw_only=True)
    class KeywordsOnly:
        a: int
        b: int = 2

    @decorate
    class Undocumented:
        a: int
        seed: InitVar[int] = 0

        def __post_init__(self, seed: int) -> None:
            self.a += seed

    return Frozen, Ordered, KeywordsOnly, Undocumented


def test_each_class_is_exactly_what_the_standard_decorator_makes():
    calls = [((1,), {}), ((1, [2]), {}), ((), {"a": 1}), ((1, 5), {})]
    for lazy, standard, (args, kwargs) in zip(shapes(dataclass), shapes(dataclasses.dataclass), calls, strict=True):
        assert lazy in lazy_module._pending
        one, other = lazy(*args, **kwargs), standard(*args, **kwargs)
        assert repr(one).replace("lazy", "") == repr(other).replace("lazy", "")
        assert dataclasses.asdict(one) == dataclasses.asdict(other)
        for attribute in ("__doc__", "__match_args__"):
            assert getattr(lazy, attribute, None) == getattr(standard, attribute, None), attribute
        assert str(inspect.signature(lazy)) == str(inspect.signature(standard))
        assert lazy.__init__.__qualname__ == standard.__init__.__qualname__
        assert repr(lazy.__dataclass_params__) == repr(standard.__dataclass_params__)  # type: ignore[attr-defined]
        assert [(n, n in vars(lazy)) for n in vars(standard)] == [(n, True) for n in vars(standard)]
        with pytest.raises(TypeError) as lazy_error:
            lazy(*args, 1, 2, 3, **kwargs)
        with pytest.raises(TypeError) as standard_error:
            standard(*args, 1, 2, 3, **kwargs)
        assert str(lazy_error.value) == str(standard_error.value)


def test_a_thread_making_an_instance_while_another_makes_the_class_waits_for_it(monkeypatch):
    """The class's ``__init__`` hook stays until the real one replaces it in one step: a second
    thread that comes while the decorator is at work waits for it, then makes its instance."""

    @dataclass(frozen=True)
    class Slow:
        a: int
        b: int = 7

    inside = threading.Event()

    def slow_decorator(cls, **options):
        if cls is Slow:
            inside.set()
            time.sleep(0.05)  # the GIL is free: the other thread runs now
        return dataclasses.dataclass(cls, **options)

    monkeypatch.setattr(lazy_module, "dataclasses", SimpleNamespace(dataclass=slow_decorator))
    made: dict[str, object] = {}
    first = threading.Thread(target=lambda: made.setdefault("first", Slow(1)))
    first.start()
    assert inside.wait(5)
    second = Slow(2)  # while the first thread is inside the decorator
    first.join()
    assert made["first"] == Slow(1, 7) and second == Slow(2, 7) and repr(second).endswith("Slow(a=2, b=7)")
