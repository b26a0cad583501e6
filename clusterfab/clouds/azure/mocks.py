"""What the offline plan engine's mocks answer for azure-native resources and calls
(`CloudProfile.plan_mocks`).

Deterministic placeholders, derived from the resource's name, for the computed attributes the realizer
wires between resources; addresses are documentation addresses (RFC 5737 192.0.2.0/24, 203.0.113.0/24),
identities fixed UUIDs, so plans and golden files stay stable.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from clusterfab.clouds.azure.discovery import SUBSCRIPTION_SETTING
from clusterfab.clouds.base import ComputedOutputs, PlanMocks

MOCK_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
_NAMESPACE = uuid.UUID("6f1c2d3e-4a5b-4c6d-8e7f-901234567890")


def _uuid(kind: str, name: str) -> str:
    """A UUID that depends only on what it is and the resource's name."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}/{name}"))


def _identities_as_returned(given: Any) -> Any:
    """A scale set's `identity` as Azure returns it: the user-assigned identities it was given as a list
    of ids come back as a map of id -> principal and client id (the SDK's output type; a list echoed back
    fails its output translation)."""
    if not isinstance(given, Mapping) or not isinstance(given.get("userAssignedIdentities"), list):
        return given
    ids = given["userAssignedIdentities"]
    found = {i: {"principalId": _uuid("principal", str(i)), "clientId": _uuid("client", str(i))} for i in ids}
    return {**given, "userAssignedIdentities": found}


def _vm_identity(name: str) -> Any:
    """A VM's `identity` as returned: the user-assigned ones as a map, and with a system-assigned identity
    its object id (`principalId`) and tenant."""

    def returned(given: Any) -> Any:
        found = _identities_as_returned(given)
        if isinstance(found, Mapping) and "SystemAssigned" in str(found.get("type", "")):
            return {**found, "principalId": _uuid("system", name), "tenantId": MOCK_SUBSCRIPTION}
        return found

    return returned


OUTPUTS: dict[str, ComputedOutputs] = {
    "azure-native:resources:ResourceGroup": lambda _t, name: {"name": name},
    "azure-native:storage:StorageAccount": lambda _t, name: {
        "name": name,
        "primaryEndpoints": {"blob": f"https://{name}.blob.core.windows.net/"},
    },
    "azure-native:managedidentity:UserAssignedIdentity": lambda _t, name: {
        "principalId": _uuid("principal", name),
        "clientId": _uuid("client", name),
        "tenantId": MOCK_SUBSCRIPTION,
    },
    "azure-native:storagecache:AmlFilesystem": lambda _t, name: {
        "clientInfo": {
            "containerStorageInterface": {},
            "lustreVersion": "2.15.7_29_gbae4fcd",
            "mgsAddress": "192.0.2.10",
            "mountCommand": "sudo mount -t lustre -o noatime,flock 192.0.2.10@tcp:/lustrefs /lustre",
        }
    },
    "azure-native:compute:VirtualMachineScaleSet": lambda _t, name: {"identity": _identities_as_returned},
    "azure-native:compute:VirtualMachine": lambda _t, name: {"identity": _vm_identity(name)},
    # The vault's address, from its logical name (its real name is known once the stack's key exists).
    "azure-native:keyvault:Vault": lambda _t, name: {
        "properties": lambda given: {**(given or {}), "vaultUri": f"https://{name}.vault.azure.net/"}
    },
    "azure-native:network:PublicIPAddress": lambda _t, name: {"ipAddress": "203.0.113.10"},
    # A flexible server's host name has this form; the mock names it by the logical name.
    "azure-native:dbformysql:Server": lambda _t, name: {
        "fullyQualifiedDomainName": f"{name}.mysql.database.azure.com",
        "state": "Ready",
    },
}
"""Per type token (the engine gives every resource its logical name as `name` unless an input sets it)."""


def call(token: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
    if token == "azure-native:authorization:getClientConfig":
        return {
            "subscriptionId": MOCK_SUBSCRIPTION,
            "tenantId": MOCK_SUBSCRIPTION,
            "clientId": _uuid("client", "deployer"),
            "objectId": _uuid("principal", "deployer"),
        }
    del args
    return None


PLAN_MOCKS = PlanMocks(outputs=OUTPUTS, call=call, settings={SUBSCRIPTION_SETTING: MOCK_SUBSCRIPTION})
