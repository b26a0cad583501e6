"""A replaced resource that a host's launch script names: a host that follows the stack changes its digest
tag in place, one that does not is stopped and started to change its user data, and the diff says which."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from clusterfab.catalog import load_catalog
from clusterfab.core.vocab import BOOT_DIGEST_TAG
from clusterfab.plan.diff import diff_plans
from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import Plan
from tests.conftest import REPO

SLURM = REPO / "blueprints" / "examples" / "aws-p5-slurm.yaml"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
INSTANCE = "aws:ec2/instance:Instance"


def _scratch_file_system(tmp_path: Path) -> Path:
    """The Slurm example with its persistent FSx file system made a scratch one (a replacement)."""
    text = SLURM.read_text()
    for old, new in (
        ("    deployment: persistent\n", "    deployment: scratch\n"),
        ("    throughput_mbps_per_tib: 125\n", ""),
    ):
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / "scratch.yaml"
    path.write_text(text)
    return path


def test_replacing_the_file_system_rewrites_the_login_nodes_script_without_stopping_it(
    tmp_path: Path,
) -> None:
    # Audit item: the login node showed a user-data change (which EC2 applies by stopping the instance)
    # with no warning. It follows the stack: its user data is left alone, the bucket's copy of its script
    # is rewritten with the new file system's address and the digest tag that pins the copy changes.
    new = _scratch_file_system(tmp_path)
    env = {**os.environ, "CLUSTERFAB_TODAY": "2026-11-22"}
    done = subprocess.run(
        [sys.executable, "-m", "clusterfab", "diff", str(SLURM), str(new)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 1, done.stderr  # the file system's data goes: refused without --allow-replace
    lines = done.stdout.splitlines()
    at = lines.index("Resources: 0 to create, 5 to update, 2 to replace, 0 to delete")
    assert lines[at : at + 11] == [
        "Resources: 0 to create, 5 to update, 2 to replace, 0 to delete",
        "  ~  aws:ec2:LaunchTemplate    llm-slurm-h100-lt  (userData)",
        "  ~  aws:ec2:Instance          llm-slurm-slurm-controller  (tags.clusterfab-boot-sha256)",
        "  ~  aws:ec2:Instance          llm-slurm-slurm-login-0  (tags.clusterfab-boot-sha256)",
        "  ~  aws:s3:BucketObjectv2     llm-slurm-slurm-boot  (content)",
        "  +- aws:s3:BucketObjectv2     llm-slurm-slurm-files  (replaced: key)",
        "  ~  aws:s3:BucketObjectv2     llm-slurm-slurm-login-boot  (content)",
        "  +- aws:fsx:LustreFileSystem  llm-slurm-shared-fs  (stateful, replaced: deploymentType)",
        "  !! stateful resource llm-slurm-shared-fs (aws:fsx/lustreFileSystem:LustreFileSystem) would be "
        "replaced (changes",
        "     deploymentType)",
        "",
    ]
    assert "stopped and started" not in done.stdout
    payload = subprocess.run(
        [sys.executable, "-m", "clusterfab", "diff", str(SLURM), str(new), "-f", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    login = [
        u
        for u in json.loads(payload.stdout)["resources"]["update"]
        if u["urn"].endswith("::llm-slurm-slurm-login-0")
    ]
    assert [(u["changed"], u["replace"]) for u in login] == [(["tags.clusterfab-boot-sha256"], False)]


def _resource(
    type_: str, name: str, inputs: dict[str, object], ignore: tuple[str, ...] = ()
) -> PlannedResource:
    return PlannedResource(
        urn=f"urn:pulumi:diff::clusterfab::{type_}::{name}",
        type=type_,
        name=name,
        parent=None,
        custom=True,
        protect=False,
        inputs=inputs,
        provider=None,
        id=f"{name}-0123456789",
        ignore_changes=ignore,
    )


def _plan(deployment: str) -> Plan:
    script = base64.b64encode(
        b"#!/bin/bash\nmount -t lustre shared-fs-0123456789@tcp:/fsx /lustre\n"
    ).decode()
    return Plan(
        blueprint="bp.yaml",
        env=None,
        stack="diff",
        resources=[
            _resource(FSX, "shared-fs", {"deploymentType": deployment, "storageCapacity": 4800}),
            # A host that does not follow the stack: its user data is its script.
            _resource(INSTANCE, "plain", {"userDataBase64": script, "tags": {"Name": "plain"}}),
            # One that follows: the update leaves its user data, a tag pins the bucket's copy.
            _resource(
                INSTANCE,
                "following",
                {"userDataBase64": script, "tags": {"Name": "following", BOOT_DIGEST_TAG: "9be08f9b"}},
                ignore=("userDataBase64",),
            ),
        ],
    )


def test_a_script_naming_a_replaced_resource_stops_a_plain_host_and_retags_a_following_one() -> None:
    diff = diff_plans(_plan("PERSISTENT_2"), _plan("SCRATCH_2"), load_catalog())
    assert [(u.after.name, u.changed, u.replaces, u.restarts) for u in diff.update] == [
        ("following", (f"tags.{BOOT_DIGEST_TAG}",), (), ()),
        ("plain", ("userDataBase64",), (), ("userDataBase64",)),
        ("shared-fs", ("deploymentType",), ("deploymentType",), ()),
    ]
