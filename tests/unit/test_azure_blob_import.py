"""A Lustre file system's import_path in each cloud's form: a Blob container's resource id (and prefix) on
Azure, read into what Azure Managed Lustre's blob integration takes, and refused where the cloud cannot
import from it (BP255); on Azure a note says what the operator's storage account must allow (BP256). Names
follow Microsoft.Storage's rules, written out here: an account 3-24 lowercase letters and digits; a
container 3-63 lowercase letters, digits and hyphens, starting with a letter or digit, each hyphen between
two of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterfab.clouds.azure.blob import BlobImport, blob_import
from clusterfab.core.findings import Finding
from clusterfab.load import load
from tests.conftest import BAD_FIXTURES
from tests.factories import TODAY

ACCOUNT = (
    "/subscriptions/5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d/resourceGroups/data/providers/Microsoft.Storage/"
    "storageAccounts/mldata"
)
CONTAINER = f"{ACCOUNT}/blobServices/default/containers/datasets"


@pytest.mark.parametrize(
    ("path", "prefix"),
    [(CONTAINER, "/"), (f"{CONTAINER}/", "/"), (f"{CONTAINER}/imagenet/train/", "/imagenet/train")],
)
def test_a_container_and_its_prefix(path: str, prefix: str) -> None:
    assert blob_import(path) == BlobImport(ACCOUNT, "data", "mldata", "datasets", prefix)
    found = blob_import(path)
    assert found is not None
    assert found.container_id == CONTAINER


@pytest.mark.parametrize(
    "path",
    [
        "s3://ml-datasets/imagenet",
        ACCOUNT,
        f"{ACCOUNT}/blobServices/default/containers/Datasets",
        f"{ACCOUNT}/blobServices/default/containers/da",
        f"{ACCOUNT}/blobServices/default/containers/data--sets",
        f"{ACCOUNT}/blobServices/default/containers/-datasets",
        f"{ACCOUNT}/blobServices/default/containers/datasets/*",
        CONTAINER.replace("mldata", "ML-data"),
        CONTAINER.replace("mldata", "ml"),
        CONTAINER.replace("5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d", "sub"),
    ],
)
def test_anything_but_a_containers_resource_id_names_no_import(path: str) -> None:
    assert blob_import(path) is None


def _findings(path: Path, code: str) -> list[Finding]:
    return [f for f in load(path, display=path.name, today=TODAY).findings if f.code == code]


def test_an_import_path_on_azure_notes_what_the_storage_account_must_allow() -> None:
    (found,) = _findings(BAD_FIXTURES / "BP256-azure-lustre-blob-prerequisites.yaml", "BP256")
    assert (found.severity.value, found.field, found.line, found.column) == (
        "info",
        "storage[0].import_path",
        18,
        18,
    )
    assert found.message == (
        "Azure Managed Lustre imports datasets/imagenet from storage account mldata, where the stack makes a "
        "container for its logs: the account must let the HPC Cache Resource Provider in first"
    )
    assert found.hint == (
        "`az role assignment create --assignee 4392ab71-2ce2-4b0d-8770-b352745c73f5 --role 'Storage Account "
        f"Contributor' --scope {ACCOUNT}`, the same with 'Storage Blob Data Contributor', and `az storage "
        "account update --name mldata --allow-shared-key-access true`; `up` fails until they exist"
    )


def test_each_cloud_refuses_the_others_form(tmp_path: Path) -> None:
    text = f"""version: 1
name: fsx-import
cloud: aws
region: us-east-1
zone: us-east-1a
node_groups:
  - {{name: h100, machine_type: p5.48xlarge, count: 2}}
storage:
  - kind: lustre
    name: datasets
    capacity_gib: 4800
    mount_point: /datasets
    import_path: {CONTAINER}
"""
    path = tmp_path / "aws.yaml"
    path.write_text(text)
    (found,) = _findings(path, "BP255")
    assert (found.severity.value, found.field, found.line, found.column) == (
        "error",
        "storage[0].import_path",
        13,
        18,
    )
    assert found.message == f"'{CONTAINER}' is not an S3 location: FSx for Lustre imports from S3"
    assert found.hint == "write s3://bucket/prefix (a Blob container's resource id is Azure's form)"
    (azure,) = _findings(BAD_FIXTURES / "BP255-lustre-import-path-of-another-cloud.yaml", "BP255")[:1]
    assert azure.message == (
        "'s3://ml-datasets/imagenet' is not a Blob container's resource id: Azure Managed Lustre imports "
        "from a Blob container"
    )
