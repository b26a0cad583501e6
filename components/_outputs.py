"""Output helpers the components of both clouds share."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi


def known_after(value: pulumi.Output[str], resources: Sequence[pulumi.CustomResource]) -> pulumi.Output[str]:
    """`value`, known only once `resources` exist: an Output carries the resources it comes from, so what
    takes it as an input is created or updated after them."""
    return pulumi.Output.all(value, *[r.id for r in resources]).apply(lambda values: str(values[0]))
