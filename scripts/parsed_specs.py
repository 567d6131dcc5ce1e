"""Rewrite fakebroker/protocol/specs/parsed.json from the spec files (after changing one).

    python scripts/parsed_specs.py [--check]

``--check`` only compares, and exits 1 when the file differs from the spec files.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakebroker.protocol import spec_files  # noqa: E402 - from this checkout


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    text = spec_files.render(spec_files.parse_folders(spec_files.SPEC_SETS))
    target = Path(str(spec_files.parsed_file()))
    if argv == ["--check"]:
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if current != text:
            print(f"{target} differs from the spec files: run python scripts/parsed_specs.py")
            return 1
        print(f"{target} matches the spec files")
        return 0
    with open(target, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"wrote {target} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
