"""Managed accounting on GCP: Cloud SQL for MySQL through its Admin API (v1).

Cloud SQL has no master password to read. The stack creates the instance (private IP only, TLS only) and
slurmdbd's database; the program reads the instance's private address and its server CA certificate from
the Admin API and creates slurmdbd's user, or sets its password, through the same API (users.insert /
users.update), with the VM's service account and nothing but the standard library.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from .accounting import PORT, USER, AccountingError, checked_password, install_ca_bundle, read_password
from .gcp_http import HTTP_NOT_FOUND, Http

REQUIRED = ("identifier", "project", "ca_file")
"""The accounting settings this cloud reads."""
SQLADMIN_API = "https://sqladmin.googleapis.com/v1"
OPERATION_POLLS = 60
POLL_S = 5.0
"""A user insert or update is an operation of a few seconds, and maintenance leaves the instance for
minutes: polled this many times, this far apart."""
WAITING_STATES = ("PENDING_CREATE", "MAINTENANCE")


class CloudSql:
    """The instance and its users through the Cloud SQL Admin API (v1), with the VM's service account:
    the controller's role may get this one instance and list, create and update its users, nothing else."""

    def __init__(
        self,
        http: Http,
        *,
        project: str,
        instance: str,
        api: str = SQLADMIN_API,
        polls: int = OPERATION_POLLS,
        poll_s: float = POLL_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._http, self._project, self._instance = http, project, instance
        self._root = f"{api}/projects/{urllib.parse.quote(project)}"
        self._polls, self._poll_s, self._sleep = polls, poll_s, sleep

    def where(self) -> tuple[str, str]:
        """The instance's private address and its server CA certificate (PEM)."""
        url = f"{self._root}/instances/{self._instance}"
        found = self._call("GET", url)
        polls = 0
        # Being created or under maintenance, the instance comes back RUNNABLE on its own.
        while found.get("state") in WAITING_STATES and polls < self._polls:
            self._sleep(self._poll_s)
            found = self._call("GET", url)
            polls += 1
        if found.get("state") != "RUNNABLE":
            raise AccountingError(
                f"Cloud SQL instance {self._instance} is {found.get('state')}, not RUNNABLE"
            )
        private = [a["ipAddress"] for a in found.get("ipAddresses", []) if a.get("type") == "PRIVATE"]
        if not private:
            raise AccountingError(
                f"Cloud SQL instance {self._instance} has no private IP: it must be created on the "
                "cluster's network (private services access)"
            )
        certificate = (found.get("serverCaCert") or {}).get("cert")
        if not certificate:
            raise AccountingError(f"Cloud SQL instance {self._instance} names no server CA certificate")
        return str(private[0]), str(certificate)

    def set_password(self, user: str, password: str) -> None:
        """Create `user`@'%' with this password, or give the existing user this password."""
        users = f"{self._root}/instances/{self._instance}/users"
        body = {"name": user, "host": "%", "password": password}
        try:
            self._http("GET", f"{users}/{user}?host=%25")
        except Exception as error:
            if getattr(error, "code", None) != HTTP_NOT_FOUND:
                raise _refused(error) from error
            self._wait(self._call("POST", users, body))
            return
        self._wait(self._call("PUT", f"{users}?name={user}&host=%25", body))

    def _wait(self, operation: Mapping[str, Any]) -> None:
        polls = 0
        while operation.get("status") != "DONE":
            if polls == self._polls:
                raise AccountingError(
                    f"Cloud SQL operation {operation.get('name')} not done after {polls} polls"
                )
            self._sleep(self._poll_s)
            operation = self._call("GET", f"{self._root}/operations/{operation['name']}")
            polls += 1
        errors = (operation.get("error") or {}).get("errors", [])
        if errors:
            raise AccountingError(
                "Cloud SQL refused: " + "; ".join(f"{e.get('code')}: {e.get('message', '')}" for e in errors)
            )

    def _call(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        try:
            return self._http(method, url, body)
        except Exception as error:
            raise _refused(error) from error


def _refused(error: Exception) -> AccountingError:
    status = getattr(error, "code", None)
    reason = getattr(error, "reason", None) or error
    if status is None:  # no answer: the metadata server's token, DNS, the network
        return AccountingError(f"the Cloud SQL Admin API could not be called: {reason}")
    return AccountingError(f"the Cloud SQL Admin API refused ({status}): {reason}")


def prepare_gcp(settings: Mapping[str, Any], password_file: str, *, cloud_sql: CloudSql) -> dict[str, Any]:
    """Install the instance's server CA certificate, give slurmdbd's user its password (the Admin API
    makes the user; Cloud SQL takes no SQL from us), and say where the database listens."""
    host, certificate = cloud_sql.where()
    install_ca_bundle(certificate, str(settings["ca_file"]), origin="the instance's serverCaCert")
    cloud_sql.set_password(USER, checked_password(read_password(password_file)))
    return {"host": host, "port": PORT}
