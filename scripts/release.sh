#!/usr/bin/env bash
# Build both distributions (fakebroker and pytest-fakebroker, one version) into OUT, check them
# with `twine check --strict`, and with --upload send them with `twine upload` (the repository
# from TWINE_REPOSITORY_URL, PyPI by default; credentials from TWINE_USERNAME/TWINE_PASSWORD).
# .github/workflows/release.yml runs it; tests/packaging/test_release.py runs it against a
# package index on 127.0.0.1.
#
#   bash scripts/release.sh OUT [--upload]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 1 || $# -gt 2 || ( $# -eq 2 && $2 != --upload ) ]]; then
    echo "usage: bash scripts/release.sh OUT [--upload]" >&2
    exit 2
fi
out=$1
mkdir -p "$out"
if compgen -G "$out/*" > /dev/null; then
    echo "release: $out is not empty; give an empty or new folder" >&2
    exit 2
fi
python3 -m build --sdist --wheel --outdir "$out" .
python3 -m build --sdist --wheel --outdir "$out" pytest_plugin
version=$(python3 -c 'import sys; sys.path.insert(0, "."); from fakebroker.version import __version__; print(__version__)')
for name in fakebroker pytest_fakebroker; do  # both released together, with the same version
    for file in "$out/$name-$version-py3-none-any.whl" "$out/$name-$version.tar.gz"; do
        [[ -f $file ]] || { echo "release: $file was not built (versions must match)" >&2; exit 1; }
    done
done
python3 -m twine check --strict "$out"/*
if [[ $# -eq 2 ]]; then
    python3 -m twine upload --non-interactive "$out"/*
fi
