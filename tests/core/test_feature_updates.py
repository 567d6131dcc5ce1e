"""UpdateFeatures' checks in core/features.py: Kafka's controller refusals, in its words."""

from __future__ import annotations

import pytest

from fakebroker.core.features import SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE, Features


@pytest.mark.parametrize(
    ("name", "level", "kind", "reason"),
    [
        (
            "foo",
            1,
            UPGRADE,
            "Invalid update version 1 for feature foo. Local controller 1 does not support this feature.",
        ),
        ("transaction.version", 9, UPGRADE, "Local controller 1 only supports versions 0-2"),
        ("transaction.version", 1, UPGRADE, "Can't downgrade the version of this feature without setting the upgrade"),
        ("transaction.version", 1, 0, "The controller does not support the given upgrade type."),
        ("transaction.version", -1, SAFE_DOWNGRADE, "A feature version cannot be less than 0."),
        ("metadata.version", 32, SAFE_DOWNGRADE, "Unsupported metadata.version downgrade from 33 to 32. Refusing"),
        ("metadata.version", 32, UNSAFE_DOWNGRADE, "Unsafe metadata downgrade is not supported in this version."),
        ("kraft.version", 0, SAFE_DOWNGRADE, "Can't downgrade the version of this feature."),
        ("group.version", 1, SAFE_DOWNGRADE, None),
    ],
)
def test_refusals(name, level, kind, reason):
    got = Features().check_update(name, level, kind, controller_id=1)
    if reason is None:
        assert got is None
    else:
        assert got is not None and reason in got


def test_downgrades_and_upgrades_pass_and_move_the_epoch():
    f = Features()
    assert f.check_update("transaction.version", 1, SAFE_DOWNGRADE, 0) is None
    assert f.check_update("transaction.version", 0, UNSAFE_DOWNGRADE, 0) is None
    assert f.check_update("group.version", 0, SAFE_DOWNGRADE, 0) is None
    epoch = f.epoch
    f.update({"transaction.version": 1})
    assert (f.transaction_version, f.epoch) == (1, epoch + 1)
    assert "newer version" in f.check_update("transaction.version", 2, SAFE_DOWNGRADE, 0)
    assert f.check_update("transaction.version", 2, UPGRADE, 0) is None
    f.update({})
    assert f.epoch == epoch + 1
