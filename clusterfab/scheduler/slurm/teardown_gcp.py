"""The destroy hook's fleet on GCP (clusterfab.scheduler.slurm.teardown): the cluster's VMs and flex-start
MIGs in Compute Engine, with the deploying user's credentials (google-auth's application default
credentials, for the stack's project and zone)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clusterfab.scheduler.slurm.nodes.gcp import GceFleet
from clusterfab.scheduler.slurm.teardown import TeardownError

if TYPE_CHECKING:
    import requests

_COMPUTE_SCOPE = "https://www.googleapis.com/auth/compute"


def gce_fleet(project: str, zone: str, *, blueprint: str, stack: str) -> GceFleet:
    """The cluster's VMs in a Compute Engine zone, with application default credentials; with no node
    groups of its own, it finds every flex-start MIG of the stack's, those of a group gone from the
    blueprint too."""
    return GceFleet(
        _SessionHttp(_google_session()), project=project, zone=zone, blueprint=blueprint, stack=stack
    )


class _SessionHttp:
    """nodesync's Http over an authorized requests session; an HTTP error is a TeardownError with
    Google's message."""

    def __init__(self, session: requests.Session) -> None:
        self._session = session

    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        response = self._session.request(method, url, json=body, timeout=30)
        if response.status_code >= 300:
            raise TeardownError(
                f"{method} {url.split('?', 1)[0]}: HTTP {response.status_code}: {response.text}"
            )
        return response.json()


def _google_session() -> requests.Session:  # pragma: no cover - needs Google credentials
    import google.auth  # noqa: PLC0415 - lazy: only a real delete talks to Compute Engine
    import google.auth.exceptions  # noqa: PLC0415
    from google.auth.transport.requests import AuthorizedSession  # noqa: PLC0415

    try:
        credentials, _ = google.auth.default(scopes=[_COMPUTE_SCOPE])
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise TeardownError(f"no Google credentials to delete the instances Slurm created: {exc}") from None
    return AuthorizedSession(credentials)  # type: ignore[no-untyped-call]
