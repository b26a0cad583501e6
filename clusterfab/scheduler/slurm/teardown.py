"""Delete the instances Slurm created for a node group before Pulumi deletes what they stand in.

Slurm's resume program launches elastic nodes outside Pulumi (EC2 RunInstances from the group's launch
template; Compute Engine bulkInsert from its instance template), tagged `clusterfab-slurm-elastic=true`
with the cluster's blueprint, stack and node group. No Pulumi resource owns them, so without this a
`destroy` would leave them running (and billing), and the deletes after them would fail: a subnet or
security group, a placement group, a GCP subnetwork in use cannot be deleted. The stack's delete hook on
each node group's auto scaling group / managed instance group calls `delete_elastic` (stacks/compose.py).

The decision (which instances, when to give up) is plain code over a `Fleet` (the node programs' `Ec2Fleet`
and `GceFleet`: the same queries the controller's node sync runs), built here with the deploying user's
credentials: boto3's default chain in the blueprint's region, google-auth's application default
credentials for the stack's project and zone, as the Pulumi providers use them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from clusterfab.core.errors import ClusterfabError
from clusterfab.scheduler.slurm.nodes.aws import Ec2Fleet, Ec2Group
from clusterfab.scheduler.slurm.nodes.fleet import GROUP_TAG, CloudError, ElasticInstance, FlexRequest
from clusterfab.scheduler.slurm.nodes.gcp import GceFleet

if TYPE_CHECKING:
    import requests

TIMEOUT_S = 1200.0
"""How long a teardown waits for the instances to be gone: a bound of our choosing, not a cloud's figure.
GPU instances take minutes to terminate (EFA interfaces and volumes detach); 20 minutes leaves room for
a slow one without letting a stuck destroy hang on."""
POLL_S = 15.0
_COMPUTE_SCOPE = "https://www.googleapis.com/auth/compute"


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


def ec2_fleet(region: str, *, blueprint: str, stack: str, deleted: Mapping[str, Any]) -> Ec2Fleet:
    """The instances in EC2 of the node group whose auto scaling group is being deleted (`deleted`: its
    state), with the deploying user's credentials (boto3's default chain)."""
    import boto3  # noqa: PLC0415 - only a real delete needs it

    client = boto3.client("ec2", region_name=region)
    return Ec2Fleet(client, blueprint=blueprint, stack=stack, groups=ec2_group_of(client, deleted))


def ec2_group_of(client: Any, deleted: Mapping[str, Any]) -> dict[str, Ec2Group]:
    """The node group an auto scaling group served (its node-group tag) with its launch template and that
    template's instance profile, as EC2 has them. Tags alone are anyone's to set who may tag an instance,
    and a second deployment of the same blueprint and stack names carries the same ones: only instances of
    the group's own profile are the group's to delete (as the controller's node sync holds them)."""
    tags = {str(t.get("key")): str(t.get("value")) for t in deleted.get("tags") or []}
    group, template = tags.get(GROUP_TAG), (deleted.get("launchTemplate") or {}).get("id")
    if not group or not template:
        lacking = "node group" if not group else "launch template"
        raise TeardownError(
            f"the auto scaling group being deleted names no {lacking}: its elastic instances cannot be told "
            "apart from another deployment's; delete them by hand"
        )
    try:
        found = client.describe_launch_template_versions(LaunchTemplateId=template, Versions=["$Latest"])
        data = found["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    except Exception as exc:  # botocore's errors, or a template without versions
        raise TeardownError(f"cannot read launch template {template} of node group {group}: {exc}") from None
    profile = data.get("IamInstanceProfile", {}).get("Arn")
    if not profile:
        raise TeardownError(f"launch template {template} of node group {group} names no instance profile ARN")
    return {group: Ec2Group(str(template), str(profile))}


def gce_fleet(project: str, zone: str, *, blueprint: str, stack: str) -> GceFleet:
    """The cluster's VMs in a Compute Engine zone, with application default credentials; with no node
    groups of its own, it finds every flex-start MIG of the stack's, those of a group gone from the
    blueprint too."""
    return GceFleet(
        _SessionHttp(_google_session()), project=project, zone=zone, blueprint=blueprint, stack=stack
    )


class _SessionHttp:
    """The node programs' Http (gcp_http.py) over an authorized requests session; an HTTP error is a
    TeardownError with Google's message."""

    def __init__(self, session: requests.Session) -> None:
        self._session = session

    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        response = self._session.request(method, url, json=body, timeout=30)
        if response.status_code >= 300:
            raise TeardownError(
                f"{method} {url.split('?', 1)[0]}: HTTP {response.status_code}: {response.text}"
            )
        return response.json()


def _google_session() -> requests.Session:  # pragma: no cover - needs Google credentials
    import google.auth  # noqa: PLC0415 - lazy: only a real delete talks to Compute Engine
    import google.auth.exceptions  # noqa: PLC0415
    from google.auth.transport.requests import AuthorizedSession  # noqa: PLC0415

    try:
        credentials, _ = google.auth.default(scopes=[_COMPUTE_SCOPE])
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise TeardownError(f"no Google credentials to delete the instances Slurm created: {exc}") from None
    return AuthorizedSession(credentials)  # type: ignore[no-untyped-call]
