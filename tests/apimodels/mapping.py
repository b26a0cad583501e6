"""The mapping table: per Pulumi type token, each input's API model field (or why it has none)."""

from __future__ import annotations

from tests.apimodels.check import Table, Target
from tests.apimodels.mapping_aws import AWS
from tests.apimodels.mapping_gcp import GCP

MAPPINGS: dict[str, dict[str, Target]] = {**AWS, **GCP}
TABLES: dict[str, Table] = {token: Table(entries) for token, entries in MAPPINGS.items()}
