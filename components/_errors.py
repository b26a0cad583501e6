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


def slurm_controller_problems(state_field: str, state_gib: int, login_count: int) -> list[tuple[str, str]]:
    """What any cloud's Slurm controller refuses: a state disk too small for slurmctld's state and the
    accounting database, a negative login count."""
    problems = []
    if state_gib < 20:
        problems.append((state_field, "slurmctld's state and the accounting database need at least 20 GiB"))
    if login_count < 0:
        problems.append(("login_count", "cannot be negative"))
    return problems


def snapshot_problems(start_utc: str, kept: int) -> list[tuple[str, str]]:
    """What a daily snapshot schedule refuses on either cloud: a start that is not on the hour (Compute
    Engine's snapshot schedules start on the hour; Data Lifecycle Manager takes any HH:MM), a count
    outside 1-1000 (Data Lifecycle Manager's retain count)."""
    problems = []
    hour, _, minute = start_utc.partition(":")
    if not (len(hour) == 2 and hour.isdigit() and int(hour) < 24 and minute == "00"):
        problems.append(("snapshot_time_utc", f"'{start_utc}' is not an hour as HH:00 (UTC)"))
    if not 1 <= kept <= 1000:
        problems.append(("snapshots_kept", "keep between 1 and 1000 daily snapshots"))
    return problems
