"""A MkDocs hook: docstrings name things with Sphinx roles (``:class:`X```); mkdocstrings leaves
the role's text in the page, so it is dropped and the name kept as code."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|exc|mod|data|obj):(?=<code>)")


def on_page_content(html: str, **kwargs: Any) -> str:
    return _ROLE.sub("", html)
