"""The health signing key's provider: a fresh random key at create, and never a change after."""

from __future__ import annotations

import re

from components.health_signing import SigningKeyProvider
from tests.components.harness import plan_file
from tests.conftest import REPO


def test_create_makes_a_fresh_256_bit_key_and_nothing_ever_changes_it() -> None:
    provider = SigningKeyProvider()
    first, second = provider.create({}), provider.create({})
    assert re.fullmatch(r"[0-9a-f]{64}", first.outs["key"])
    assert first.outs["key"] != second.outs["key"]
    assert first.id != second.id
    assert not provider.diff(first.id, first.outs, {"key": None}).changes
    assert provider.read(first.id, first.outs).outs == first.outs


def test_the_key_is_a_secret_output_of_every_stack() -> None:
    for example in ("aws-p5-efa-fsx", "gcp-tpu-v6e-spot"):
        plan = plan_file(REPO / f"blueprints/examples/{example}.yaml", "dev")
        # The plan engine shows a secret as a marker, never its value.
        assert plan.outputs["health_signing_key"] == "[secret]"
