"""The cluster bucket as the store of health records: S3 through boto3, GCS through its JSON API.

Both read the object's time from the service (S3 `LastModified`, GCS `updated`), never from the
body. Credentials are the caller's (the deploy identity): boto3's and google-auth's default chains.
`STORAGE_EMULATOR_HOST` points the GCS store at an emulator, as it does google-cloud-storage.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from clusterfab.core.errors import ClusterfabError
from clusterfab.health import StoredObject

if TYPE_CHECKING:
    import requests
    from mypy_boto3_s3 import S3Client

GCS_API = "https://storage.googleapis.com"
_GCS_SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"


class HealthStoreError(ClusterfabError):
    """The bucket could not be read or written (exit 1); the message says which and why."""

    exit_code = 1


class S3HealthStore:
    def __init__(self, bucket: str, region: str, client: S3Client | None = None) -> None:
        self.bucket = bucket
        if client is None:
            import boto3  # noqa: PLC0415 - lazy: only configure and promote talk to S3

            client = boto3.client("s3", region_name=region)
        self._s3 = client

    def location(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def put(self, key: str, body: bytes) -> None:
        from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

        try:
            self._s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")
        except (BotoCoreError, ClientError) as exc:
            raise HealthStoreError(f"cannot write {self.location(key)}: {exc}") from None

    def get(self, key: str) -> StoredObject | None:
        from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

        try:
            found = self._s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"NoSuchKey", "404"}:
                return None
            raise HealthStoreError(f"cannot read {self.location(key)}: {exc}") from None
        except BotoCoreError as exc:
            raise HealthStoreError(f"cannot read {self.location(key)}: {exc}") from None
        written: dt.datetime = found["LastModified"]
        return StoredObject(found["Body"].read(), written.astimezone(dt.UTC), self.location(key))


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
