"""``fakebroker.lazy_dataclasses``: a class is made by the standard decorator at its first use,
and is then what the standard decorator makes."""

from __future__ import annotations

import dataclasses
import inspect
import threading
from dataclasses import field

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
