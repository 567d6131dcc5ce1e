"""Terminal summary of the kio cross-check (tests/protocol/test_kio_crosscheck.py).

Its tests leave ``user_properties`` on their reports: ``kio_compared`` (message, version,
direction) on every passing comparison, ``kio_not_comparable`` (lines) from the coverage test.
"""

from __future__ import annotations

from collections import Counter


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    compared: set[tuple] = set()
    not_comparable: list[str] | None = None
    for report in terminalreporter.stats.get("passed", []):
        for key, value in getattr(report, "user_properties", ()):
            if key == "kio_compared":
                compared.add(tuple(value))
            elif key == "kio_not_comparable":
                not_comparable = list(value)
    if not compared and not_comparable is None:
        return
    write = terminalreporter.write_line
    terminalreporter.write_sep("=", "kio cross-check")
    directions = Counter(direction for _, _, direction in compared)
    write(
        f"compared (message, version, direction) cases: {len(compared)} "
        f"({', '.join(f'{d}: {n}' for d, n in sorted(directions.items()))})"
    )
    if not_comparable is not None:
        write("not comparable:" if not_comparable else "not comparable: none")
        for line in not_comparable:
            write(f"  {line}")
