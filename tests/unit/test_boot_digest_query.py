"""The DescribeTags request an AWS host that follows the stack makes, and its reading of the answer, against
moto's EC2 (its query API and XML), not against the test's own stand-in: the filters find the digest tag of
the host's own instance and nothing else, and the host's one-line parser reads it from EC2's XML."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import boto3
import requests
from moto import mock_aws

from clusterfab.bootstrap import NodeBootstrap, render_boot_script
from clusterfab.core.vocab import BOOT_DIGEST_TAG

REGION = "us-east-1"


def _script() -> str:
    boot = NodeBootstrap(
        cloud="aws", cluster="llm", stack="prod", node_group="slurm-controller", region=REGION,
        bucket="llm-bucket", bundle_key="bundles/x.tar.gz", bundle_sha256="x", ansible_core_version="2.19.14",
        playbook="slurm_controller.yml", playbook_vars={}, follows=True,
    )  # fmt: skip
    return render_boot_script(boot)


def _instance(ec2: Any, digest: str) -> str:
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    tags = [{"Key": BOOT_DIGEST_TAG, "Value": digest}, {"Key": "Name", "Value": "controller"}]
    made = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        InstanceType="c7i.4xlarge",
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )
    return str(made["Instances"][0]["InstanceId"])


def test_the_host_reads_its_own_digest_tag_from_ec2s_answer() -> None:
    script = _script()
    query = re.search(
        r'aws_curl ec2 "(https://ec2\.\$REGION\.amazonaws\.com/\?Action=DescribeTags[^"]*)"', script
    )
    parser = re.search(r"\| python3 -c '([^']*)'", script)
    assert query is not None
    assert parser is not None
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        _instance(ec2, "b" * 64)  # another host of the cluster, listed first without the id filter
        mine = _instance(ec2, "a" * 64)
        url = query.group(1).replace("$REGION", REGION).replace("$id", mine)
        answer = requests.get(url, timeout=10)
    assert answer.status_code == 200, answer.text
    read = subprocess.run(
        [sys.executable, "-c", parser.group(1)], input=answer.text, capture_output=True, text=True, check=True
    )
    assert read.stdout == "a" * 64 + "\n"
