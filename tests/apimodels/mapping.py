"""The mapping table: per Pulumi type token, each input's API model field (or why it has none)."""

from __future__ import annotations

from tests.apimodels.check import Free, Table, Target
from tests.apimodels.mapping_aws import AWS
from tests.apimodels.mapping_eks import EKS
from tests.apimodels.mapping_gcp import GCP
from tests.apimodels.mapping_gke import GKE

# Resources no cloud holds: their inputs reach no cloud API.
NO_CLOUD: dict[str, dict[str, Target]] = {
    # components/health_signing.py: the key is made by the dynamic provider and kept in the stack's state.
    "pulumi-python:dynamic/clusterfab:HealthSigningKey": {
        "__provider": Free(
            "the dynamic provider's serialized code: kept in the state, never sent to a cloud"
        ),
    },
    # components/azure/admin_key.py: the public key is made by the dynamic provider; the scale sets'
    # osProfile carries it, checked there against Azure's specification.
    "pulumi-python:dynamic/clusterfab:AzureAdminSshKey": {
        "__provider": Free(
            "the dynamic provider's serialized code: kept in the state, never sent to a cloud"
        ),
    },
}

MAPPINGS: dict[str, dict[str, Target]] = {**AWS, **GCP, **EKS, **GKE, **NO_CLOUD}
TABLES: dict[str, Table] = {token: Table(entries) for token, entries in MAPPINGS.items()}
