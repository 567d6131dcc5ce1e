"""Copy the console's front-end libraries from their npm tarballs into
fakebroker/http/static/vendor/, or with --check compare what is there with a fresh download.

The versions, the tarballs' integrity and each file's sha256 are in vendor/vendor.json: raise a
version there (and blank its hashes), run this script, and commit what it wrote.

    python scripts/vendor_console.py [--check]
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VENDOR = Path(__file__).resolve().parent.parent / "fakebroker" / "http" / "static" / "vendor"


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print("usage: python scripts/vendor_console.py [--check]", file=sys.stderr)
        return 2
    manifest = json.loads((VENDOR / "vendor.json").read_text())
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for package in manifest["packages"]:
            spec = f"{package['name']}@{package['version']}"
            out = subprocess.run(
                ["npm", "pack", spec, "--silent", "--pack-destination", tmp], capture_output=True, text=True, check=True
            )
            tarball = Path(tmp) / out.stdout.strip().splitlines()[-1]
            data = tarball.read_bytes()
            integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
            if integrity != package["integrity"]:
                problems.append(
                    f"{spec}: the registry's tarball is {integrity}, vendor.json says {package['integrity']}"
                )
                continue
            with tarfile.open(tarball) as tar:
                for name, (member, digest) in package["files"].items():
                    extracted = tar.extractfile(member)
                    assert extracted is not None, member
                    content = extracted.read()
                    fresh = hashlib.sha256(content).hexdigest()
                    if check:
                        here = VENDOR / name
                        if not here.exists() or hashlib.sha256(here.read_bytes()).hexdigest() != fresh:
                            problems.append(f"{name} differs from {spec}'s {member}")
                        elif digest != fresh:
                            problems.append(f"vendor.json's sha256 of {name} is not {spec}'s")
                    else:
                        (VENDOR / name).write_bytes(content)
                        package["files"][name] = [member, fresh]
    if not check:
        (VENDOR / "vendor.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for problem in problems:
        print(problem, file=sys.stderr)
    print("vendor: " + ("differs" if problems else "matches npm" if check else "written"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
