"""AWS: zone ids, capacity reservation ids, tag rules, FSx for Lustre tiers, SSM-reached nodes."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from clusterfab import addressing
from clusterfab.blueprint.models import LustreSpec
from clusterfab.catalog.models import AwsMachineType
from clusterfab.clouds.aws import access, discovery, hostvars, store
from clusterfab.clouds.aws.mocks import PLAN_MOCKS
from clusterfab.clouds.base import FabricUnit, FieldProblem, MachineNaming, ReportChannel
from clusterfab.core.findings import FieldPath, Severity
from clusterfab.core.hints import listing
from clusterfab.core.vocab import (
    ACTIVATE_COST_TAGS_KEY,
    BLUEPRINT_TAG,
    CONFIG_NAMESPACE,
    INVENTORY_GROUP_PREFIX,
    NODE_GROUP_TAG,
    STACK_TAG,
    Cloud,
    StorageKind,
    label_value,
)

if TYPE_CHECKING:
    from clusterfab.blueprint.models import Blueprint
    from clusterfab.catalog import Catalog
    from clusterfab.catalog.models import MachineType
    from clusterfab.outputs import StackOutputs

_ZONE_ID = re.compile(r"(?P<prefix>[a-z]+\d+)-(?:[a-z]+\d+-)?az\d+")
_ZONE_NAME = re.compile(r"(?P<region>[a-z]+-[a-z]+-\d+)(?:-[a-z]+-\d+)?[a-z]")
_RESERVATION = re.compile(r"cr-[0-9a-f]{8}([0-9a-f]{9})?")
_KMS_KEY = re.compile(
    r"arn:aws(-[a-z]+)*:kms:(?P<region>[a-z]{2}(-[a-z]+)+-\d+):\d{12}:key/"
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})"
)
"""A KMS key ARN: a key id is a UUID, a multi-Region key's id `mrk-` and 32 hex digits (KMS Developer Guide,
"Key identifiers (KeyId)")."""
_KMS_ALIAS = re.compile(r"^(arn:aws(-[a-z]+)*:kms:[^:]*:[^:]*:)?alias/")
_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
"""A Secrets Manager secret name: 1-512 ASCII letters, digits and /_+=.@- (botocore secretsmanager
CreateSecretRequest.Name, max 512; "The secret name can contain ASCII letters, numbers, and the following
characters: /_+=.@-")."""
_SECRET_ARN = re.compile(
    r"^arn:aws(-[a-z]+)*:secretsmanager:(?P<region>[a-z]{2}(-[a-z]+)+-\d+):\d{12}:secret:"
    r"(?P<name>[A-Za-z0-9/_+=.@-]{1,512})-[A-Za-z0-9]{6}$"
)
"""A secret's full ARN: its name, then the hyphen and six random characters Secrets Manager appends."""
TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256
TAG_SYMBOLS = frozenset("_.:/=+-@")
"""AWS tag keys and values: letters, digits and spaces of any script, and these symbols (the services' API
models give the pattern `[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]`; AWS's tagging guide, "Tag naming limits and
requirements"); keys of 1 to 128 characters, values of 0 to 256."""


def _tag_text(text: str) -> bool:
    """Whether every character is one AWS takes in a tag: a letter (L*), a space (Z*), a number (N*) or one of
    TAG_SYMBOLS."""
    return all(c in TAG_SYMBOLS or unicodedata.category(c)[0] in "LZN" for c in text)


def _outside_tag_text(text: str) -> str:
    """The characters AWS refuses in a tag, each once and shown visibly (a newline as \\n)."""
    return ", ".join(repr(c)[1:-1] for c in dict.fromkeys(text) if not _tag_text(c))


def is_zone_id(zone: str) -> bool:
    """use1-az6 (the same physical zone in every account) rather than us-east-1a (a per-account alias)."""
    return _ZONE_ID.fullmatch(zone) is not None


AUTOSCALING_GROUP = "aws:autoscaling/group:Group"
"""An autoscaling group: the instance group of a node group's nodes."""
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
"""An EKS managed node group: a Kubernetes cluster's node group."""


class AwsProfile:
    """The AWS profile (see clusterfab.clouds.base.CloudProfile)."""

    name: Cloud = "aws"
    title = "AWS"
    zone_example = "use1-az6 (a zone id) or us-east-1a"
    lustre_product = "FSx for Lustre"
    reserved_addresses = 5
    reserved_capacity_is_placed = True
    offers_tpus = False
    provider_region_setting = "aws:region"
    stack_settings: tuple[str, ...] = ()
    reservation_example = "cr-0123456789abcdef0"
    reservation_format = "cr- followed by 17 hex digits, e.g. cr-0123456789abcdef0"
    kms_key_example = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    inventory_plugin = "amazon.aws.aws_ec2"
    inventory_collection = "amazon.aws"
    inventory_suffix = ".aws_ec2.yml"
    host_access_tools = ("aws", "session-manager-plugin")
    stack_names: Mapping[str, str] = MappingProxyType({})
    """None: the AWS stack names its resources by tags and Pulumi's auto-names, not
    `<cluster>-<stack>-<name>`."""

    def reservation_valid(self, value: str) -> bool:
        return _RESERVATION.fullmatch(value) is not None

    def kms_key_problems(self, key: str, *, region: str, disk: bool) -> Iterator[FieldProblem]:
        """A key ARN of the blueprint's region. Not an alias: EBS and FSx read their key back as its ARN, and
        the provider replaces a volume or file system whose key differs (terraform-provider-aws #2407, "Using
        KMS_Key_alias for EBS encryption always recreate the EBS volume"; pulumi-aws #999), S3 resolves an
        alias in the requester's account (botocore s3 ServerSideEncryptionByDefault.KMSMasterKeyID), and an
        IAM policy cannot grant a key by its alias."""
        del disk  # every AWS service uses keys of its own region
        example = self.kms_key_example.replace("us-east-1", region)
        if _KMS_ALIAS.match(key):
            yield FieldProblem(
                (),
                f"'{key}' is a key alias, not a key",
                f"use the ARN of the key it names (aws kms describe-key --key-id {key} --query "
                "KeyMetadata.Arn): the cloud reports a key by its ARN, so an alias would show as a change, "
                "and replace the resource, at every update",
            )
        elif (match := _KMS_KEY.fullmatch(key)) is None:
            yield FieldProblem(
                (),
                f"'{key}' is not a KMS key ARN",
                f"write arn:aws:kms:{region}:<account>:key/<key id>, e.g. {example}",
            )
        elif match["region"] != region:
            yield FieldProblem(
                (),
                f"the key is in {match['region']}, not in the blueprint's region {region}",
                f"use a key of {region}: a KMS key serves its own region only (a multi-Region key has a "
                "replica ARN in each region)",
            )

    def secret_problems(self, secret: str, *, region: str, project: str | None) -> Iterator[FieldProblem]:
        """A Secrets Manager name, or a full ARN in the blueprint's region (the host asks its own region's
        endpoint). The host's policy grants the name's ARN with Secrets Manager's six-character suffix
        (`-??????`), so a name is one secret, never a prefix of others."""
        del project
        if secret.startswith("arn:"):
            match = _SECRET_ARN.match(secret)
            if match is None:
                yield FieldProblem(
                    (),
                    f"'{secret}' is not a full Secrets Manager secret ARN",
                    f"write arn:aws:secretsmanager:{region}:<account>:secret:<name>-<6 characters> (aws "
                    "secretsmanager describe-secret --secret-id NAME --query ARN), or the secret's name",
                )
            elif match["region"] != region:
                yield FieldProblem(
                    (),
                    f"the secret is in {match['region']}, not in the blueprint's region {region}",
                    f"use a secret of {region} (the monitoring host reads its own region's Secrets Manager); "
                    "a secret can be replicated to other regions",
                )
        elif _SECRET_NAME.match(secret) is None:
            yield FieldProblem(
                (),
                f"'{secret}' is not a Secrets Manager secret name",
                "a name has 1-512 ASCII letters, digits and /_+=.@- (no wildcard: the host may read "
                "exactly this secret)",
            )

    def machine_types(self, catalog: Catalog) -> Mapping[str, MachineType]:
        return catalog.aws_machine_types

    def region_of_zone(self, catalog: Catalog, zone: str) -> str | None:
        match = _ZONE_ID.fullmatch(zone)
        if match:
            prefixes = {v: k for k, v in catalog.aws_regions.zone_id_prefixes.items()}
            return prefixes.get(match["prefix"])
        match = _ZONE_NAME.fullmatch(zone)
        return match["region"] if match else None

    def regions(self, catalog: Catalog) -> set[str]:
        found = set(catalog.aws_regions.zone_id_prefixes)
        for machine in catalog.aws_machine_types.values():
            found |= set(machine.locations)
        return found

    def budget_problems(
        self, *, cluster: str, stack: str | None, billing_account: str | None, activate_cost_tags: bool
    ) -> Iterator[FieldProblem]:
        if stack is None:
            return
        setting = f"{CONFIG_NAMESPACE}:{ACTIVATE_COST_TAGS_KEY}"
        counted = (
            f"the AWS budget counts resources tagged {BLUEPRINT_TAG}={cluster} and "
            f"{STACK_TAG}={label_value(stack)} only once both keys are active cost allocation tags, and only "
            "from their activation on (earlier spend is not counted)"
        )
        if activate_cost_tags:
            message = f"{counted}; stack {stack} activates them ({setting})"
            hint = (
                "the activation fails until AWS lists the keys (up to 24 h after a resource first carries "
                "them) and outside an organization's management account or a standalone account; until "
                f"then `pulumi config set {setting} false --stack {stack}`"
            )
        else:
            message = counted
            hint = (
                "AWS lists a new tag key for activation up to 24 h after a resource first carries it; then "
                f"activate both in the Billing console or with `pulumi config set {setting} true --stack "
                f"{stack}` (from an organization's management account or a standalone account)"
            )
        yield FieldProblem(("budget",), message, hint, at_key=True, code="BP411")

    def label_problems(self, key: str, value: str) -> Iterator[FieldProblem]:
        rule = f"letters, digits, spaces and {' '.join(sorted(TAG_SYMBOLS))}"
        if key.lower().startswith("aws:"):
            yield FieldProblem(
                (), f"tag key '{key}' is not allowed", "AWS reserves the aws: prefix", at_key=True
            )
        elif not 1 <= len(key) <= TAG_KEY_MAX:
            yield FieldProblem(
                (),
                f"tag key of {len(key)} characters",
                f"AWS tag keys have 1 to {TAG_KEY_MAX} characters",
                at_key=True,
            )
        elif not _tag_text(key):
            yield FieldProblem(
                (),
                f"tag key {key!r} has characters AWS does not take in a tag: {_outside_tag_text(key)}",
                f"use only {rule}",
                at_key=True,
            )
        if len(value) > TAG_VALUE_MAX:
            yield FieldProblem(
                (), f"tag value is longer than {TAG_VALUE_MAX} characters", f"shorten it to {TAG_VALUE_MAX}"
            )
        elif not _tag_text(value):
            yield FieldProblem(
                (),
                f"tag value {value!r} has characters AWS does not take in a tag: {_outside_tag_text(value)}",
                f"use only {rule}",
            )

    def storage_kinds(self) -> tuple[StorageKind, ...]:
        return ("lustre",)

    def lustre_tier(self, deployment: str, throughput_mbps_per_tib: int | None) -> str | None:
        del throughput_mbps_per_tib  # FSx tiers are deployment types; throughput is a setting of one
        return "PERSISTENT_2" if deployment == "persistent" else "SCRATCH_2"

    def storage_title(self, kind: StorageKind, tier: str) -> str:
        return f"FSx for Lustre {tier}"

    def foreign_fields(self, blueprint: Blueprint) -> Iterator[FieldProblem]:
        if blueprint.project is not None:
            yield FieldProblem(
                ("project",),
                "project is a GCP setting",
                "remove it; AWS accounts come from your AWS credentials",
                at_key=True,
            )
        for index, group in enumerate(blueprint.node_groups):
            if group.placement_max_distance is not None:
                yield FieldProblem(
                    ("node_groups", index, "placement_max_distance"),
                    "placement_max_distance is a GCP setting",
                    "remove it; AWS cluster placement groups have no distance",
                    at_key=True,
                )
        for index, _ in enumerate(blueprint.tpu_slices):
            yield FieldProblem(
                ("tpu_slices", index), "TPU slices exist only on GCP", "set cloud: gcp, or remove tpu_slices"
            )
        for index, storage in enumerate(blueprint.storage):
            path = storage.import_path if isinstance(storage, LustreSpec) else None
            if path is not None and not path.startswith("s3://"):
                yield FieldProblem(
                    ("storage", index, "import_path"),
                    f"'{path}' is not an S3 location: FSx for Lustre imports from S3",
                    "write s3://bucket/prefix (a Blob container's resource id is Azure's form)",
                    code="BP255",
                )

    def fabric_subnets(self, machine: MachineType) -> int:
        del machine  # EFA interfaces share the node subnet
        return 0

    def fabric_subnets_available(self, catalog: Catalog) -> int:
        del catalog
        return addressing.BLOCKS

    def node_selector(self, cluster: str, stack: str) -> dict[str, str]:
        return {f"tag:{BLUEPRINT_TAG}": cluster, f"tag:{STACK_TAG}": label_value(stack)}

    def inventory(self, outputs: StackOutputs) -> dict[str, Any]:
        region = outputs.blueprint.region
        return {
            "plugin": self.inventory_plugin,
            "regions": [region],
            "filters": {**outputs.node_selector, "instance-state-name": "running"},
            "hostnames": ["instance-id"],
            "keyed_groups": [
                {"key": f"tags['{NODE_GROUP_TAG}']", "prefix": INVENTORY_GROUP_PREFIX, "separator": "_"}
            ],
            "compose": {
                # No public IPs and no SSH from outside: Session Manager carries the connection; its
                # file transfers go through the cluster bucket, which the node role may read.
                "ansible_connection": "'amazon.aws.aws_ssm'",
                "ansible_aws_ssm_region": f"'{region}'",
                "ansible_aws_ssm_bucket_name": f"'{outputs.bucket}'",
                "ansible_become": "true",
            },
        }

    # At run time (see CloudProfile): the modules beside this one.
    health_store = staticmethod(store.health_store)
    host_subnet = staticmethod(addressing.aws_node_subnet)
    run_command = staticmethod(access.run_command)
    forward_port = staticmethod(access.forward_port)
    scrape_discovery = staticmethod(discovery.scrape_discovery)
    discovery_needs_project = False
    service_location = staticmethod(hostvars.service_location)
    instance_location = staticmethod(hostvars.instance_location)
    controller_state_device = hostvars.CONTROLLER_STATE_DEVICE

    def slurm_units(
        self, group: str, machine: MachineType, count: int, static: int
    ) -> tuple[FabricUnit, ...] | None:
        return None  # the node sync names each instance

    def report_channel(self, outputs: StackOutputs) -> ReportChannel | None:
        return None  # the remote command's output carries the report

    # --- What the catalog, the rules, the policy pack and the plan engine ask per cloud -----------

    def offering_problems(self, machine: MachineType, *, region: str, zone: str) -> Iterator[FieldProblem]:
        if not isinstance(machine, AwsMachineType):
            return
        zones = machine.locations.get(region)
        note = machine.unconfirmed.get("locations")
        if zones is None:
            offered = sorted(machine.locations)
            yield FieldProblem(
                (),
                f"{machine.name} is not offered in {region}",
                f"regions offering it: {listing(offered)}" + (f" ({note})" if note else ""),
            )
        elif not is_zone_id(zone):
            # Zone names map to AZ ids differently in each account, so only the region can be checked.
            yield FieldProblem(
                (),
                f"cannot check zone {zone} exactly: AWS zone names differ per account",
                f"use the zone id instead; {machine.name} is offered in {listing(zones)} "
                "(`aws ec2 describe-availability-zones` maps names to ids)",
                anchor=("zone",),
                severity=Severity.INFO,
            )
        elif zone not in zones:
            yield FieldProblem(
                (),
                f"{machine.name} is not offered in zone {zone}",
                f"zones of {region} that offer it: {listing(zones)}",
            )

    def compact_placement_problems(
        self, machine: MachineType, *, size: int, max_distance: int | None, size_field: FieldPath
    ) -> Iterator[FieldProblem]:
        return iter(())  # a cluster placement group has no size limit the catalog knows

    database_machine = MachineNaming(
        re.compile(r"db\.[a-z0-9]+\.[a-z0-9]+"), "an RDS instance class", "db.r7g.xlarge"
    )

    node_group_types = (AUTOSCALING_GROUP,)
    # Launch templates are not here: a new version changes no running instance (the group has no
    # instance refresh; an EKS node group rolls its nodes in an update, which is no replacement).
    capacity_types: Mapping[str, bool] = MappingProxyType({AUTOSCALING_GROUP: False, EKS_NODE_GROUP: False})
    plan_mocks = PLAN_MOCKS
