"""The SSH key of an Azure Linux VM's administrator account: a public key whose private half nobody holds.

Azure creates a Linux VM only with an administrator account that has a password or an SSH public key
(the Compute REST API's `osProfile.linuxConfiguration`); the cluster's hosts are reached through Run
Command and its agent, never over SSH from outside. So the program makes an Ed25519 key pair once, keeps
the public half in the stack's state and discards the private half: the account exists and no one can
log in to it with a key.

A dynamic resource, as the health signing key is (components/health_signing.py): made once at create,
never updated or replaced, so the scale sets' model never changes because of it.
"""

from __future__ import annotations

from typing import Any

import pulumi
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider


def public_key_without_holder() -> str:
    """An OpenSSH Ed25519 public key whose private key is dropped as soon as the public one is read."""
    private = Ed25519PrivateKey.generate()
    public = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return public.decode("ascii")


class AdminKeyProvider(ResourceProvider):
    """Makes the key at create; every later diff is empty, so the key never changes."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        public = public_key_without_holder()
        return CreateResult(f"admin-key-{public[-8:]}", {"public_key": public})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, props)

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=False)


class AdminSshKey(Resource, module="clusterfab", name="AzureAdminSshKey"):
    """`public_key`: an `ssh-ed25519 ...` line."""

    public_key: pulumi.Output[str]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(AdminKeyProvider(), name, {"public_key": None}, opts)
