"""moto standing in for AWS inside a Slurm lab: its server listens in the lab's network namespace, so the
controller's programs reach it at 127.0.0.1 as they would reach AWS's endpoints, and the test's own calls
run on a thread that entered that namespace too."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from moto.server import ThreadedMotoServer
from werkzeug.serving import WSGIRequestHandler

CLONE_NEWNET = 0x40000000
MOTO = "http://127.0.0.1:5000"
REGION = "us-east-1"


def enter_net(pid: int) -> None:
    """Move the calling thread (only it: network namespaces are per thread) into the lab's network."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns into the lab's network namespace")
    finally:
        os.close(fd)


class LabMoto(ThreadedMotoServer):
    """moto's server, listening in the lab's network namespace."""

    def __init__(self, pid: int) -> None:
        super().__init__("127.0.0.1", 5000, verbose=False)
        self._pid = pid

    def _server_entry(self) -> None:
        enter_net(self._pid)
        WSGIRequestHandler.log_request = lambda *_, **__: None  # type: ignore[method-assign]
        super()._server_entry()


def client(service: str) -> Any:
    """A boto3 client of moto (call it on a thread inside the lab's network)."""
    return boto3.client(
        service,
        region_name=REGION,
        endpoint_url=MOTO,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


class InLabNet:
    """Runs calls on one thread inside the lab's network namespace."""

    def __init__(self, pid: int) -> None:
        self._pool = ThreadPoolExecutor(1, initializer=enter_net, initargs=(pid,))

    def call(self, fn: Callable[[], Any]) -> Any:
        return self._pool.submit(fn).result(timeout=60)

    def close(self) -> None:
        self._pool.shutdown()
