"""Input errors of components: every problem with an Args value, raised once, before any child exists."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi


def check_inputs(component: str, problems: Sequence[tuple[str, str]]) -> None:
    """Raise one InputPropertiesError naming each (property path, reason) when there are problems."""
    if problems:
        raise pulumi.InputPropertiesError(
            f"{component}: " + "; ".join(f"{path}: {reason}" for path, reason in problems),
            [
                pulumi.InputPropertyErrorDetails(property_path=path, reason=reason)
                for path, reason in problems
            ],
        )
