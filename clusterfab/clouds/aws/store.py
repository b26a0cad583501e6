"""The cluster bucket on S3 as the store of health records, through boto3.

An object's time is S3's `LastModified`, never the body's. Credentials are the caller's (the deploy
identity): boto3's default chain.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from clusterfab.clouds.base import HealthStoreError, StoredObject

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from clusterfab.outputs import StackOutputs


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


def health_store(outputs: StackOutputs) -> S3HealthStore:
    """The stack's cluster bucket, in the blueprint's region."""
    return S3HealthStore(outputs.bucket, outputs.blueprint.region)
