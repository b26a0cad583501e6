"""A stand-in for what the controller's accounting program calls on Azure: the instance metadata service
(the VM's compute metadata and its managed identity's token) and Resource Manager's Servers - Get and
Servers - Update of one Azure Database for MySQL flexible server (api-version 2023-12-30).

It answers as Azure does where the program depends on it: the metadata service wants the `Metadata: true`
header and a token for the identity the request names (`client_id`, the one the controller's tag names:
the VM has a second, system-assigned identity); Resource Manager wants that token, and an update of the
administrator password answers 202 Accepted with no body and the operation's URL (Azure-AsyncOperation),
which answers Succeeded; the server reads Updating until then. Every request is kept (`calls`), the
password never (`passwords` holds them for the test alone); what the program asks that Azure would refuse
is a violation."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.json_server import Answer, JsonServer

TOKEN = "lab-arm-token"
ACCEPTED = 202
API_VERSION = "2023-12-30"


@dataclass
class FakeFlexibleServer:
    subscription: str
    resource_group: str
    name: str
    host: str
    client_id: str
    """The controller's own identity, which its IDENTITY_TAG names."""
    set_password: Callable[[str], None]
    """Carries out an administrator password update (as the service does, on the server itself)."""
    state: str = "Ready"
    calls: list[tuple[str, str]] = field(default_factory=list)
    passwords: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    accepted: int = 0
    """Password updates accepted: the server answers each with its operation's URL."""

    @property
    def operation_path(self) -> str:
        """Where the password update's long-running operation answers (its Azure-AsyncOperation)."""
        return (
            f"/subscriptions/{self.subscription}/providers/Microsoft.DBforMySQL/locations/eastus"
            "/azureAsyncOperation/op-1"
        )

    @property
    def path(self) -> str:
        return (
            f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"
            f"/providers/Microsoft.DBforMySQL/flexibleServers/{self.name}"
        )

    def handle(self, method: str, url: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        path, _, query = url.partition("?")
        params = dict(urllib.parse.parse_qsl(query))
        self.calls.append((method, path))
        if path.startswith("/metadata/"):
            if headers.get("Metadata") != "true":
                self.violations.append(f"{method} {path} without the Metadata header")
                return 400, {"error": "bad_request"}
            if path == "/metadata/identity/oauth2/token":
                if params.get("client_id") != self.client_id:
                    self.violations.append(f"a token for {params.get('client_id')!r}, not the controller's")
                    return 400, {"error": "invalid_request"}
                if params.get("resource") != "https://management.azure.com/":
                    self.violations.append(f"a token for {params.get('resource')!r}")
                return 200, {"access_token": TOKEN, "expires_in": "3599", "token_type": "Bearer"}
            return 200, {
                "subscriptionId": self.subscription,
                "resourceGroupName": self.resource_group,
                "tagsList": [{"name": "clusterfab-identity", "value": self.client_id}],
            }
        if headers.get("Authorization") != f"Bearer {TOKEN}":
            return 401, {"error": {"code": "AuthenticationFailed", "message": "no token"}}
        if path not in (self.path, self.operation_path) or params.get("api-version") != API_VERSION:
            self.violations.append(f"{method} {url}: no such server or API version")
            return 404, {"error": {"code": "ResourceNotFound", "message": path}}
        if method == "PATCH":
            return self._update(body)
        if path == self.operation_path:
            self.state = "Ready"
            return 200, {"name": "op-1", "status": "Succeeded"}
        if method != "GET":
            self.violations.append(f"{method} {path}: the controller's role allows read and write only")
            return 403, {"error": {"code": "AuthorizationFailed", "message": method}}
        found = {
            "id": self.path,
            "name": self.name,
            "type": "Microsoft.DBforMySQL/flexibleServers",
            "properties": {
                "administratorLogin": "clusterfab",
                "fullyQualifiedDomainName": self.host,
                "state": self.state,
                "version": "8.4",
            },
        }
        return 200, found

    def _update(self, body: Any) -> tuple[int, Any]:
        properties = (body or {}).get("properties") if isinstance(body, dict) else None
        if (
            not isinstance(properties, dict)
            or set(body) != {"properties"}
            or set(properties) != {"administratorLoginPassword"}
        ):
            self.violations.append(f"an update of more than the administrator password: {sorted(body or {})}")
            return 400, {"error": {"code": "InvalidRequest", "message": "unexpected update"}}
        password = str(properties["administratorLoginPassword"])
        self.passwords.append(password)
        self.set_password(password)
        self.state = "Updating"
        self.accepted += 1
        return 202, None


class AzureServer(JsonServer):
    """The fake behind a real HTTP server; an accepted update names its operation's URL on this server."""

    def __init__(self, fake: FakeFlexibleServer, host: str = "127.0.0.1", port: int = 0) -> None:
        def handle(method: str, path: str, headers: dict[str, str], body: bytes | None) -> Answer:
            status, answer = fake.handle(method, path, headers, json.loads(body) if body else None)
            if status != ACCEPTED:
                return status, answer
            operation = f"{self.url}{fake.operation_path}?api-version={API_VERSION}"
            return status, answer, {"Azure-AsyncOperation": operation}

        super().__init__(
            handle,
            violations=fake.violations,
            fault=lambda error: {"error": {"code": "InternalError", "message": repr(error)}},
            host=host,
            port=port,
        )
