"""A small client of a cluster's API server, from the stack's outputs: its endpoint, its CA and the cloud's
credential plugin (clusterfab.clouds.kubernetes), run as kubectl runs an `exec` user.

The check talks through the KubeApi Protocol; tests give it recorded answers instead. The real client is
urllib over TLS verified against the cluster's own CA; the token comes from the plugin's ExecCredential
(`status.token`, client.authentication.k8s.io/v1beta1) and is fetched again before its
`expirationTimestamp` (EKS tokens last 15 minutes, shorter than a level-3 check) or after a 401.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import shutil
import ssl
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any, Protocol

from clusterfab.clouds.kubernetes import ExecCredential
from clusterfab.core.errors import UsageError
from clusterfab.scheduler.kubernetes.kubeconfig import EXEC_API_VERSION

Query = Mapping[str, str]


class ApiError(RuntimeError):
    """The API server answered with an error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class KubeApi(Protocol):
    """The calls the check makes: JSON in and out, but a pod's log, which is text."""

    def get(self, path: str, query: Query | None = None) -> Any: ...

    def log(self, path: str, query: Query | None = None) -> str: ...

    def create(self, path: str, body: Mapping[str, Any]) -> Any: ...

    def patch(self, path: str, body: Mapping[str, Any]) -> Any:
        """A JSON merge patch (application/merge-patch+json)."""
        ...

    def delete(self, path: str, query: Query | None = None) -> Any: ...


class HttpKubeApi:
    """The API server at `endpoint` (a URL or a bare host, as GKE gives it), trusted through `ca_b64`."""

    def __init__(self, endpoint: str, ca_b64: str, credential: ExecCredential, timeout: float = 60) -> None:
        self.server = endpoint if endpoint.startswith("https://") else f"https://{endpoint}"
        self.context = ssl.create_default_context(cadata=base64.b64decode(ca_b64).decode("ascii"))
        self.credential = credential
        self.timeout = timeout
        self._token: tuple[str, dt.datetime | None] | None = None

    def get(self, path: str, query: Query | None = None) -> Any:
        return json.loads(self._call("GET", path, query))

    def log(self, path: str, query: Query | None = None) -> str:
        return self._call("GET", path, query)

    def create(self, path: str, body: Mapping[str, Any]) -> Any:
        return json.loads(self._call("POST", path, None, body, "application/json"))

    def patch(self, path: str, body: Mapping[str, Any]) -> Any:
        return json.loads(self._call("PATCH", path, None, body, "application/merge-patch+json"))

    def delete(self, path: str, query: Query | None = None) -> Any:
        return json.loads(self._call("DELETE", path, query))

    def _call(
        self,
        method: str,
        path: str,
        query: Query | None,
        body: Mapping[str, Any] | None = None,
        content_type: str | None = None,
    ) -> str:
        url = self.server + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (1, 2):
            request = urllib.request.Request(url, data=data, method=method)
            request.add_header("Authorization", f"Bearer {self._bearer(renew=attempt == 2)}")
            request.add_header("Accept", "application/json")
            if content_type:
                request.add_header("Content-Type", content_type)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as answer:
                    text: str = answer.read().decode("utf-8", "replace")
                    return text
            except urllib.error.HTTPError as err:
                if err.code == 401 and attempt == 1:
                    continue
                raise ApiError(err.code, _message(err.read().decode("utf-8", "replace"))) from None
            except (urllib.error.URLError, TimeoutError, OSError) as err:
                raise UsageError(f"cannot reach the cluster's API server at {self.server}: {err}") from None
        raise AssertionError("unreachable")

    def _bearer(self, renew: bool) -> str:
        now = dt.datetime.now(dt.UTC)
        if self._token is not None and not renew:
            token, expires = self._token
            if expires is None or expires - now > dt.timedelta(seconds=60):
                return token
        self._token = exec_token(self.credential)
        return self._token[0]


def exec_token(credential: ExecCredential) -> tuple[str, dt.datetime | None]:
    """Run the credential plugin as kubectl does (KUBERNETES_EXEC_INFO, not interactive); its token and
    when it expires. UsageError when the plugin is missing or fails."""
    if shutil.which(credential.command) is None:
        raise UsageError(f"clusterfab health needs {credential.command} on PATH: {credential.install_hint}")
    info = {"apiVersion": EXEC_API_VERSION, "kind": "ExecCredential", "spec": {"interactive": False}}
    env = {**os.environ, **dict(credential.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
    ran = subprocess.run(
        [credential.command, *credential.args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    try:
        status = json.loads(ran.stdout)["status"]
        token = str(status["token"])
    except (ValueError, KeyError, TypeError):
        why = (ran.stderr or ran.stdout).strip().splitlines()
        raise UsageError(
            f"{credential.command} gave no token (exit {ran.returncode}): {why[-1] if why else ''}"
        ) from None
    expires = status.get("expirationTimestamp")
    return token, dt.datetime.fromisoformat(expires.replace("Z", "+00:00")) if expires else None


def _message(body: str) -> str:
    """The Status object's message, else the body as it came."""
    try:
        return str(json.loads(body).get("message") or body)
    except (ValueError, AttributeError):
        return body.strip()
