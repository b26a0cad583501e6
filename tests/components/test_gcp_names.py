"""GCP resource names within GCP's limits for the longest names a blueprint allows.

GCP names most resources [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 characters. Pulumi auto-names a resource
`<logical name>-<7 hex characters>`: a 31-character cluster name and 30-character node group, storage
and TPU names make logical names too long for that. Those resources get an explicit name; every other
keeps its auto-name, so no existing resource is renamed (which would replace it).
"""

from __future__ import annotations

import ast
import re

from clusterfab.core import naming
from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import Plan
from tests.components.harness import gcp_plan, one
from tests.conftest import REPO

GCP_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
GCP_NAME_MAX = 63
AUTONAME_SUFFIX = "-0123abc"
"""What Pulumi appends to an auto-named resource's logical name."""
PROVIDER = REPO / "tests" / "fixtures" / "gcp" / "instance-template-name-prefix.go.txt"
"""terraform-provider-google-beta's own handling of an instance template's `name_prefix`, verbatim
(tests/fixtures/gcp/SOURCES.md)."""
NAME_PREFIX_MAX = 54
"""The provider refuses a longer prefix: `if len(value) > 54` ("name is limited to 63")."""
SHORT_ID_AFTER = 37
"""A prefix longer than this gets the shortened unique id: `if len(prefix) > 37`."""
SHORT_ID = len("YYmmdd") + len("678")
"""The shortened unique id: `prefix + date + counter`, the date `uniqueId[2:8]` (YYmmdd) and the last three
digits of the counter: 9 characters."""

AUTONAMED = {
    "gcp:compute/address:Address",
    "gcp:compute/disk:Disk",
    "gcp:compute/firewall:Firewall",
    "gcp:compute/globalAddress:GlobalAddress",
    "gcp:compute/instanceGroupManager:InstanceGroupManager",
    "gcp:compute/instanceTemplate:InstanceTemplate",
    "gcp:compute/network:Network",
    "gcp:compute/resourcePolicy:ResourcePolicy",
    "gcp:compute/router:Router",
    "gcp:compute/routerNat:RouterNat",
    "gcp:compute/subnetwork:Subnetwork",
    "gcp:filestore/instance:Instance",
    "gcp:storage/bucket:Bucket",
    "gcp:tpu/v2Vm:V2Vm",
}
"""The resources the components leave to Pulumi's auto-naming (unless the auto-name would not fit)."""
NAMED = {
    "gcp:compute/instance:Instance": "name",
    "gcp:lustre/instance:Instance": "instanceId",
    "pulumi-python:dynamic/gcp-tpu:QueuedResource": "queued_resource_id",
}
"""Resources named by the stack (not the components), and the input that names them."""

CLUSTER = "long-named-gcp-training"  # with the harness' `-cluster` suffix: 31 characters, the most allowed
GROUP = "trainers-with-a-long-name-0001"
LONG_ENV = "staging-with-a-long-env-name-01"
assert len(f"{CLUSTER}-cluster") == 31
assert len(GROUP) == 30
assert len(LONG_ENV) == 31  # the most an environment's name may have

SLURM = """network:
  cidr: 10.60.0.0/16
node_groups:
  - name: {group}
    machine_type: a3-megagpu-8g
    autoscaling: {{min: 1, max: 4}}
storage:
  - {{name: {share}, kind: filestore, tier: ZONAL, capacity_gib: 1024}}
  - {{name: {lustre}, kind: lustre, capacity_gib: 18000, throughput_mbps_per_tib: 500}}
tpu_slices:
  - {{name: {tpu}, generation: v5p, topology: 2x2x1}}
  - {{name: {slices}, generation: v5p, topology: 2x2x1, slices: 2}}
scheduler:
  kind: slurm
  login: {{count: 2}}
monitoring: {{kind: prometheus}}
environments:
  prod: {{}}
  staging: {{}}
  {long_env}: {{}}
"""
"""TCPXO (8 GPU VPCs), compact placement with elastic nodes' placement policies, Filestore, Managed Lustre,
TPU slices (one VM, and a queued resource), Slurm with monitoring on the controller."""

ROCE = """network:
  cidr: 10.60.0.0/16
  ssh_ingress_cidrs: [203.0.113.0/24]
node_groups:
  - name: {group}
    machine_type: a3-ultragpu-8g
    count: 2
    capacity: {{kind: reservation, reservation: my-reservation}}
monitoring: {{kind: prometheus}}
environments:
  prod: {{}}
"""
"""RoCE (a second gVNIC VPC and an RDMA VPC), SSH from a range, the monitoring node."""


def long_names(template: str) -> str:
    return template.format(
        group=GROUP, share="home-share-with-a-long-name-01", lustre="scratch-fs-with-a-long-name-01",
        tpu="tpu-slice-with-a-long-name-001", slices="tpu-slices-with-a-long-name-01", long_env=LONG_ENV,
    )  # fmt: skip


def short_names(template: str) -> str:
    return template.format(
        group="h100", share="home", lustre="scratch", tpu="tpu", slices="pod", long_env=LONG_ENV
    )


def long_plans(env: str = "prod") -> list[Plan]:
    return [
        gcp_plan(long_names(SLURM), name=CLUSTER, env=env, zone="us-central1-a"),
        gcp_plan(long_names(ROCE), name=CLUSTER, env="prod"),
    ]


def short_plans() -> list[Plan]:
    return [
        gcp_plan(short_names(SLURM), name="gnm", env="prod", zone="us-central1-a"),
        gcp_plan(short_names(ROCE), name="gnm", env="prod"),
    ]


def elastic_placement(resource: PlannedResource) -> bool:
    """The elastic nodes' compact placement policies: named by the stack, never auto-named."""
    return "groupPlacementPolicy" in resource.inputs


def physical_names(plan: Plan) -> dict[str, str]:
    """Every GCP name the plan creates, by resource (type and logical name): an auto-named resource's
    with the longest suffix Pulumi adds; a TPU queued resource's slices' too."""
    names = {}
    for r in plan.resources:
        if r.type in AUTONAMED and "namePrefix" in r.inputs:
            prefix = r.inputs["namePrefix"]
            # Only a prefix longer than 37 characters gets the provider's 9-character id.
            assert SHORT_ID_AFTER < len(prefix) <= NAME_PREFIX_MAX, prefix
            names[f"{r.type} {r.name}"] = prefix + "x" * SHORT_ID
        elif r.type in AUTONAMED:
            names[f"{r.type} {r.name}"] = r.inputs.get("name") or r.name + AUTONAME_SUFFIX
        elif r.type in NAMED:
            names[f"{r.type} {r.name}"] = r.inputs[NAMED[r.type]]
            if "QueuedResource" in r.type:  # its slices are `<prefix>-<i>`
                [spec] = r.inputs["body"]["tpu"]["nodeSpec"]
                slices = spec["multisliceParams"]
                names[f"{r.type} {r.name} last slice"] = f"{slices['nodeIdPrefix']}-{slices['nodeCount'] - 1}"
    return names


def test_the_name_prefix_limits_are_the_providers() -> None:
    """The limits above are the ones the recorded provider source applies."""
    source = PROVIDER.read_text()
    [refused] = re.findall(r"\n\t+if len\(value\) > (\d+) \{\n", source)
    assert int(refused) == NAME_PREFIX_MAX
    assert f'"%q cannot be longer than {NAME_PREFIX_MAX} characters, name is limited to 63"' in source
    shortened_id = r"\n\t+if len\(prefix\) > (\d+) \{\n\t+itName = tpgresource.ReducedPrefixedUniqueId"
    [shortened] = re.findall(shortened_id, source)
    assert int(shortened) == SHORT_ID_AFTER
    # The shortened id: six characters of the date (YYmmdd) and the counter's last three.
    assert "\tcounter := uniqueId[len(uniqueId)-3:]\n\t// YYmmdd of date\n\tdate := uniqueId[2:8]\n" in source
    assert "\treturn prefix + date + counter\n" in source
    assert len(range(2, 8)) + 3 == SHORT_ID


def test_every_gcp_name_of_a_cluster_with_the_longest_names_is_a_valid_gcp_name() -> None:
    """In every stack: the stack's name is part of the VMs', TPUs' and Lustre's names."""
    counts = []
    for plan in [*long_plans(), *long_plans(LONG_ENV)]:
        names = physical_names(plan)
        counts.append(len(names))
        bad = {k: v for k, v in names.items() if len(v) > GCP_NAME_MAX or not GCP_NAME.fullmatch(v)}
        assert bad == {}
    assert counts == [47, 24, 47, 24]  # the Slurm plan's names and the RoCE plan's, in each stack


def test_only_resources_whose_auto_name_would_not_fit_get_an_explicit_name() -> None:
    """Auto-names that fit stay as they are: existing stacks keep every resource."""
    for plan in [*long_plans(), *short_plans()]:
        autonamed = [r for r in plan.resources if r.type in AUTONAMED and not elastic_placement(r)]
        named = {r.name for r in autonamed if "name" in r.inputs or "namePrefix" in r.inputs}
        assert named == {r.name for r in autonamed if len(r.name + AUTONAME_SUFFIX) > GCP_NAME_MAX}
    named_types = {
        r.type
        for plan in long_plans()
        for r in plan.resources
        if r.type in AUTONAMED and ("name" in r.inputs or "namePrefix" in r.inputs)
    }
    # Named by the cluster's name and fixed roles alone: their auto-names fit a 31-character cluster name.
    assert named_types == AUTONAMED - {
        "gcp:compute/address:Address",
        "gcp:compute/disk:Disk",
        "gcp:compute/globalAddress:GlobalAddress",
        "gcp:compute/network:Network",
        "gcp:compute/router:Router",
        "gcp:compute/routerNat:RouterNat",
        "gcp:storage/bucket:Bucket",
    }


def test_the_short_named_clusters_resources_keep_their_auto_names() -> None:
    counts = []
    for plan in short_plans():
        autonamed = [r for r in plan.resources if r.type in AUTONAMED and not elastic_placement(r)]
        counts.append(len(autonamed))
        assert [r.name for r in autonamed if "name" in r.inputs or "namePrefix" in r.inputs] == []
    assert counts == [40, 23]


def test_explicit_names_are_the_stacks_own() -> None:
    """The stack stands in for auto-naming's random suffix: two stacks of one blueprint in one project
    name their resources apart."""
    prod, staging = (physical_names(long_plans(env)[0]) for env in ("prod", "staging"))
    template = f"gcp:compute/instanceTemplate:InstanceTemplate {CLUSTER}-cluster-{GROUP}-template"
    assert prod[template] != staging[template]
    assert prod[template].startswith(f"{CLUSTER}-cluster-trainers-")
    explicit = {k for k, v in prod.items() if not v.endswith(AUTONAME_SUFFIX)}
    assert {k for k in explicit if prod[k] == staging[k]} == set()


def test_a_long_named_template_takes_a_prefix_so_its_next_generation_gets_a_name_of_its_own() -> None:
    """Every change of an instance template replaces it, the new one created before the old is deleted:
    a fixed name would collide, so a long-named template gets a `name_prefix`, which the provider ends
    with its 9-character shortened id (54 + 9 = 63): the longest prefix the provider takes."""
    plan = long_plans()[0]
    template = one(
        plan, "gcp:compute/instanceTemplate:InstanceTemplate", f"{CLUSTER}-cluster-{GROUP}-template"
    )
    assert "name" not in template.inputs
    prefix = template.inputs["namePrefix"]
    assert prefix.endswith("-")
    assert len(prefix) == NAME_PREFIX_MAX
    assert len(prefix) + SHORT_ID == GCP_NAME_MAX


def test_a_long_named_placement_policy_changes_its_name_with_what_replaces_it() -> None:
    """A changed workload policy is a new resource policy, created before the old one is deleted: its
    name carries what replaces it (the provider's replace_on), and only that."""
    logical = f"{CLUSTER}-cluster-{GROUP}-placement"

    def policy_name(group_lines: str) -> str:
        body = ROCE.replace("    count: 2\n", group_lines)
        policy = one(
            gcp_plan(long_names(body), name=CLUSTER, env="prod"),
            "gcp:compute/resourcePolicy:ResourcePolicy",
            logical,
        )
        return str(policy.inputs["name"])

    base = policy_name("    count: 2\n")
    assert len(base) <= GCP_NAME_MAX
    assert policy_name("    count: 3\n") == base  # the group's size is the MIG's, not the policy's
    assert policy_name("    count: 2\n    placement_max_distance: 2\n") != base


def test_the_stacks_own_names_are_the_ones_validation_keeps_from_groups() -> None:
    """Every resource the GCP stack names `<cluster>-<stack>-<name>` takes its name from
    clusterfab.core.naming (GCP_STACK_NAMES, which rule BP144 refuses as a node group or TPU slice name),
    or from a blueprint item: no name of its own is written anywhere else."""
    trees = [ast.parse(path.read_text()) for path in sorted((REPO / "stacks" / "gcp").glob("*.py"))]
    constants = {name for name in dir(naming) if name.startswith("GCP_") and name != "GCP_NAME_MAX"}
    named: set[str] = set()
    for node in (node for tree in trees for node in ast.walk(tree)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("physical", "role_id")):
            continue
        if len(node.args) < 3:
            continue
        third = node.args[2]
        assert not isinstance(third, ast.Constant), ast.unparse(node)
        if isinstance(third, ast.Name) and third.id.startswith("GCP_"):
            assert third.id in constants, third.id
            named.add(getattr(naming, third.id))
    assert named == set(naming.GCP_STACK_NAMES)
