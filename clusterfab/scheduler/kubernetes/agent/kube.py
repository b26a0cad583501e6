"""The Kubernetes API as the agent uses it: a small Protocol (tests answer it from recorded responses) and
its in-cluster implementation over urllib, with the pod's service account."""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any, Protocol

TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
"""RFC 7386: the patch custom resources (Kueue's) take; a null removes a key (an annotation)."""
PAGE = 500
"""Items per list call: a cluster's Workloads can number thousands."""


class ApiError(Exception):
    """The API answered with an error status (`status`), or did not answer at all (status None)."""

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(f"{status or 'no answer'}: {message}")
        self.status = status


class Api(Protocol):
    def request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, content_type: str = JSON
    ) -> dict[str, Any]:
        """The JSON answer of one call to the API server; ApiError otherwise."""
        ...

    def scrape(self, url: str) -> str:
        """The text a metrics endpoint answers, asked with the agent's token; ApiError otherwise."""
        ...


def list_items(api: Api, path: str) -> list[dict[str, Any]]:
    """Every item of a list, page by page (`limit` / `continue`)."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        query = {"limit": str(PAGE), **({"continue": token} if token else {})}
        answer = api.request("GET", f"{path}?{urllib.parse.urlencode(query)}")
        items += answer.get("items") or []
        token = (answer.get("metadata") or {}).get("continue") or ""
        if not token:
            return items


class InCluster:
    """The API server of the cluster the pod runs in (KUBERNETES_SERVICE_HOST / _PORT), trusted through
    the service account's CA."""

    def __init__(
        self, base: str | None = None, token_path: str = TOKEN, ca_path: str | None = CA, timeout: float = 20
    ) -> None:
        self._base = base or _service_url(os.environ)
        self._token_path = token_path
        self._context = ssl.create_default_context(cafile=ca_path)
        self._timeout = timeout

    def _token(self) -> str:
        # Read on every call: a bound service account token is rotated by the kubelet (about hourly), and
        # a token held from the start would expire under a long-running agent.
        with open(self._token_path, encoding="utf-8") as handle:
            return handle.read().strip()

    def request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, content_type: str = JSON
    ) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": JSON, "Authorization": f"Bearer {self._token()}"}
        if data is not None:
            headers["Content-Type"] = content_type
        call = urllib.request.Request(self._base + path, data=data, method=method, headers=headers)
        answer: dict[str, Any] = json.loads(self._open(call, self._context))
        return answer

    def scrape(self, url: str) -> str:
        # Kueue's metrics endpoint serves a certificate Kueue signs itself (no CA the pod could trust), so
        # this one call does not verify it; the bearer token it sends is what the endpoint authorizes,
        # and the answer is only relayed as metrics, never acted on.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        call = urllib.request.Request(url, headers={"Authorization": f"Bearer {self._token()}"})
        return self._open(call, context).decode("utf-8", "replace")

    def _open(self, call: urllib.request.Request, context: ssl.SSLContext) -> bytes:
        try:
            with urllib.request.urlopen(call, context=context, timeout=self._timeout) as answer:
                body: bytes = answer.read()
                return body
        except urllib.error.HTTPError as error:
            raise ApiError(error.code, error.read().decode("utf-8", "replace")[:500]) from error
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise ApiError(None, str(error)) from error


def _service_url(environ: Mapping[str, str]) -> str:
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise ApiError(None, "KUBERNETES_SERVICE_HOST is not set: the agent runs in a pod")
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
