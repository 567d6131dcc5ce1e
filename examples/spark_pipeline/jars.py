"""Spark's Kafka connector jars for the installed PySpark, resolved once from Maven Central.

PySpark ships Spark without its Kafka connector. This module asks Maven (``pom.xml`` beside
it) for ``spark-sql-kafka-0-10`` at exactly ``pyspark.__version__`` and the Scala version
PySpark's own ``scala-library`` jar has, plus what PySpark does not ship
(``spark-token-provider-kafka-0-10``, ``kafka-clients``, ``commons-pool2``), into a cache
folder; the pipeline hands them to Spark with ``spark.jars``. Nothing is committed as a jar.

    python3 examples/spark_pipeline/jars.py      # resolve (or find cached) and print the folder

The folder is ``$FAKEBROKER_SPARK_JARS`` if set, else
``${XDG_CACHE_HOME:-~/.cache}/fakebroker/spark-jars/spark-<version>_<scala>``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESOLVE_TIMEOUT = 600  # s; a cold Maven cache downloads ~10 MB plus the dependency plugin
# artifact-id prefixes the folder must hold to count as complete
NEEDED = ("spark-sql-kafka-0-10_", "spark-token-provider-kafka-0-10_", "kafka-clients-", "commons-pool2-")


def spark_version() -> str:
    import pyspark

    return pyspark.__version__


def scala_binary_version() -> str:
    """The Scala binary version PySpark was built with: read from its bundled scala-library jar
    (e.g. ``scala-library-2.13.16.jar`` -> ``2.13``), else Spark's default for its major version
    (4.x -> 2.13, 3.x -> 2.12)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    for jar in sorted(jars.glob("scala-library-*.jar")):
        found = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        if found:
            return found.group(1)
    return "2.13" if int(spark_version().split(".")[0]) >= 4 else "2.12"


def jars_dir() -> Path:
    explicit = os.environ.get("FAKEBROKER_SPARK_JARS")
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "fakebroker" / "spark-jars" / f"spark-{spark_version()}_{scala_binary_version()}"


def _complete(folder: Path) -> list[Path] | None:
    jars = sorted(folder.glob("*.jar")) if folder.is_dir() else []
    if all(any(j.name.startswith(prefix) for j in jars) for prefix in NEEDED):
        return jars
    return None


def ensure_jars() -> list[Path]:
    """The connector jars, resolving them with Maven the first time (cached afterwards)."""
    folder = jars_dir()
    cached = _complete(folder)
    if cached:
        return cached
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("Maven (mvn) is needed once to fetch Spark's Kafka connector; run scripts/setup.sh")
    folder.parent.mkdir(parents=True, exist_ok=True)
    # Resolve into a private folder and rename it into place, so two processes setting up at
    # once never see (or leave) a half-filled cache.
    staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    versions = [f"-Dspark.version={spark_version()}", f"-Dscala.binary.version={scala_binary_version()}"]
    try:
        command = [mvn, "-q", "-B", "dependency:copy-dependencies", *versions, f"-DoutputDirectory={staging}"]
        out = subprocess.run(
            command, cwd=HERE, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT, stdin=subprocess.DEVNULL
        )
        if out.returncode != 0 or not _complete(staging):
            raise RuntimeError(
                f"resolving the Spark Kafka connector ({' '.join(versions)}) failed "
                f"({out.returncode}):\n{out.stdout[-4000:]}{out.stderr[-4000:]}"
            )
        if folder.is_dir() and not _complete(folder):
            shutil.rmtree(folder, ignore_errors=True)  # a half-filled folder left by hand
        try:
            staging.rename(folder)
        except OSError:  # another process got there first
            if not _complete(folder):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    jars = _complete(folder)
    assert jars
    return jars


if __name__ == "__main__":
    for jar in ensure_jars():
        print(jar)
    sys.exit(0)
