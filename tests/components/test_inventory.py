"""Push-mode inventory: built from the stack outputs the program exports (here: an offline plan's)."""

from __future__ import annotations

import pytest

from clusterfab.core.errors import UsageError
from clusterfab.outputs import read_outputs
from clusterfab.provision.inventory import group_name, inventory_config
from tests.components.harness import plan_file
from tests.conftest import REPO


def test_aws_inventory_selects_the_stacks_nodes_and_connects_through_ssm() -> None:
    outputs = read_outputs(plan_file(REPO / "blueprints/examples/aws-p5-efa-fsx.yaml", "dev").outputs)
    assert inventory_config(outputs) == {
        "plugin": "amazon.aws.aws_ec2",
        "regions": ["us-east-1"],
        "filters": {
            "tag:clusterfab-blueprint": "llm-pretrain",
            "tag:clusterfab-stack": "dev",
            "instance-state-name": "running",
        },
        "hostnames": ["instance-id"],
        "keyed_groups": [{"key": "tags['clusterfab-node-group']", "prefix": "node_group", "separator": "_"}],
        "compose": {
            "ansible_connection": "'amazon.aws.aws_ssm'",
            "ansible_aws_ssm_region": "'us-east-1'",
            "ansible_aws_ssm_bucket_name": "'llm-pretrain-artifacts-bucket-mock'",
            "ansible_become": "true",
        },
    }


def test_gcp_inventory_selects_by_labels_and_tunnels_through_iap() -> None:
    outputs = read_outputs(
        plan_file(REPO / "blueprints/examples/gcp-a3mega-tcpxo-filestore.yaml", "prod").outputs
    )
    config = inventory_config(outputs)
    assert {
        k: config[k] for k in ("plugin", "projects", "zones", "filters", "hostnames", "keyed_groups")
    } == {
        "plugin": "google.cloud.gcp_compute",
        "projects": ["ml-platform-prod"],
        "zones": ["us-central1-a"],
        "filters": ["labels.clusterfab-blueprint = mega-train", "labels.clusterfab-stack = prod"],
        "hostnames": ["name"],
        "keyed_groups": [
            {"key": "labels['clusterfab-node-group']", "prefix": "node_group", "separator": "_"}
        ],
    }
    assert config["compose"]["ansible_ssh_common_args"] == (
        "'-o ProxyCommand=\"gcloud compute start-iap-tunnel %h 22 --listen-on-stdin "
        "--project=ml-platform-prod --zone=us-central1-a\"'"
    )


def test_outputs_from_an_older_clusterfab_say_what_to_do() -> None:
    with pytest.raises(
        UsageError,
        match=r"the stack's outputs are not clusterfab's \(blueprint.name: Field required\); "
        r"run `clusterfab up` for it first",
    ):
        read_outputs({"blueprint": {"cloud": "aws", "region": "us-east-1"}})


def test_group_names_are_valid_ansible_group_names() -> None:
    assert group_name("eval-small") == "node_group_eval_small"
