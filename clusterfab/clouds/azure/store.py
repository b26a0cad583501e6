"""The cluster's storage container on Azure Blob Storage as the store of health records, through the `az`
CLI (`az storage blob ... --auth-mode login`: the caller's Microsoft Entra identity, which needs Storage
Blob Data Contributor on the container; the account allows no shared keys).

The stack's `bucket` output is `<storage account>/<container>`. An object's time is the blob's
`lastModified`, never the body's; the body read is the one of the version whose time is reported (the
download is conditional on the blob's ETag).
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from clusterfab.clouds.base import HealthStoreError, StoredObject

if TYPE_CHECKING:
    from clusterfab.outputs import StackOutputs

_MISSING = ("BlobNotFound", "The specified blob does not exist")


class AzureBlobHealthStore:
    def __init__(self, bucket: str) -> None:
        account, _, container = bucket.partition("/")
        if not account or not container:
            raise HealthStoreError(f"'{bucket}' is not an Azure storage container (<account>/<container>)")
        self.account, self.container = account, container

    def location(self, key: str) -> str:
        return f"https://{self.account}.blob.core.windows.net/{self.container}/{key}"

    def _az(self, key: str, *args: str) -> subprocess.CompletedProcess[str]:
        command = [
            "az", "storage", "blob", *args,
            "--auth-mode", "login",
            "--account-name", self.account,
            "--container-name", self.container,
            "--name", key,
            "--only-show-errors",
        ]  # fmt: skip
        try:
            return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise HealthStoreError(f"cannot reach {self.location(key)}: {exc}") from None

    def put(self, key: str, body: bytes) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "body.json"
            path.write_bytes(body)
            done = self._az(
                key, "upload", "--file", str(path), "--overwrite", "--content-type", "application/json"
            )
        if done.returncode != 0:
            raise HealthStoreError(f"cannot write {self.location(key)}: {done.stderr.strip()}")

    def get(self, key: str) -> StoredObject | None:
        shown = self._az(key, "show", "--query", "{etag: properties.etag, at: properties.lastModified}")
        if shown.returncode != 0:
            if any(marker in shown.stderr for marker in _MISSING):
                return None
            raise HealthStoreError(f"cannot read {self.location(key)}: {shown.stderr.strip()}")
        info = json.loads(shown.stdout)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "body"
            done = self._az(key, "download", "--file", str(path), "--if-match", info["etag"])
            if done.returncode != 0:
                raise HealthStoreError(f"cannot read {self.location(key)}: {done.stderr.strip()}")
            body = path.read_bytes()
        written = dt.datetime.fromisoformat(info["at"].replace("Z", "+00:00"))
        return StoredObject(body, written.astimezone(dt.UTC), self.location(key))


def health_store(outputs: StackOutputs) -> AzureBlobHealthStore:
    """The stack's storage container."""
    return AzureBlobHealthStore(outputs.bucket)
