"""Delete the instances Slurm created for a node group before Pulumi deletes what they stand in.

Slurm's resume program launches elastic nodes outside Pulumi (EC2 RunInstances from the group's launch
template; Compute Engine bulkInsert from its instance template), tagged `clusterfab-slurm-elastic=true`
with the cluster's blueprint, stack and node group. No Pulumi resource owns them, so without this a
`destroy` would leave them running (and billing), and the deletes after them would fail: a subnet or
security group, a placement group, a GCP subnetwork in use cannot be deleted. The stack's delete hook on
each node group's auto scaling group / managed instance group calls `delete_elastic` (stacks/compose.py).

The decision (which instances, when to give up) is plain code over a `Fleet` (nodesync's `Ec2Fleet` and
`GceFleet`: the same queries the controller's node sync runs), built by each cloud's module
(`teardown_aws`, `teardown_gcp`) with the deploying user's credentials, as the Pulumi providers use them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from typing import Protocol

from clusterfab.core.errors import ClusterfabError
from clusterfab.scheduler.slurm.nodes.fleet import CloudError, ElasticInstance, FlexRequest

TIMEOUT_S = 1200.0
"""How long a teardown waits for the instances to be gone: a bound of our choosing, not a cloud's figure.
GPU instances take minutes to terminate (EFA interfaces and volumes detach); 20 minutes leaves room for
a slow one without letting a stuck destroy hang on."""
POLL_S = 15.0


class TeardownError(ClusterfabError):
    """Elastic instances did not go in time (exit 1); the message names them."""

    exit_code = 1


class Fleet(Protocol):
    def elastic(self) -> list[ElasticInstance]: ...
    def terminate(self, instance_ids: Sequence[str]) -> None: ...
    def requests(self) -> list[FlexRequest]: ...
    def withdraw(self, mig: str) -> None: ...


def delete_elastic(
    fleet: Fleet,
    groups: Callable[[str], bool],
    *,
    timeout_s: float = TIMEOUT_S,
    poll_s: float = POLL_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Delete the fleet's elastic instances whose node group `groups` accepts, and wait until they are
    gone; return the ids asked to go (sorted). An instance that appears meanwhile (the controller's resume
    program still running) is deleted too. A flex-start MIG is deleted whole, with its queued request and
    its VMs (which are then waited for, not deleted one by one: their MIG would recreate them).
    TeardownError when some remain after `timeout_s`."""
    deadline = clock() + timeout_s
    asked: set[str] = set()
    while True:
        # A MIG still being deleted holds the group's template and workload policy: waited for as well.
        migs = [r.mig for r in fleet.requests() if groups(r.group)]
        try:
            for mig in migs:
                if mig not in asked:
                    fleet.withdraw(mig)
                    asked.add(mig)
        except CloudError as error:
            raise TeardownError(
                f"deleting the flex-start MIGs Slurm created failed: {error.message}"
            ) from None
        found = [i for i in fleet.elastic() if groups(i.group)]
        left = sorted([*migs, *(i.id for i in found)])
        new = [i.id for i in found if i.id not in asked and not i.managed]
        if new:
            try:
                fleet.terminate(new)
            except CloudError as error:
                raise TeardownError(f"deleting the instances Slurm created failed: {error.message}") from None
            asked.update(new)
        if not left:
            return sorted(asked)
        if clock() >= deadline:
            raise TeardownError(
                f"{len(left)} instance(s) Slurm created did not go within {timeout_s:.0f} s: "
                f"{', '.join(left)}; delete them in the cloud console or CLI, then run destroy again"
            )
        sleep(poll_s)


def group_filter(group: str | None, kept: Collection[str]) -> Callable[[str], bool]:
    """Which node groups a delete empties: the named group's, or, for a group the program no longer has
    (removed from the blueprint: its resource is deleted by name only), every group that is not `kept`."""
    if group is not None:
        return lambda found: found == group
    return lambda found: found not in kept
