"""What a node runs at boot: the AWS user-data / GCP startup-script, rendered with Jinja2.

Pure: the components resolve their outputs (file system addresses, ...) and pass plain values here,
so the scripts are rendered, golden-tested and reviewed without Pulumi.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

import jinja2

from clusterfab.catalog.models import LustreClient


@dataclass(frozen=True)
class Mount:
    """A file system a node mounts (the resolved form of components.contracts.MountTarget)."""

    name: str
    fs_type: Literal["lustre", "nfs"]
    source: str
    mount_point: str
    options: str


@dataclass(frozen=True)
class NodeBootstrap:
    """Everything the boot script of one node group needs."""

    cloud: Literal["aws", "gcp"]
    cluster: str
    stack: str
    node_group: str
    mounts: tuple[Mount, ...]
    lustre_client: LustreClient | None


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("clusterfab.bootstrap", "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)
_ENV.filters["shquote"] = shlex.quote


def render_boot_script(boot: NodeBootstrap) -> str:
    """The script a node runs at every boot (idempotent)."""
    template = _ENV.get_template("node-boot.sh.j2")
    return template.render(
        boot=boot,
        needs_lustre=any(m.fs_type == "lustre" for m in boot.mounts),
        needs_nfs=any(m.fs_type == "nfs" for m in boot.mounts),
    )
