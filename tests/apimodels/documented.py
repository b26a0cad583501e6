"""Constraints the APIs state in words rather than as model data, keyed by (API, field path).

Each entry quotes the text it rests on. Without a `source`, the quote is the field's own
documentation in the API model (botocore's `documentation`, a discovery `description`, a proto
comment), and a test checks that it is still there. With a `source`, it comes from the page named.
"""

from __future__ import annotations

from tests.apimodels.check import Documented

_LT = "RequestLaunchTemplateData"
_IT = "InstanceTemplate.properties"
_EC2_TEXT = r"^[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]{0,255}$"
_GCP_LABELS = "https://cloud.google.com/compute/docs/labeling-resources#requirements"
_LABEL_KEY = Documented(
    quote="Keys must start with a lowercase letter or international character. Keys have a minimum length of "
    "1 character and a maximum length of 63 characters. Keys and values can contain only lowercase "
    "letters, numeric characters, underscores, and dashes.",
    pattern=r"^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$",
    source=_GCP_LABELS,
)
_LABEL_VALUE = Documented(
    quote="Values can be empty, and have a maximum length of 63 characters. Keys and values can contain only "
    "lowercase letters, numeric characters, underscores, and dashes.",
    pattern=r"^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$",
    source=_GCP_LABELS,
)
_EC2_TAG_KEY = Documented(
    quote="Tag keys are case-sensitive and accept a maximum of 127 Unicode characters. May not begin with aws:",
    pattern=r"^(?!aws:).{1,127}$",
)
_EC2_TAG_VALUE = Documented(
    quote="Tag values are case-sensitive and accept a maximum of 256 Unicode characters.",
    pattern=r"^.{0,256}$",
)

_LOG_RETENTION = (
    *(1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365),
    *(400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653),
)

DOCUMENTED: dict[tuple[str, str], Documented] = {
    # --- AWS --------------------------------------------------------------------------------------
    ("ec2", f"{_LT}.NetworkInterfaces[].InterfaceType"): Documented(
        quote="Valid values: interface | efa | efa-only", enum=("interface", "efa", "efa-only")
    ),
    ("ec2", f"{_LT}.MetadataOptions.HttpPutResponseHopLimit"): Documented(
        quote="Possible values: Integers from 1 to 64", minimum=1, maximum=64
    ),
    ("ec2", f"{_LT}.BlockDeviceMappings[].Ebs.Throughput"): Documented(
        quote="Valid Range: Minimum value of 125. Maximum value of 2,000.", minimum=125, maximum=2000
    ),
    ("ec2", "CreateFlowLogsRequest.MaxAggregationInterval"): Documented(
        quote="The possible values are 60 seconds (1 minute) or 600 seconds (10 minutes).", enum=("60", "600")
    ),
    ("ec2", "CreateFlowLogsRequest.TagSpecifications[].Tags[].Key"): _EC2_TAG_KEY,
    ("ec2", "CreateFlowLogsRequest.TagSpecifications[].Tags[].Value"): _EC2_TAG_VALUE,
    ("logs", "PutRetentionPolicyRequest.retentionInDays"): Documented(
        quote="Possible values are: "
        + ", ".join(map(str, _LOG_RETENTION[:-1]))
        + f", and {_LOG_RETENTION[-1]}.",
        enum=tuple(map(str, _LOG_RETENTION)),
    ),
    ("ec2", "Tag.Key"): _EC2_TAG_KEY,
    ("ec2", "Tag.Value"): _EC2_TAG_VALUE,
    ("ec2", f"{_LT}.TagSpecifications[].Tags[].Key"): _EC2_TAG_KEY,
    ("ec2", f"{_LT}.TagSpecifications[].Tags[].Value"): _EC2_TAG_VALUE,
    ("ec2", "CreateSecurityGroupRequest.Description"): Documented(
        quote="Up to 255 characters in length Valid characters: a-z, A-Z, 0-9, spaces, and ._-:/()#,@[]+=&;{}!$*",
        pattern=_EC2_TEXT,
    ),
    ("ec2", "IpPermission.IpRanges[].Description"): Documented(
        quote="Up to 255 characters in length. Allowed characters are a-z, A-Z, 0-9, spaces, and "
        "._-:/()#,@[]+=&;{}!$*",
        pattern=_EC2_TEXT,
    ),
    ("ec2", "IpPermission.IpProtocol"): Documented(
        quote="The IP protocol name ( tcp , udp , icmp , icmpv6 ) or number (see Protocol Numbers ). "
        "Use -1 to specify all protocols.",
        pattern=r"^(tcp|udp|icmp|icmpv6|-1|[0-9]{1,3})$",
    ),
    ("autoscaling", "CreateAutoScalingGroupType.HealthCheckType"): Documented(
        quote="A comma-separated value string of one or more health check types. The valid values are EC2 , "
        "EBS , ELB , and VPC_LATTICE .",
        pattern=r"^(EC2|EBS|ELB|VPC_LATTICE)(,(EC2|EBS|ELB|VPC_LATTICE))*$",
    ),
    ("fsx", "CreateFileSystemRequest.FileSystemTypeVersion"): Documented(
        quote="Valid values are 2.10 , 2.12 , and 2.15", enum=("2.10", "2.12", "2.15")
    ),
    ("s3", "CreateBucketRequest.Bucket"): Documented(
        quote="Bucket names must be between 3 (min) and 63 (max) characters long. Bucket names can consist only "
        "of lowercase letters, numbers, periods (.), and hyphens (-). Bucket names must begin and end with a "
        "letter or number. [bucket_prefix:] Must be lowercase and less than or equal to 37 characters in length.",
        pattern=r"^[a-z0-9][a-z0-9.-]{0,36}$",
        source="https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html; the provider "
        "appends 26 characters to bucket_prefix (terraform-provider-aws docs, r/s3_bucket)",
    ),
    ("budgets", "Budget.CostFilters{key}"): Documented(
        quote="Name of the cost filter. Valid values are `AZ`, `BillingEntity`, `CostCategory`, `InstanceType`, `InvoicingEntity`, `LegalEntityName`, `LinkedAccount`, `Operation`, `PurchaseType`, `Region`, `Service`, `TagKeyValue`, `UsageType`, and `UsageTypeGroup`.",
        enum=(
            "AZ",
            "BillingEntity",
            "CostCategory",
            "InstanceType",
            "InvoicingEntity",
            "LegalEntityName",
            "LinkedAccount",
            "Operation",
            "PurchaseType",
            "Region",
            "Service",
            "TagKeyValue",
            "UsageType",
            "UsageTypeGroup",
        ),
        source="pulumi-aws budgets.BudgetCostFilterArgs.name (terraform-provider-aws r/budgets_budget); the API model's CostFilters key is a plain string",
    ),
    # --- Google -----------------------------------------------------------------------------------
    ("compute.v1", f"{_IT}.machineType"): Documented(
        quote="This field only accepts a machine type name, for example `n2-standard-4`.",
        pattern=r"^[a-z0-9-]+$",
    ),
    ("storage.v1", "Bucket.storageClass"): Documented(
        quote="Values include MULTI_REGIONAL, REGIONAL, STANDARD, NEARLINE, COLDLINE, ARCHIVE, and DURABLE_REDUCED_AVAILABILITY.",
        enum=(
            "MULTI_REGIONAL",
            "REGIONAL",
            "STANDARD",
            "NEARLINE",
            "COLDLINE",
            "ARCHIVE",
            "DURABLE_REDUCED_AVAILABILITY",
        ),
    ),
    ("storage.v1", "Bucket.iamConfiguration.publicAccessPrevention"): Documented(
        quote="Currently, 'inherited' and 'enforced' are supported.", enum=("inherited", "enforced")
    ),
    (
        "billingbudgets.v1",
        "GoogleCloudBillingBudgetsV1Budget.amount.specifiedAmount.currencyCode",
    ): Documented(quote="The three-letter currency code defined in ISO 4217.", pattern=r"^[A-Z]{3}$"),
    ("compute.v1", f"{_IT}.disks[].initializeParams.diskSizeGb"): Documented(
        quote="The size must be at least 10 GB.", minimum=10
    ),
    ("compute.v1", f"{_IT}.metadata.items[].key"): Documented(
        quote="Keys must conform to the following regexp: [a-zA-Z0-9-_]+, and be less than 128 bytes in length.",
        pattern=r"^[a-zA-Z0-9_-]{1,127}$",
    ),
    ("compute.v1", f"{_IT}.metadata.items[].value"): Documented(
        quote="The only restriction placed on values is that their size must be less than or equal to 262144 "
        "bytes (256 KiB).",
        max_bytes=262144,
    ),
    ("compute.v1", "InstanceGroupManager.baseInstanceName"): Documented(
        quote="The maximum character length is 58 and the name must comply with RFC1035 format.",
        pattern=r"^[a-z](([-a-z0-9]{0,57})|([-a-z0-9]{0,51}-#{1,10}(\[[0-9]{1,10}\])?))$",
    ),
    ("compute.v1", "Network.mtu"): Documented(
        quote="The minimum value for this field is 1300 and the maximum value is 8896.",
        minimum=1300,
        maximum=8896,
    ),
    ("compute.v1", "Firewall.allowed[].IPProtocol"): Documented(
        quote="This value can either be one of the following well known protocol strings (tcp, udp,icmp, esp, "
        "ah, ipip,sctp) or the IP protocol number.",
        pattern=r"^(tcp|udp|icmp|esp|ah|ipip|sctp|all|[0-9]{1,3})$",
        also="`all`: pulumi-gcp FirewallAllowArgs.protocol (terraform-provider-google google_compute_firewall): "
        "'(tcp, udp, icmp, esp, ah, sctp, ipip, all), or the IP protocol number'",
    ),
    ("compute.v1", "Firewall.priority"): Documented(
        quote="This is an integer between `0` and `65535`, both inclusive.", minimum=0, maximum=65535
    ),
    ("compute.v1", f"{_IT}.labels{{key}}"): _LABEL_KEY,
    ("compute.v1", f"{_IT}.labels{{}}"): _LABEL_VALUE,
    ("compute.v1", f"{_IT}.disks[].initializeParams.labels{{key}}"): _LABEL_KEY,
    ("compute.v1", f"{_IT}.disks[].initializeParams.labels{{}}"): _LABEL_VALUE,
    ("compute.v1", "Address.labels{key}"): _LABEL_KEY,
    ("compute.v1", "Address.labels{}"): _LABEL_VALUE,
    ("tpu.v2", "Node.labels{key}"): _LABEL_KEY,
    ("tpu.v2", "Node.labels{}"): _LABEL_VALUE,
    ("file.v1", "Instance.labels{key}"): _LABEL_KEY,
    ("file.v1", "Instance.labels{}"): _LABEL_VALUE,
    ("storage.v1", "Bucket.labels{key}"): _LABEL_KEY,
    ("storage.v1", "Bucket.labels{}"): _LABEL_VALUE,
    ("lustre.v1", "Instance.labels{key}"): _LABEL_KEY,
    ("lustre.v1", "Instance.labels{}"): _LABEL_VALUE,
    ("monitoring.v3", "NotificationChannel.userLabels{key}"): _LABEL_KEY,
    ("monitoring.v3", "NotificationChannel.userLabels{}"): _LABEL_VALUE,
    ("tpu.v2", "Node.description"): Documented(quote="Maximum of 512 characters.", pattern=r"^.{0,512}$"),
    ("file.v1", "Instance.description"): Documented(
        quote="The description of the instance (2048 characters or less).", pattern=r"^.{0,2048}$"
    ),
    ("file.v1", "Instance.fileShares[].name"): Documented(
        quote="Must use 1-16 characters for the basic service tier and 1-63 characters for all other service "
        "tiers. Must use lowercase letters, numbers, or underscores `[a-z0-9_]`. Must start with a letter.",
        pattern=r"^[a-z][a-z0-9_]{0,62}$",
    ),
    ("lustre.v1", "Instance.filesystem"): Documented(
        quote="Must be eight characters or less and can only contain letters and numbers.",
        pattern=r"^[A-Za-z0-9]{1,8}$",
    ),
    ("lustre.v1", "Instance.perUnitStorageThroughput"): Documented(
        quote="Valid values are 125, 250, 500, 1000.", enum=("125", "250", "500", "1000")
    ),
    ("lustre.v1", "CreateInstanceRequest.instanceId"): Documented(
        quote="Must contain only lowercase letters, numbers, and hyphens. - Must start with a letter. - Must be "
        "between 1-63 characters. - Must end with a number or a letter.",
        pattern=r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$",
    ),
    ("iam.v1", "CreateServiceAccountRequest.accountId"): Documented(
        quote="must be 6-30 characters long, and match the regular expression `[a-z]([-a-z0-9]*[a-z0-9])`",
        pattern=r"^(?=.{6,30}$)[a-z]([-a-z0-9]*[a-z0-9])$",
    ),
    ("iam.v1", "ServiceAccount.description"): Documented(
        quote="The maximum length is 256 UTF-8 bytes.", max_bytes=256
    ),
    ("iam.v1", "ServiceAccount.displayName"): Documented(
        quote="The maximum length is 100 UTF-8 bytes.", max_bytes=100
    ),
    ("billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget.displayName"): Documented(
        quote="The name must be less than or equal to 60 characters.", pattern=r"^.{0,60}$"
    ),
    ("billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget.thresholdRules[].thresholdPercent"): Documented(
        quote="Validation: non-negative number.", minimum=0
    ),
    ("monitoring.v3", "NotificationChannel.displayName"): Documented(
        quote="The display name is limited to 512 Unicode characters.", pattern=r"^.{0,512}$"
    ),
}
