"""The layering rule of DESIGN.md: dependencies point down only, and nothing imports in a circle.

From the top floor down: the faces (the command ``cli`` and what it runs, the HTTP endpoint
``http``, the ``timeline``, the test kit ``testing``, the fault campaigns ``campaign``; the
pytest plugin is a distribution of its own, ``pytest_plugin/``), the facade ``cluster``, the
trio edge ``server``, the handlers ``apis``, the fault rules ``faults``, the pure ``core``, the
wire ``protocol``; below them all the leaves ``version`` and ``lazy_dataclasses``. A face uses only
the facade's public API: ``fakebroker.cluster`` and the modules its ``__all__`` names. Imports
are read from the source, function-level and TYPE_CHECKING ones included, so an import hidden
in a function still counts.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fakebroker"
FLOORS = [  # top first; modules on one floor may import each other
    {"cli"},
    {"http", "timeline", "testing", "campaign"},
    {"cluster"},
    {"server"},
    {"storage"},
    {"apis"},
    {"faults"},
    {"core"},
    {"protocol"},
    {"version", "lazy_dataclasses"},  # leaves every floor may use
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str, modules: set[str]) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - (node.level - 1)] if node.level else []
            stem = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{stem}.{a.name}" for a in node.names]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: imports_of(path, name, set(files)) for name, path in files.items()}


def floor_of(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None  # the package itself: its lazy FakeCluster import is the one way in
    return next((i for i, floor in enumerate(FLOORS) if parts[1] in floor), None)


def test_every_module_has_a_floor():
    assert [m for m in graph() if "." in m and floor_of(m) is None and not m.endswith("__main__")] == []


def test_no_import_points_up():
    upward = sorted(
        (a, b)
        for a, targets in graph().items()
        for b in targets
        if floor_of(a) is not None and floor_of(b) is not None and floor_of(b) < floor_of(a)
    )
    assert upward == []


FACES = {"cli", "http", "timeline", "testing", "campaign"}


def facade_public_modules() -> set[str]:
    """``fakebroker.cluster`` and its modules named in its ``__all__`` (``conditions``, ``settings``)."""
    init = PACKAGE / "cluster" / "__init__.py"
    names: list[str] = []
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            names = [ast.literal_eval(e) for e in node.value.elts]
    return {"fakebroker.cluster"} | {f"fakebroker.cluster.{n}" for n in names if (init.parent / f"{n}.py").exists()}


def test_the_faces_use_only_the_facade():
    """cli, http, timeline and testing import ``fakebroker.cluster``'s public names and nothing below
    it (besides ``version``, their own package and each other)."""
    allowed = facade_public_modules() | {"fakebroker.version"}
    below = sorted(
        (a, b)
        for a, targets in graph().items()
        if a.split(".")[1:2] and a.split(".")[1] in FACES
        for b in targets
        if b not in allowed and not (b.split(".")[1:2] and b.split(".")[1] in FACES)
    )
    assert below == []


def test_every_face_is_a_package():
    """No loose modules at the package top but the two leaves: each face (and the kit) is a package
    of its own."""
    leaves = ("__init__", "__main__", "version", "lazy_dataclasses")
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.stem not in leaves)
    assert loose == []
    assert all((PACKAGE / face / "__init__.py").exists() for face in FACES)


def test_no_import_circles():
    g = graph()
    seen: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node: str, path: list[str]) -> list[str] | None:
        seen[node] = 1
        for target in sorted(g.get(node, ())):
            if target == "fakebroker":
                continue
            if seen.get(target) == 1:
                return path[path.index(target) :] + [target] if target in path else [node, target]
            if target not in seen and (circle := visit(target, path + [target])):
                return circle
        seen[node] = 2
        return None

    for start in sorted(g):
        if start not in seen and (circle := visit(start, [start])):
            pytest.fail(f"import circle: {' -> '.join(circle)}")


@pytest.mark.parametrize(
    "entry, forbidden",
    [
        (
            "fakebroker.protocol.messages, fakebroker.protocol.records, fakebroker.core.cluster_state, "
            "fakebroker.faults",
            ("trio", "anyio", "fakebroker.server", "fakebroker.apis", "fakebroker.cluster"),
        ),
        ("fakebroker.apis", ("trio", "anyio", "fakebroker.server", "fakebroker.cluster")),
        ("pytest_fakebroker.plugin", ("fakebroker", "trio", "anyio")),  # the cluster comes at first use
        (
            "fakebroker.cluster",
            (
                "fakebroker.http",
                "fakebroker.timeline",
                "fakebroker.cli",
                "fakebroker.testing",
                "pytest_fakebroker",
                "hypercorn",
                "matplotlib",
            ),
        ),
        # the entry point imports it first, before the command: it may start the process again
        ("fakebroker.cli.memory", ("trio", "anyio", "click", "rich", "fakebroker.cluster", "fakebroker.cli.command")),
        # the kit and the timeline load the cluster only when one is used
        ("fakebroker.testing, fakebroker.timeline", ("trio", "anyio", "fakebroker.cluster", "fakebroker.core")),
    ],
)
def test_importing_a_floor_loads_nothing_above_it(entry, forbidden):
    code = (
        f"import sys, {entry}; bad = sorted(m for m in sys.modules if m.split('.')[0] in {forbidden!r} "
        f"or m.startswith({forbidden!r})); print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_pytest_plugin_uses_only_fakebroker_public_modules():
    plugin = PACKAGE.parent / "pytest_plugin" / "pytest_fakebroker"
    used = set()
    for path in plugin.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fakebroker"):
                used.add(node.module)
            elif isinstance(node, ast.Import):
                used |= {a.name for a in node.names if a.name.startswith("fakebroker")}
    assert used <= {"fakebroker", "fakebroker.timeline"}, used


def test_a_start_loads_none_of_the_modules_kept_for_later():
    """re2 (group regexes), cramjam (compressed batches) and difflib (did-you-mean hints) cost
    every start several ms when imported eagerly: a cluster that starts and creates a topic
    needs none of them. (json reads the shipped parsed specs, at every start.)"""
    code = (
        "import sys; before = set(sys.modules)\n"
        "from fakebroker import FakeCluster\n"
        "with FakeCluster(topics={'t': 2}).run_in_thread() as cluster:\n"
        "    assert cluster.topics() == {'t': 2}\n"
        "loaded = set(sys.modules) - before\n"
        "print(sorted(m for m in loaded if m.split('.')[0] in ('re2', 'cramjam', 'difflib')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout


def test_below_the_faces_dataclasses_wait_for_their_first_use():
    """Every module below the faces takes ``dataclass`` from ``fakebroker.lazy_dataclasses``, so
    importing the cluster compiles no dataclass methods until a class is used (25-35 ms of the
    import on Python 3.11); the faces, which use only the facade, keep the standard decorator."""
    standard = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] not in FACES and path.name != "lazy_dataclasses.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "dataclasses"
            and any(a.name == "dataclass" for a in node.names)
        )
        or (
            isinstance(node, ast.Attribute)
            and node.attr == "dataclass"
            and getattr(node.value, "id", "") == "dataclasses"
        )
    )
    assert standard == []
