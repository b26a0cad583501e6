"""The cluster bucket on GCS: node bootstrap artifacts (playbook bundle, rendered vars), private."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_gcp as gcp

from components._naming import child
from components._outputs import known_after

TYPE = "clusterfab:storage:GcpClusterBucket"


@dataclass(frozen=True, kw_only=True)
class GcpClusterBucketArgs:
    project: str
    location: str
    """A region or multi-region."""
    protect: bool = False
    """Protect the bucket from deletion (stateful: it holds what nodes boot from)."""
    objects: Mapping[str, tuple[str, Path]] = field(default_factory=dict)
    """Files to upload: child role -> (object name, local path), e.g. the playbook bundle."""
    kms_key_name: str | None = None
    """A Cloud KMS key (projects/P/locations/L/keyRings/R/cryptoKeys/K, in the bucket's location) new
    objects are encrypted with by default; default Google's own keys. The Cloud Storage service agent
    needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it; readers need nothing more."""
    labels: Mapping[str, str] = field(default_factory=dict)


class GcpClusterBucket(pulumi.ComponentResource):
    """A GCS bucket with uniform access, public access prevention enforced and versioning.

    Objects are encrypted with Google-managed keys, or the customer's key; node service accounts get read
    access to this bucket alone (see components.gcp.identity).

    Unlike an S3 bucket it takes no TLS-only policy, because GCS has none to take: "JSON API endpoints
    only accept HTTPS requests", while "XML API endpoints support ... either HTTP or HTTPS"
    (cloud.google.com/storage/docs/request-endpoints), and Cloud Storage documents no bucket setting
    that refuses the latter. Nodes and clusterfab use the JSON API (https://storage.googleapis.com/storage/v1/...);
    an XML API request over plain HTTP reaches this bucket only with a credential, as the bucket is
    private (uniform access, public access prevention enforced).
    """

    bucket_name: pulumi.Output[str]
    """The bucket's name (auto-named: a random suffix keeps it globally unique). Unlike the other GCP
    resources (components._naming.gcp_name) it never takes a name of its own: a name derived from the
    cluster and stack could be taken first by anyone, and `<cluster>-artifacts-bucket` with its suffix is at
    most 56 characters, within GCS's 63."""
    bucket_url: pulumi.Output[str]
    """gs://<name>."""

    def __init__(
        self, name: str, args: GcpClusterBucketArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        bucket = gcp.storage.Bucket(
            child(name, "bucket"),
            project=args.project,
            location=args.location.upper(),
            storage_class="STANDARD",
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            versioning=gcp.storage.BucketVersioningArgs(enabled=True),
            encryption=(
                gcp.storage.BucketEncryptionArgs(default_kms_key_name=args.kms_key_name)
                if args.kms_key_name is not None
                else None
            ),
            # An unprotected bucket goes with its stack, versions and all (else `destroy` fails on it).
            force_destroy=not args.protect,
            labels=dict(args.labels),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        uploads = [
            gcp.storage.BucketObject(
                child(name, role),
                bucket=bucket.name,
                name=key,
                source=pulumi.FileAsset(str(path)),
                content_type="application/gzip",
                opts=pulumi.ResourceOptions(parent=self),
            )
            for role, (key, path) in sorted(args.objects.items())
        ]
        self.bucket_name = bucket.name
        self.uploaded_name = known_after(bucket.name, uploads)
        """The bucket's name once `objects` are uploaded: a boot script that fetches them names it, so the
        hosts that run the script are created, or follow it, only after the uploads."""
        self.bucket_url = pulumi.Output.concat("gs://", bucket.name)
        self.register_outputs({"bucket_name": bucket.name, "bucket_url": self.bucket_url})
