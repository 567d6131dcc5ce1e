"""Did-you-mean hints for a name given wrong (a config key, an error name, a fault keyword)."""

from __future__ import annotations

from collections.abc import Iterable


def close_matches(word: str, choices: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The ``n`` choices closest to ``word`` (difflib's ratio of at least ``cutoff``), best first.

    >>> close_matches("UNKNOWN_MEMBER", ["UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS"])
    ['UNKNOWN_MEMBER_ID']
    """
    import difflib  # only when a name was given wrong: importing it costs every start 1 ms

    return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)
