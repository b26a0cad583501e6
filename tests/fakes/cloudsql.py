"""A fake of the Cloud SQL Admin API (v1) and of the metadata server's access token, as the controller's
accounting program uses them (clusterfab/scheduler/slurm/nodes/accounting.py): instances.get, users.get,
users.insert, users.update and operations.get, with the VM service account's token.

Truth comes from outside: every request is matched against the methods of the discovery document
google-api-python-client ships (`sqladmin.v1`: flatPath and httpMethod, query parameters the method
has, the request body against its schema) and every answer the fake gives is checked against the method's
response schema (every key one of the schema's properties, every enum value one of the schema's, the
JSON types the schema says). What does not conform is recorded in `violations` (a test asserts it stays
empty) and answered 400, so a mistake in the program or in the fake cannot pass unnoticed.

`FakeCloudSql.http` is an in-memory `Http` (urllib's HTTPError for an HTTP error, as MetadataTokenHttp
raises it); `serve()` puts the same fake behind a real HTTP server with the metadata token endpoint, for
the program's own MetadataTokenHttp (tests/unit/test_slurm_accounting_gcp.py, and the Slurm lab's
tests/slurm/test_cloudsql_accounting_lab.py, where users.insert and users.update run SQL on the lab's
MariaDB through `set_password`).
"""

from __future__ import annotations

import datetime as dt
import http
import io
import json
import re
import threading
import urllib.error
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from tests.apimodels.models import _discovery
from tests.fakes.json_server import JsonServer

DOCUMENT = "sqladmin.v1"
METHODS = ("instances.get", "users.get", "users.insert", "users.update", "operations.get")
"""The Admin API methods the accounting program calls (`sql.<resource>.<method>` in the document)."""
TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
TOKEN = "ya29.lab-token"
REGION = "us-central1"


def document() -> dict[str, Any]:
    return _discovery(DOCUMENT)


# --- the discovery document's schemas --------------------------------------------------------------


def violations_of(schema: str | Mapping[str, Any], value: Any, where: str) -> list[str]:
    """What in `value` the discovery schema (a name, or a schema node) does not allow."""
    node: Mapping[str, Any] = {"$ref": schema} if isinstance(schema, str) else schema
    if "$ref" in node:
        node = document()["schemas"][node["$ref"]]
    kind = node.get("type")
    if kind == "object":
        return _object_violations(node, value, where)
    if kind == "array":
        if not isinstance(value, list):
            return [f"{where}: {value!r} is no array"]
        return [v for item in value for v in violations_of(node["items"], item, f"{where}[]")]
    if kind == "any":
        return []
    expected = {"string": str, "boolean": bool, "integer": int, "number": (int, float)}[kind]
    if not isinstance(value, expected) or (kind != "boolean" and isinstance(value, bool)):
        return [f"{where}: {value!r} is no {kind}"]
    if "enum" in node and value not in node["enum"]:
        return [f"{where}: {value!r} is none of {node['enum']}"]
    return []


def _object_violations(node: Mapping[str, Any], value: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {value!r} is no object"]
    if "properties" not in node:  # a map
        inner = node.get("additionalProperties", {"type": "any"})
        return [v for key, item in value.items() for v in violations_of(inner, item, f"{where}.{key}")]
    found = []
    for key, item in value.items():
        if key not in node["properties"]:
            found.append(f"{where}.{key} is no field of the API")
        else:
            found += violations_of(node["properties"][key], item, f"{where}.{key}")
    return found


@dataclass(frozen=True)
class Method:
    """One Admin API method as the discovery document states it."""

    id: str
    http_method: str
    path: re.Pattern[str]
    query: frozenset[str]
    request: str | None
    response: str | None


def methods() -> list[Method]:
    resources = document()["resources"]
    found = []
    for name in METHODS:
        resource, verb = name.split(".")
        method = resources[resource]["methods"][verb]
        pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", method["flatPath"])
        found.append(
            Method(
                id=method["id"],
                http_method=method["httpMethod"],
                path=re.compile(f"/{pattern}"),
                query=frozenset(k for k, v in method["parameters"].items() if v["location"] == "query"),
                request=method.get("request", {}).get("$ref"),
                response=method.get("response", {}).get("$ref"),
            )
        )
    return found


def route(http_method: str, path: str) -> tuple[Method, dict[str, str]] | None:
    """The method that answers `http_method path` (a path without its query), and the path's parameters."""
    for method in methods():
        match = method.path.fullmatch(path)
        if match and method.http_method == http_method:
            return method, {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()}
    return None


# --- the fake --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A request the fake answered (its method's id, as the discovery document names it)."""

    method: str
    path: str
    query: dict[str, str]
    body: Any


class OperationFailedError(Exception):
    """Raised by `set_password` when Cloud SQL would end the operation with an error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _google_error(status: int, message: str) -> dict[str, Any]:
    """Google's JSON error body (status and reason as the API puts them)."""
    reason = http.HTTPStatus(status).phrase
    return {"error": {"code": status, "message": message, "errors": [{"message": message, "reason": reason}]}}


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class FakeCloudSql:
    """One Cloud SQL for MySQL instance of one project, with its users and operations."""

    project: str
    instance: str
    private_ip: str
    server_ca: str | None
    """serverCaCert.cert (None: the instance names none)."""
    token: str = TOKEN
    set_password: Callable[[str, str, str, bool], None] | None = None
    """(name, host, password, created): what users.insert (created) and users.update do to the database;
    raises OperationFailedError for an operation that ends in an error. Default: only `users` changes."""
    state: str = "RUNNABLE"
    states: list[str] = field(default_factory=list)
    """States instances.get answers first, one per call, before `state`."""
    ip_types: tuple[str, ...] = ("PRIVATE",)
    users: dict[tuple[str, str], str] = field(default_factory=dict)
    """(name, host) -> password."""
    polls_before_done: int = 1
    """operations.get answers RUNNING this many times, then DONE."""
    operation_error: tuple[str, str] | None = None
    """(code, message) the next users operation ends with."""
    refuse: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Method id -> (HTTP status, message) it answers instead."""
    calls: list[Call] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    tokens_issued: int = 0
    _operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    _polls: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def link(self) -> str:
        return f"https://sqladmin.googleapis.com/v1/projects/{self.project}/instances/{self.instance}"

    # ------------------------------------------------------------------ requests
    def handle(
        self, http_method: str, target: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int, Any]:
        """Answer one request: (HTTP status, JSON body)."""
        with self._lock:
            split = urllib.parse.urlsplit(target)
            if split.path == TOKEN_PATH:
                return self._token(http_method, headers)
            return self._api(http_method, split.path, split.query, headers, body)

    def _token(self, http_method: str, headers: Mapping[str, str]) -> tuple[int, Any]:
        if http_method != "GET" or headers.get("Metadata-Flavor") != "Google":
            self.violations.append(f"{http_method} {TOKEN_PATH} without Metadata-Flavor: Google")
            return 403, {"error": "Missing Metadata-Flavor:Google header."}
        self.tokens_issued += 1
        return 200, {"access_token": self.token, "expires_in": 3599, "token_type": "Bearer"}

    def _api(
        self, http_method: str, path: str, query_text: str, headers: Mapping[str, str], raw: bytes | None
    ) -> tuple[int, Any]:
        found = route(http_method, path)
        if found is None:
            return self._violation(f"{http_method} {path} is no method of {DOCUMENT}")
        method, params = found
        query = dict(urllib.parse.parse_qsl(query_text, keep_blank_values=True))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return self._violation(f"{method.id}: the body is no JSON")
        self.calls.append(Call(method.id, path, query, body))
        problems = [f"{method.id}: no query parameter {k!r}" for k in query if k not in method.query]
        if method.request is None and body is not None:
            problems.append(f"{method.id} takes no body")
        if method.request is not None:
            problems += violations_of(method.request, body, f"{method.id} {method.request}")
        if problems:
            return self._violation(*problems)
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, _google_error(401, "Request had invalid authentication credentials.")
        if params.get("project") != self.project or params.get("instance", self.instance) != self.instance:
            return 403, _google_error(
                403, "The client is not authorized to make this request."
            )  # IAM: this instance only
        if method.id in self.refuse:
            status, message = self.refuse[method.id]
            return status, _google_error(status, message)
        status, answer = getattr(self, "_" + method.id.split(".", 1)[1].replace(".", "_"))(
            params, query, body
        )
        if status == 200:
            problems = violations_of(method.response or "", answer, f"{method.id} -> {method.response}")
            if problems:
                return self._violation(*problems)
        return status, answer

    def _violation(self, *problems: str) -> tuple[int, Any]:
        self.violations.extend(problems)
        return 400, _google_error(400, "; ".join(problems))

    # ------------------------------------------------------------------ methods
    def _instances_get(self, *_: Any) -> tuple[int, Any]:
        state = self.states.pop(0) if self.states else self.state
        answer: dict[str, Any] = {
            "kind": "sql#instance",
            "name": self.instance,
            "project": self.project,
            "state": state,
            "databaseVersion": "MYSQL_8_4",
            "backendType": "SECOND_GEN",
            "instanceType": "CLOUD_SQL_INSTANCE",
            "connectionName": f"{self.project}:{REGION}:{self.instance}",
            "region": REGION,
            "gceZone": f"{REGION}-b",
            "ipAddresses": [{"type": kind, "ipAddress": self.private_ip} for kind in self.ip_types],
            "settings": {
                "kind": "sql#settings",
                "tier": "db-custom-2-8192",
                "edition": "ENTERPRISE",
                "ipConfiguration": {
                    "ipv4Enabled": False,
                    "sslMode": "ENCRYPTED_ONLY",
                    "serverCaMode": "GOOGLE_MANAGED_INTERNAL_CA",
                },
            },
            "selfLink": self.link,
        }
        if self.server_ca is not None:
            answer["serverCaCert"] = {
                "kind": "sql#sslCert",
                "certSerialNumber": "0",
                "cert": self.server_ca,
                "commonName": "C=US,O=Google\\, Inc,CN=Google Cloud SQL Server CA",
                "instance": self.instance,
                "createTime": _now(),
                "expirationTime": (dt.datetime.now(dt.UTC) + dt.timedelta(days=3650)).strftime(
                    "%Y-%m-%dT%H:%M:%S.%fZ"
                ),
            }
        return 200, answer

    def _users_get(self, params: Mapping[str, str], query: Mapping[str, str], _: Any) -> tuple[int, Any]:
        key = (params["name"], query.get("host", ""))
        if key not in self.users:
            return 404, _google_error(404, f"The user {key[0]}@{key[1]} does not exist.")
        return 200, {
            "kind": "sql#user",
            "name": key[0],
            "host": key[1],
            "instance": self.instance,
            "project": self.project,
            "type": "BUILT_IN",
        }

    def _users_insert(self, _: Any, __: Any, body: Mapping[str, Any]) -> tuple[int, Any]:
        key = (str(body.get("name", "")), str(body.get("host", "")))
        if key in self.users:
            return 409, _google_error(409, f"The user {key[0]}@{key[1]} already exists.")
        return 200, self._user_operation("CREATE_USER", key, str(body.get("password", "")), created=True)

    def _users_update(self, _: Any, query: Mapping[str, str], body: Mapping[str, Any]) -> tuple[int, Any]:
        key = (query.get("name", ""), query.get("host", ""))
        if (body.get("name", key[0]), body.get("host", key[1])) != key:
            return 400, _google_error(400, "Invalid request: the body names another user than the URL.")
        if key not in self.users:
            return 404, _google_error(404, f"The user {key[0]}@{key[1]} does not exist.")
        return 200, self._user_operation("UPDATE_USER", key, str(body.get("password", "")), created=False)

    def _user_operation(self, kind: str, key: tuple[str, str], password: str, *, created: bool) -> Any:
        error = self.operation_error
        self.operation_error = None
        if error is None:
            try:
                if self.set_password is not None:
                    self.set_password(key[0], key[1], password, created)
                self.users[key] = password
            except OperationFailedError as failed:
                error = (failed.code, str(failed))
        name = str(uuid.uuid4())
        operation: dict[str, Any] = {
            "kind": "sql#operation",
            "name": name,
            "operationType": kind,
            "status": "PENDING",
            "targetId": self.instance,
            "targetProject": self.project,
            "targetLink": self.link,
            "user": f"controller@{self.project}.iam.gserviceaccount.com",
            "insertTime": _now(),
            "selfLink": f"https://sqladmin.googleapis.com/v1/projects/{self.project}/operations/{name}",
        }
        self._operations[name] = {**operation, "status": "DONE", "endTime": _now()}
        if error is not None:
            self._operations[name]["error"] = {
                "kind": "sql#operationErrors",
                "errors": [{"kind": "sql#operationError", "code": error[0], "message": error[1]}],
            }
        self._polls[name] = 0
        return operation

    def _operations_get(self, params: Mapping[str, str], *_: Any) -> tuple[int, Any]:
        name = params["operation"]
        if name not in self._operations:
            return 404, _google_error(404, f"The Cloud SQL operation {name} does not exist.")
        self._polls[name] += 1
        done = self._operations[name]
        if self._polls[name] <= self.polls_before_done:
            running = {k: v for k, v in done.items() if k not in ("error", "endTime")}
            return 200, {**running, "status": "RUNNING", "startTime": done["insertTime"]}
        return 200, done

    # ------------------------------------------------------------------ in memory
    def http(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        """The program's `Http`, with the service account's token, without a socket."""
        data = json.dumps(body).encode() if body is not None else None
        status, answer = self.handle(method, url, {"Authorization": f"Bearer {self.token}"}, data)
        if status >= 400:
            raise urllib.error.HTTPError(
                url,
                status,
                http.HTTPStatus(status).phrase,
                Message(),
                io.BytesIO(json.dumps(answer).encode()),
            )
        return answer


# --- over HTTP -------------------------------------------------------------------------------------


class GoogleServer(JsonServer):
    """The fake behind a real HTTP server: the metadata server's token and the Admin API."""

    def __init__(self, fake: FakeCloudSql, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(
            fake.handle,
            violations=fake.violations,
            fault=lambda error: _google_error(500, repr(error)),
            host=host,
            port=port,
        )
        self.fake = fake
        self.metadata_url = f"{self.url}/computeMetadata/v1"
        self.api_url = f"{self.url}/v1"
