"""What a node runs at boot: the AWS user-data / GCP startup-script, rendered with Jinja2.

Nodes configure themselves at every boot, so spot replacements and autoscaled nodes come up right:
the script installs a pinned ansible-core, fetches the playbook bundle of the stack revision that
launched the node from the cluster bucket (checking its digest), runs the node playbook with the
extravars rendered from the blueprint, reboots once if a new driver needs it, runs the health check,
and records the verdict where operators and `clusterfab promote` can see it (an instance tag on AWS,
a guest attribute on GCP). Pure: callers pass resolved values, so scripts are golden-tested here.
"""

from __future__ import annotations

import importlib.util
import shlex
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jinja2

from clusterfab.bootstrap.inert import inert_json
from clusterfab.core import plugins
from clusterfab.core.vocab import BOOT_DIGEST_TAG, HEALTH_TAG, IDENTITY_TAG, Cloud, MountFsType

VARS_DIR = "/etc/clusterfab"
RESULT_PATH = "/var/lib/clusterfab/gpu-healthcheck.json"


@dataclass(frozen=True)
class Mount:
    """A file system a node mounts (the resolved form of components._contracts.MountTarget)."""

    name: str
    fs_type: MountFsType
    source: str
    mount_point: str
    options: str


@dataclass(frozen=True)
class NodeBootstrap:
    """Everything the boot script of one node group (or TPU slice) needs."""

    cloud: Cloud
    cluster: str
    stack: str
    node_group: str
    region: str
    bucket: str
    bundle_key: str
    bundle_sha256: str
    ansible_core_version: str
    playbook: str
    """gpu_node.yml for GPU nodes, tpu_host.yml for TPU hosts."""
    playbook_vars: Mapping[str, Any]
    healthcheck_vars: Mapping[str, Any] | None = None
    """Inputs of healthcheck.yml; None: no health check (TPU hosts)."""
    files: FilesArchive | None = None
    """Rendered files the host fetches from the bucket before its playbook runs (the monitoring host's)."""
    follows: bool = False
    """A host (Slurm controller or login node, monitoring node) that follows the stack while it runs:
    within a minute of a change it runs the stack's current copy of its script (AWS: the object
    `boot_script_key(node_group)` in the bucket; GCP: its startup-script metadata), so the change needs
    no restart. Node groups' nodes take a new script when they are replaced."""


@dataclass(frozen=True)
class FilesArchive:
    """A tar.gz of rendered files in the cluster bucket, unpacked into `files_dir(sha256)` at boot."""

    key: str
    sha256: str


FILES_ROOT = "/opt/clusterfab/files"
FOLLOW_PATH = "/var/lib/clusterfab/follow.sh"
"""Where a host that follows the stack keeps its timer's program: a copy of the script it last started."""


def boot_script_key(node_group: str) -> str:
    """The bucket key of the current boot script of a host that follows the stack on AWS, and of a GCP
    TPU slice group's hosts (render_boot_fetch)."""
    return f"boot/{node_group}.sh"


def render_boot_fetch(*, cloud: str, cluster: str, stack: str, node_group: str, bucket: str) -> str:
    """The startup script of hosts whose boot script lives in the bucket (`boot_script_key(node_group)`):
    it fetches and runs the stack's current copy at every boot. Only its bucket and key are in it, so the
    hosts' own definition (a TPU queued resource, which any change recreates) does not change when the
    boot script does. GCP only: its TPU hosts are the ones that need it."""
    key = boot_script_key(node_group)
    return _ENV.get_template(f"boot-fetch-{cloud}.sh.j2").render(
        cluster=cluster,
        stack=stack,
        node_group=node_group,
        bucket=bucket,
        key=key,
        key_quoted=urllib.parse.quote(key, safe=""),
    )


def files_dir(sha256: str) -> str:
    """Where a host finds the files of an archive (the playbook's input)."""
    return f"{FILES_ROOT}/{sha256}"


CLOUD_TEMPLATES = ("cloud-{cloud}.sh.j2", "files-{cloud}.sh.j2")
"""A cloud's parts of node-boot.sh.j2: its functions (fetch_bundle, record_health, fetch_boot_script) and
the fetch of a host's files archive."""


def _registered_cloud_template(name: str) -> tuple[str, str, Callable[[], bool]] | None:
    """A cloud part (CLOUD_TEMPLATES) of a cloud registered at run time, which cannot add files to this
    package: the template of that name in the `templates` folder of the package its profile module is in
    (or is). Up to date while the cloud stays registered to the same module."""
    cloud = name.partition("-")[2].removesuffix(".sh.j2")
    module = plugins.clouds().get(cloud)
    if module is None or cloud in plugins.BUILTIN_CLOUDS or name not in _names(cloud):
        return None
    spec = importlib.util.find_spec(module)
    package = module if spec is not None and spec.submodule_search_locations else module.rpartition(".")[0]
    found = resources.files(package).joinpath("templates", name)
    if not found.is_file():
        return None
    return found.read_text("utf-8"), str(found), lambda: plugins.clouds().get(cloud) == module


def _names(cloud: str) -> tuple[str, ...]:
    return tuple(template.format(cloud=cloud) for template in CLOUD_TEMPLATES)


_ENV = jinja2.Environment(
    # The built-in clouds' parts ship here; a cloud registered at run time brings its own.
    loader=jinja2.ChoiceLoader(
        [
            jinja2.PackageLoader("clusterfab.bootstrap", "templates"),
            jinja2.FunctionLoader(_registered_cloud_template),
        ]
    ),
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
        playbook_vars_json=inert_json(boot.playbook_vars),
        healthcheck_vars_json=inert_json(boot.healthcheck_vars)
        if boot.healthcheck_vars is not None
        else None,
        health_key=HEALTH_TAG,
        vars_dir=VARS_DIR,
        result_path=RESULT_PATH,
        files_dir=files_dir(boot.files.sha256) if boot.files is not None else None,
        boot_script_key=boot_script_key(boot.node_group),
        boot_digest_tag=BOOT_DIGEST_TAG,
        identity_tag=IDENTITY_TAG,
        follow_path=FOLLOW_PATH,
    )
