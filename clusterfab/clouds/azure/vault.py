"""A Key Vault secret of the operator's, named by its resource id: the one scope a role assignment may give
a host (Azure RBAC assigns roles on a single secret: learn.microsoft.com/azure/key-vault/general/rbac-guide,
"Best Practices for individual keys, secrets, and certificates role assignments"), and where the host then
reads it (Get Secret: GET https://<vault>.vault.azure.net/secrets/<name>?api-version=7.4).

Resource Manager compares the fixed words of an id (resourceGroups, providers, vaults) without case; names
follow learn.microsoft.com/azure/key-vault/general/about-keys-secrets-certificates ("Object identifiers":
a secret's name has 1-127 letters, digits and dashes) and Microsoft.KeyVault's naming rules (a vault's
name has 3-24 letters, digits and dashes, starts with a letter, ends with a letter or digit).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from clusterfab.clouds.azure.ids import GROUP_ID

SECRET_ID = re.compile(
    rf"^{GROUP_ID}"
    r"/(?i:providers/Microsoft\.KeyVault/vaults)/(?P<vault>[a-zA-Z](?:[a-zA-Z0-9]|-(?!-)){1,22}[a-zA-Z0-9])"
    r"/(?i:secrets)/(?P<name>[A-Za-z0-9-]{1,127})$"
)
SECRET_ID_EXAMPLE = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/ops/providers/Microsoft.KeyVault/"
    "vaults/ops-vault/secrets/smtp-password"
)
VAULT_DNS_SUFFIX = "vault.azure.net"
"""Key Vault's data plane in Azure's public cloud."""


class VaultSecret(NamedTuple):
    vault: str
    """The vault's name, in lower case (as its host name has it)."""
    name: str

    @property
    def vault_url(self) -> str:
        """https://<vault>.vault.azure.net/"""
        return f"https://{self.vault}.{VAULT_DNS_SUFFIX}/"


def vault_secret(secret_id: str) -> VaultSecret | None:
    """Where a host reads the secret `secret_id` names; None when it names no one secret."""
    match = SECRET_ID.fullmatch(secret_id)
    if match is None:
        return None
    return VaultSecret(match["vault"].lower(), match["name"])
