"""JSON over HTTPS to Google's APIs with the VM's service account, as the GCP node programs call them (the
fleet's Compute Engine, managed accounting's Cloud SQL Admin API): no SDK, Ubuntu's python3 alone."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping
from typing import Any

from .bearer import Bearer, Http

__all__ = ["HTTP_NOT_FOUND", "METADATA", "Http", "MetadataTokenHttp"]

METADATA = "http://metadata.google.internal/computeMetadata/v1"
HTTP_NOT_FOUND = 404


class MetadataTokenHttp:
    """JSON over HTTPS with the VM service account's token from the metadata server (no SDK: Ubuntu's
    python3 alone runs this program)."""

    def __init__(self, metadata: str = METADATA) -> None:
        self._metadata = metadata
        self._bearer = Bearer(self._token)

    def _token(self) -> Any:
        request = urllib.request.Request(
            f"{self._metadata}/instance/service-accounts/default/token", headers={"Metadata-Flavor": "Google"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            url,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self._bearer()}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)
