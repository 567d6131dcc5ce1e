"""Apache Kafka's broker jars, pinned to one release, resolved once from Maven Central.

The differential conformance tests run a real Kafka broker beside fakebroker. This module asks
Maven (``kafka/pom.xml`` beside it) for ``org.apache.kafka:kafka_2.13`` at :data:`KAFKA_VERSION`
with its runtime dependencies and a log4j2 binding, copied into a cache folder; the broker
fixture runs ``java -cp 'DIR/*' kafka.Kafka``. Nothing is committed as a jar.
``scripts/setup.sh`` runs it, so a fresh machine has the jars before the tests start; the
fixture calls :func:`ensure_jars` too, which resolves them if the cache is missing.

    python3 tests/conformance/kafka_jars.py      # resolve (or find cached) and print the folder

The folder is ``$FAKEBROKER_KAFKA_JARS`` if set, else
``${XDG_CACHE_HOME:-~/.cache}/fakebroker/kafka-<version>/libs``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KAFKA_VERSION = "4.4.0"  # as in kafka/pom.xml
HERE = Path(__file__).resolve().parent
POM_DIR = HERE / "kafka"
RESOLVE_TIMEOUT = 900  # s; a cold Maven cache downloads about 45 MB
# jars the folder must hold to count as complete
NEEDED = (
    f"kafka_2.13-{KAFKA_VERSION}.jar",
    f"kafka-clients-{KAFKA_VERSION}.jar",
    "log4j-slf4j-impl-",
    "scala-library-",
)


def cache_root() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "fakebroker" / f"kafka-{KAFKA_VERSION}"


def jars_dir() -> Path:
    explicit = os.environ.get("FAKEBROKER_KAFKA_JARS")
    return Path(explicit) if explicit else cache_root() / "libs"


def _complete(folder: Path) -> bool:
    names = [j.name for j in folder.glob("*.jar")] if folder.is_dir() else []
    return all(any(n.startswith(prefix) for n in names) for prefix in NEEDED)


def ensure_jars() -> Path:
    """The folder of Kafka's jars, resolving them with Maven the first time (cached afterwards)."""
    folder = jars_dir()
    if _complete(folder):
        return folder
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError(f"Maven (mvn) is needed once to fetch Kafka {KAFKA_VERSION}'s jars; run scripts/setup.sh")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / ".resolve.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one resolution at a time; the others find it done
        if _complete(folder):
            return folder
        # Resolve into a private folder and rename it into place, so nobody sees a half-filled cache.
        staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
        try:
            command = [mvn, "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={staging}"]
            out = subprocess.run(
                command, cwd=POM_DIR, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT, stdin=subprocess.DEVNULL
            )
            if out.returncode != 0 or not _complete(staging):
                raise RuntimeError(
                    f"resolving Kafka {KAFKA_VERSION}'s jars failed ({out.returncode}):\n"
                    f"{out.stdout[-4000:]}{out.stderr[-4000:]}"
                )
            if folder.exists():
                shutil.rmtree(folder, ignore_errors=True)  # a half-filled folder left by hand
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return folder


if __name__ == "__main__":
    print(ensure_jars())
    sys.exit(0)
