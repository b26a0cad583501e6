"""What the node programs' HTTP helpers share (gcp_http.py for Google's APIs, azure.py for Resource
Manager): the call they make, and a bearer token from the cloud's metadata service kept until a minute
before it expires. Ubuntu's python3 alone: no SDK."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

RENEW_BEFORE_S = 60.0
"""A token this close to its expiry is fetched again (a request made with it must not outlive it)."""


class Http(Protocol):
    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any: ...


class Bearer:
    """The token `fetch` answers (`access_token`, and `expires_in` seconds, as both metadata services
    write them), fetched on first use and again when it is about to expire."""

    def __init__(self, fetch: Callable[[], Mapping[str, Any]]) -> None:
        self._fetch = fetch
        self._token: tuple[str, float] | None = None

    def __call__(self) -> str:
        if self._token is None or self._token[1] < time.monotonic() + RENEW_BEFORE_S:
            answer = self._fetch()
            self._token = (str(answer["access_token"]), time.monotonic() + float(answer["expires_in"]))
        return self._token[0]
