"""Managed accounting on AWS: the RDS instance's endpoint and its master user's credentials, from the
secret RDS manages for it in Secrets Manager (Ubuntu's python3-boto3); the SQL runs through MariaDB's own
client (accounting.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from .accounting import PORT, AccountingError, Master, prepare

REQUIRED = ("identifier", "region", "ca_bundle_url", "ca_file")
"""The accounting settings this cloud reads."""


class Rds(Protocol):
    def describe_db_instances(self, **kwargs: Any) -> Mapping[str, Any]: ...


class SecretsManager(Protocol):
    def get_secret_value(self, **kwargs: Any) -> Mapping[str, Any]: ...


def aws_master(rds: Rds, secrets: SecretsManager, identifier: str) -> Master:
    """The RDS instance's endpoint and master credentials (from the secret RDS manages for it)."""
    found = rds.describe_db_instances(DBInstanceIdentifier=identifier)["DBInstances"]
    if not found:
        raise AccountingError(f"RDS has no DB instance {identifier}")
    instance = found[0]
    endpoint = instance.get("Endpoint") or {}
    if "Address" not in endpoint:
        raise AccountingError(
            f"RDS instance {identifier} has no endpoint yet (status {instance.get('DBInstanceStatus')})"
        )
    secret = (instance.get("MasterUserSecret") or {}).get("SecretArn")
    if not secret:
        raise AccountingError(
            f"RDS instance {identifier} keeps no master user secret: it must be created with "
            "ManageMasterUserPassword"
        )
    value = secrets.get_secret_value(SecretId=secret)
    try:
        credentials = json.loads(value["SecretString"])
        user, password = str(credentials["username"]), str(credentials["password"])
    except (KeyError, TypeError, ValueError) as error:
        raise AccountingError(
            f"the master user secret of {identifier} holds no username and password"
        ) from error
    return Master(
        host=str(endpoint["Address"]), port=int(endpoint.get("Port", PORT)), user=user, password=password
    )


def aws_clients(settings: Mapping[str, Any]) -> tuple[Rds, SecretsManager]:
    # Ubuntu's python3-boto3 on the controller.
    import boto3  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    config = Config(region_name=settings["region"], retries={"mode": "standard", "max_attempts": 8})
    endpoint = settings.get("endpoint_url")  # a test stands in for AWS here; never set by the stack
    return (
        boto3.client("rds", config=config, endpoint_url=endpoint),
        boto3.client("secretsmanager", config=config, endpoint_url=endpoint),
    )


def prepare_rds(settings: Mapping[str, Any], password_file: str) -> dict[str, Any]:
    """Fetch the CA bundle, make slurmdbd's database and user as RDS's master user, and say where the
    database listens."""
    rds, secrets = aws_clients(settings)
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    def master() -> Master:
        try:
            return aws_master(rds, secrets, str(settings["identifier"]))
        except (BotoCoreError, ClientError) as error:
            raise AccountingError(f"AWS refused: {error}") from error

    return prepare(settings, password_file, master=master)
