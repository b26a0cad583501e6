"""Azure components built straight from their Args under the mock engine, with fixed computed outputs.

The mock engine's own Azure answers (the Azure profile's plan mocks) are not what these tests pin: each
run puts the values below first, so every computed attribute a component reads has a known value here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pulumi.runtime import mocks

from clusterfab.plan import engine
from clusterfab.plan.engine import PlannedResource, ProgramRun, run_program

RESOURCE_GROUP = "ml-rg"
LOCATION = "southcentralus"
SUBSCRIPTION = "00000000-0000-0000-0000-000000000001"
NAT_IP = "203.0.113.10"
PRINCIPAL_ID = "11111111-1111-1111-1111-111111111111"
CLIENT_ID = "22222222-2222-2222-2222-222222222222"
MGS_ADDRESS = "10.20.3.4"
MOUNT_COMMAND = f"sudo mount -t lustre -o noatime,flock {MGS_ADDRESS}@tcp:/lustrefs /lustre"


def _azure_outputs(typ: str, name: str) -> dict[str, Any]:
    """The computed attributes the Azure components read, per type token."""
    fixed: dict[str, dict[str, Any]] = {
        "azure-native:network:PublicIPAddress": {"ipAddress": NAT_IP},
        "azure-native:managedidentity:UserAssignedIdentity": {
            "principalId": PRINCIPAL_ID,
            "clientId": CLIENT_ID,
        },
        "azure-native:storage:StorageAccount": {
            "primaryEndpoints": {"blob": f"https://{name}.blob.core.windows.net/"}
        },
        "azure-native:storagecache:AmlFilesystem": {
            "clientInfo": {
                "containerStorageInterface": {},
                "lustreVersion": "2.15.7_29_gbae4fcd",
                "mgsAddress": MGS_ADDRESS,
                "mountCommand": MOUNT_COMMAND,
            }
        },
    }
    return fixed.get(typ, {})


SCALE_SET = "azure-native:compute:VirtualMachineScaleSet"


def _identity_as_azure_returns_it(state: dict[str, Any]) -> dict[str, Any]:
    """A scale set's `identity.userAssignedIdentities`: pulumi-azure-native takes a list of identity ids
    as input but its output type is a map (id -> principal and client id), as the API returns it; an
    echoed list fails the SDK's output translation."""
    identity = state.get("identity")
    if isinstance(identity, dict) and isinstance(identity.get("userAssignedIdentities"), list):
        ids = identity["userAssignedIdentities"]
        value = {"principalId": PRINCIPAL_ID, "clientId": CLIENT_ID}
        state = {**state, "identity": {**identity, "userAssignedIdentities": dict.fromkeys(ids, value)}}
    return state


def build(program: Callable[[], None]) -> ProgramRun:
    """Run `program` under the engine's mocks with the fixed Azure answers first (the first answer for a
    property wins) and scale sets' identities answered as Azure returns them."""
    profiles = engine._mock_outputs
    new_resource = engine._Mocks.new_resource

    def answer(self: engine._Mocks, args: mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = new_resource(self, args)
        return resource_id, _identity_as_azure_returns_it(state) if args.typ == SCALE_SET else state

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "_mock_outputs", lambda: [("azure-native:", _azure_outputs), *profiles()])
        patch.setattr(engine._Mocks, "new_resource", answer)
        return run_program(program, project="team-infra", stack="dev")


def by_name(run: ProgramRun) -> dict[str, PlannedResource]:
    return {r.name: r for r in run.resources}


def types(run: ProgramRun) -> dict[str, str]:
    return {r.name: r.type for r in run.resources}
