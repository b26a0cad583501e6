"""A Blob container an Azure Managed Lustre file system imports from (the blueprint's `import_path` on
Azure): the container's resource id, optionally followed by the prefix to import (default: all of it).

Azure Managed Lustre's blob integration (Lustre HSM, learn.microsoft.com/azure/azure-managed-lustre/
amlfs-prerequisites, "Blob integration prerequisites") takes the container's resource id
(`hsm.settings.container`), a second container in the same storage account for import and export logs
(`loggingContainer`: "Must be a separate container in the same storage account", Microsoft.StorageCache
AmlFilesystemHsmSettings), and an import prefix (`importPrefix`, "/" by default). Names follow
Microsoft.Storage's rules: an account has 3-24 lowercase letters and digits; a container 3-63 lowercase
letters, digits and hyphens, starting with a letter or digit, each hyphen between two of them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from clusterfab.clouds.azure.ids import GROUP_ID

CONTAINER_PATH = re.compile(
    rf"^(?P<account_id>{GROUP_ID}"
    r"/(?i:providers/Microsoft\.Storage/storageAccounts)/(?P<account>[a-z0-9]{3,24}))"
    r"/(?i:blobServices/default/containers)/(?P<container>[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62})"
    r"(?P<prefix>/[-\w./]*)?$"
)
CONTAINER_PATH_EXAMPLE = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/data/providers/Microsoft.Storage/"
    "storageAccounts/mldata/blobServices/default/containers/datasets/imagenet"
)
HPC_CACHE_PROVIDER_APP = "4392ab71-2ce2-4b0d-8770-b352745c73f5"
"""The application id of the "HPC Cache Resource Provider" service principal (Microsoft's first-party
application, the same in every tenant; amlfs-prerequisites names the principal, and `az role assignment
create --assignee` takes its application id)."""
LOGS_SUFFIX = "logs"
"""The logging container the stack makes beside the data container: `<file system>-logs`."""


class BlobImport(NamedTuple):
    account_id: str
    """The storage account's resource id."""
    group: str
    account: str
    container: str
    prefix: str
    """What Lustre imports: "/" for the whole container, else "/<prefix>" without a trailing slash."""

    @property
    def container_id(self) -> str:
        return f"{self.account_id}/blobServices/default/containers/{self.container}"


def blob_import(import_path: str) -> BlobImport | None:
    """The container and prefix `import_path` names; None when it names no Blob container."""
    match = CONTAINER_PATH.fullmatch(import_path)
    if match is None:
        return None
    prefix = (match["prefix"] or "/").rstrip("/") or "/"
    return BlobImport(match["account_id"], match["group"], match["account"], match["container"], prefix)
