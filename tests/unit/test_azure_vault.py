"""A Key Vault secret named by its resource id: what a host may be granted and where it reads the secret.
Names follow Microsoft's rules (learn.microsoft.com/azure/key-vault/general/about-keys-secrets-certificates:
a secret's name 1-127 letters, digits and dashes; a vault's 3-24 letters, digits and dashes, starting with a
letter, ending with a letter or digit, no two dashes in a row), written out here rather than read from the
module's pattern."""

from __future__ import annotations

import pytest

from clusterfab.clouds.azure.vault import vault_secret

SUBSCRIPTION = "5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"
GROUP = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/ops"


@pytest.mark.parametrize(
    ("secret_id", "expected"),
    [
        (
            f"{GROUP}/providers/Microsoft.KeyVault/vaults/ops-mail/secrets/smtp-password",
            ("ops-mail", "smtp-password", "https://ops-mail.vault.azure.net/"),
        ),
        # Resource Manager's fixed words in any case, as `az` and the portal write them; the vault's host
        # name in lower case.
        (
            f"/subscriptions/{SUBSCRIPTION}/resourcegroups/Ops.Team_(1)/providers/microsoft.keyvault/VAULTS/"
            "OpsMail9/secrets/S",
            ("opsmail9", "S", "https://opsmail9.vault.azure.net/"),
        ),
        (
            f"{GROUP}/providers/Microsoft.KeyVault/vaults/abc/secrets/{'a' * 127}",
            ("abc", "a" * 127, "https://abc.vault.azure.net/"),
        ),
    ],
)
def test_a_secrets_resource_id_says_where_the_host_reads_it(
    secret_id: str, expected: tuple[str, str, str]
) -> None:
    found = vault_secret(secret_id)
    assert found is not None
    assert (found.vault, found.name, found.vault_url) == expected


@pytest.mark.parametrize(
    "secret_id",
    [
        "smtp-password",
        "https://ops-mail.vault.azure.net/secrets/smtp-password",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/ops-mail",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/ops-mail/secrets/*",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/ops-mail/secrets/smtp/versions/1",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/ops-mail/keys/smtp",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/ops--mail/secrets/smtp",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/9ops/secrets/smtp",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/ab/secrets/smtp",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/{'a' * 25}/secrets/smtp",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/ops-/secrets/smtp",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/ops/secrets/{'a' * 128}",
        f"{GROUP}/providers/Microsoft.KeyVault/vaults/ops/secrets/smtp_password",
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/ops./providers/Microsoft.KeyVault/vaults/ops/secrets/s",
        "/subscriptions/not-a-guid/resourceGroups/ops/providers/Microsoft.KeyVault/vaults/ops/secrets/s",
    ],
)
def test_anything_but_one_secrets_resource_id_is_refused(secret_id: str) -> None:
    assert vault_secret(secret_id) is None
