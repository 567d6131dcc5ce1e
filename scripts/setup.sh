#!/usr/bin/env bash
# Sets up everything fakebroker and its tests need on a fresh machine (idempotent):
# the package with its test extra, kcat, curl, a JDK and Maven for the Java client tests, Debian's
# Chromium for the console's browser tests, the
# kafkajs test scripts' npm packages, Spark's Kafka connector and the Kafka broker jars of the
# conformance tests (both from Maven Central, cached), and the wheels of the packaging tests.
# Run as root or with sudo available.
set -euo pipefail
cd "$(dirname "$0")/.."

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
python3 -m pip install -q -e '.[dev]' -e ./pytest_plugin

apt_packages=()
command -v kcat >/dev/null || command -v kafkacat >/dev/null || apt_packages+=(kcat)
command -v curl >/dev/null || apt_packages+=(curl)  # the control endpoint's shell test
command -v java >/dev/null || apt_packages+=(default-jdk-headless)
command -v mvn >/dev/null || apt_packages+=(maven)
command -v npm >/dev/null || apt_packages+=(nodejs npm)
command -v go >/dev/null || apt_packages+=(golang-go)  # an older go fetches the toolchain go.mod asks for
command -v chromium >/dev/null || apt_packages+=(chromium)  # the console's browser tests (Playwright drives it)
if [ ${#apt_packages[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${apt_packages[@]}" >/dev/null
fi

(cd tests/clients/js && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
(cd examples/kafkajs_control && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
# Spark's Kafka connector for the installed PySpark, from Maven Central into a cache (once)
python3 examples/spark_pipeline/jars.py >/dev/null
# the wheels the packaging tests install into fresh venvs (this Python and 3.10), so they read no index
python3 tests/packaging/wheelhouse.py
# Apache Kafka's broker (pinned) for the differential conformance tests, from Maven Central into a cache (once)
python3 tests/conformance/kafka_jars.py >/dev/null
