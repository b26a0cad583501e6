"""The stack's health signing key: random bytes made once and kept only in the stack's state.

`clusterfab configure` signs the health record it writes to the cluster bucket with this key (HMAC-
SHA256) and `promote` takes only records signed with it (`clusterfab.health`). The bucket alone cannot
say who wrote a record: GCS has no per-prefix deny, and whoever may write a bucket (a person with
storage rights on the project) could otherwise write a passing record. The key reaches neither the
nodes nor the bucket; Pulumi keeps it encrypted as a secret output, readable with the stack's secrets
provider, as the deploy identity reads it.

A dynamic resource, because no cloud has to hold it and pulumi-random would add a provider plugin to
every deployment for one value. It has no inputs: it is never updated or replaced, only created once
and deleted with the stack.
"""

from __future__ import annotations

import secrets
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider

KEY_BYTES = 32
"""HMAC-SHA256's block is 64 bytes and its output 32: a 32-byte key is as strong as the MAC."""


class SigningKeyProvider(ResourceProvider):
    """Makes the key at create; every later diff is empty, so the key never changes."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(
            f"health-signing-key-{secrets.token_hex(4)}", {"key": secrets.token_hex(KEY_BYTES)}
        )

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, props)

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=False)


class HealthSigningKey(Resource, module="clusterfab", name="HealthSigningKey"):
    """`key`: 64 hex characters, a secret output."""

    key: pulumi.Output[str]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        secret = pulumi.ResourceOptions(additional_secret_outputs=["key"])
        super().__init__(
            SigningKeyProvider(), name, {"key": None}, pulumi.ResourceOptions.merge(opts, secret)
        )
