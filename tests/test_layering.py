"""The layering rule of DESIGN.md: core, protocol and the fault rules import neither the server nor trio/anyio."""

from __future__ import annotations

import subprocess
import sys


def test_core_and_protocol_do_not_pull_in_the_server_or_trio():
    code = (
        "import sys, fakebroker.protocol.messages, fakebroker.protocol.records, fakebroker.core.cluster_state, "
        "fakebroker.core.groups.coordinator, fakebroker.faults, fakebroker.faults.responses; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('trio', 'anyio') or m.startswith('fakebroker.server') "
        "or m.startswith('fakebroker.apis')); print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
