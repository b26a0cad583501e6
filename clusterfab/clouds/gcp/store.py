"""The cluster bucket on Cloud Storage as the store of health records, through its JSON API.

An object's time is GCS's `updated`, never the body's. Credentials are the caller's (the deploy
identity): google-auth's default chain. `STORAGE_EMULATOR_HOST` points the store at an emulator, as it
does google-cloud-storage.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from clusterfab.clouds.base import HealthStoreError, StoredObject

if TYPE_CHECKING:
    import requests

    from clusterfab.outputs import StackOutputs

GCS_API = "https://storage.googleapis.com"
_GCS_SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"


class GcsHealthStore:
    def __init__(self, bucket: str, session: requests.Session | None = None) -> None:
        self.bucket = bucket
        emulator = os.environ.get("STORAGE_EMULATOR_HOST")
        self._api = emulator.rstrip("/") if emulator else GCS_API
        self._session = session or _session(anonymous=bool(emulator))

    def location(self, key: str) -> str:
        return f"gs://{self.bucket}/{key}"

    def put(self, key: str, body: bytes) -> None:
        # A multipart upload: the object's metadata (its content type) and its bytes in one request.
        boundary = f"clusterfab-{secrets.token_hex(16)}"
        metadata = json.dumps({"name": key, "contentType": "application/json"})
        data = (
            (
                f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n"
                f"--{boundary}\r\nContent-Type: application/json\r\n\r\n"
            ).encode()
            + body
            + f"\r\n--{boundary}--\r\n".encode()
        )
        url = f"{self._api}/upload/storage/v1/b/{quote(self.bucket, safe='')}/o"
        response = self._call(
            "POST",
            url,
            key,
            params={"uploadType": "multipart"},
            data=data,
            headers={"Content-Type": f"multipart/related; boundary={boundary}"},
        )
        if response.status_code >= 300:
            raise HealthStoreError(f"cannot write {self.location(key)}: HTTP {response.status_code}")

    def get(self, key: str) -> StoredObject | None:
        url = f"{self._api}/storage/v1/b/{quote(self.bucket, safe='')}/o/{quote(key, safe='')}"
        meta = self._call("GET", url, key)
        if meta.status_code == 404:
            return None
        if meta.status_code >= 300:
            raise HealthStoreError(f"cannot read {self.location(key)}: HTTP {meta.status_code}")
        info = meta.json()
        # The body of exactly the generation whose time we report.
        body = self._call("GET", url, key, params={"alt": "media", "generation": info["generation"]})
        if body.status_code >= 300:
            raise HealthStoreError(f"cannot read {self.location(key)}: HTTP {body.status_code}")
        written = dt.datetime.fromisoformat(info["updated"].replace("Z", "+00:00"))
        return StoredObject(body.content, written.astimezone(dt.UTC), self.location(key))

    def _call(self, method: str, url: str, key: str, **kwargs: Any) -> requests.Response:
        import requests  # noqa: PLC0415

        try:
            return self._session.request(method, url, timeout=30, **kwargs)
        except requests.RequestException as exc:
            raise HealthStoreError(f"cannot reach {self.location(key)}: {exc}") from None


def health_store(outputs: StackOutputs) -> GcsHealthStore:
    """The stack's cluster bucket."""
    return GcsHealthStore(outputs.bucket)


def _session(*, anonymous: bool) -> requests.Session:
    import google.auth  # noqa: PLC0415 - lazy: only configure and promote talk to GCS
    import google.auth.exceptions  # noqa: PLC0415
    from google.auth.credentials import AnonymousCredentials  # noqa: PLC0415
    from google.auth.transport.requests import AuthorizedSession  # noqa: PLC0415

    if anonymous:
        return AuthorizedSession(AnonymousCredentials())  # type: ignore[no-untyped-call]
    try:
        credentials, _ = google.auth.default(scopes=[_GCS_SCOPE])
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise HealthStoreError(f"no Google credentials to reach the cluster bucket: {exc}") from None
    return AuthorizedSession(credentials)  # type: ignore[no-untyped-call]
