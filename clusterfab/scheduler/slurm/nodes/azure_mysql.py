"""Managed accounting on Azure: Azure Database for MySQL flexible server, through Resource Manager.

Azure keeps no administrator password for the controller to read (RDS keeps one in Secrets Manager) and has
no users API (Cloud SQL's Admin API makes users). So the controller makes the administrator's password
itself, on its state disk beside slurmdbd's and for root alone, and gives it to the server at every run
through Servers - Update (PATCH .../Microsoft.DBforMySQL/flexibleServers/{name} with
properties.administratorLoginPassword; learn.microsoft.com/rest/api/mysql/flexibleserver/servers/update),
a long-running operation whose Azure-AsyncOperation URL it polls until the update succeeded, with its
managed identity, whose custom role allows reading and updating this one server. Giving the same
password again changes nothing, and a server the stack made anew (with its own random password) gets the
controller's. It waits for the server to be Ready (Servers - Get: properties.state, fullyQualifiedDomainName,
administratorLogin) and, signed in as the administrator over TLS checked against the root certificates Azure
signs the servers' certificates with, makes slurmdbd's database user (accounting.py). The roots are read
from the host's own trust store (Ubuntu's ca-certificates), by the file names the settings give: nothing
is downloaded.
"""

from __future__ import annotations

import os
import secrets
import string
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .accounting import PORT, AccountingError, Master, install_ca_bundle, make_user
from .bearer import Http

REQUIRED = ("identifier", "ca_file", "ca_certificates")
"""The accounting settings this cloud reads."""
API_VERSION = "2023-12-30"
"""Microsoft.DBforMySQL's generally available API version of both requests."""
ADMINISTRATOR_PASSWORD = "mysql-administrator.pass"
"""The administrator's password file, in the directory of slurmdbd's (the state disk)."""
READY = "Ready"
WAITING_STATES = ("Starting", "Updating")
"""A server being created, started or updated (its password too) comes back Ready on its own."""
SUCCEEDED = "Succeeded"
FINISHED = (SUCCEEDED, "Failed", "Canceled")
"""The final statuses of a long-running operation (Resource Manager's asynchronous operations)."""
POLLS = 60
POLL_S = 5.0
"""A waiting server, and an operation, are polled this many times, this far apart."""
ROOTS_MAX = 1 << 20
"""A root certificate is a few KiB: more is not one."""
_ALPHABET = string.ascii_letters + string.digits


class FlexibleServer:
    """One flexible server of the controller's resource group, through Resource Manager."""

    def __init__(
        self,
        http: Http,
        *,
        subscription: str,
        resource_group: str,
        name: str,
        api: str,
        polls: int = POLLS,
        poll_s: float = POLL_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        quoted = urllib.parse.quote
        self._url = (
            f"{api}/subscriptions/{quoted(subscription)}/resourceGroups/{quoted(resource_group)}"
            f"/providers/Microsoft.DBforMySQL/flexibleServers/{quoted(name)}?api-version={API_VERSION}"
        )
        self._http, self._name = http, name
        self._polls, self._poll_s, self._sleep = polls, poll_s, sleep

    def ready(self) -> tuple[str, str]:
        """The server's host name and administrator login, once it is Ready."""
        found = self._poll(self._url, lambda answer: _state(answer) not in WAITING_STATES)
        properties = found.get("properties") or {}
        if properties.get("state") != READY:
            raise AccountingError(f"flexible server {self._name} is {properties.get('state')}, not {READY}")
        host, login = properties.get("fullyQualifiedDomainName"), properties.get("administratorLogin")
        if not host or not login:
            raise AccountingError(f"flexible server {self._name} names no host name or administrator login")
        return str(host), str(login)

    def set_administrator_password(self, password: str) -> None:
        """Servers - Update, a long-running operation: 202 Accepted, then its Azure-AsyncOperation URL
        answers InProgress until the password is the server's (Succeeded) or it failed."""
        self._call("PATCH", {"properties": {"administratorLoginPassword": password}})
        operation = getattr(self._http, "operation", None)
        if operation:
            self._wait(str(operation))

    def _wait(self, operation: str) -> None:
        found = self._poll(operation, lambda answer: answer.get("status") in FINISHED)
        status = found.get("status")
        if status != SUCCEEDED:
            error = found.get("error") or {}
            detail = f": {error.get('code')}: {error.get('message')}" if error else ""
            raise AccountingError(
                f"the password update of flexible server {self._name} is {status}, not {SUCCEEDED}{detail}"
            )

    def _poll(self, url: str, settled: Callable[[Mapping[str, Any]], bool]) -> Any:
        """GET `url` until its answer is settled, or the polls are spent; the last answer."""
        found = self._call("GET", url=url)
        for _ in range(self._polls):
            if settled(found):
                break
            self._sleep(self._poll_s)
            found = self._call("GET", url=url)
        return found

    def _call(self, method: str, body: Mapping[str, Any] | None = None, *, url: str = "") -> Any:
        try:
            return self._http(method, url or self._url, body) or {}
        except Exception as error:
            code = getattr(error, "code", None) or type(error).__name__
            raise AccountingError(
                f"Resource Manager refused {method} of flexible server {self._name} ({code}): {error}"
            ) from error


def _state(found: Mapping[str, Any]) -> Any:
    return (found.get("properties") or {}).get("state")


def new_administrator_password() -> str:
    """32 random letters and digits around a hyphen: Azure asks for three of four kinds of characters
    (upper case, lower case, digits, others), and the hyphen needs no quoting in the client's option file."""
    while True:
        word = "".join(secrets.choice(_ALPHABET) for _ in range(32))
        if any(c.islower() for c in word) and any(c.isupper() for c in word):
            return f"{word[:16]}-{word[16:]}"


def administrator_password(path: str) -> str:
    """The administrator's password from `path`, made there (0600, root's) when it is not there yet."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with open(path, encoding="ascii") as handle:
            password = handle.read().strip()
        if len(password) < 8:
            raise AccountingError(f"{path} holds no administrator password") from None
        return password
    password = new_administrator_password()
    with os.fdopen(descriptor, "w", encoding="ascii") as handle:
        handle.write(password + "\n")
    return password


def install_roots(paths: Sequence[str], destination: str) -> int:
    """Install the root certificates at `paths` (PEM files of the host's trust store) as the CA bundle."""
    texts = []
    for path in paths:
        try:
            with open(path, encoding="ascii") as handle:
                texts.append(handle.read(ROOTS_MAX))
        except (OSError, UnicodeDecodeError) as error:
            raise AccountingError(f"the root certificate {path} cannot be read: {error}") from error
    return install_ca_bundle("\n".join(texts), destination, origin=", ".join(paths))


def prepare_azure(
    settings: Mapping[str, Any],
    password_file: str,
    *,
    server: FlexibleServer,
    sql: Callable[[Master, str, str], None] | None = None,
) -> dict[str, Any]:
    """Install the roots, give the server the controller's administrator password, make slurmdbd's user as
    that administrator, and say where the database listens."""
    install_roots([str(path) for path in settings["ca_certificates"]], str(settings["ca_file"]))
    password = administrator_password(os.path.join(os.path.dirname(password_file), ADMINISTRATOR_PASSWORD))
    server.ready()  # an update of a server still being created would be refused
    server.set_administrator_password(password)
    host, login = server.ready()
    found = Master(host=host, port=PORT, user=login, password=password)
    return make_user(settings, password_file, found, sql=sql)
