"""The clusterfab policy pack: serves clusterfab's CrossGuard policies to the Pulumi engine.

Run by the Pulumi CLI (`pulumi preview --policy-pack policy`, or `pulumi policy publish policy`), never
imported: constructing `PolicyPack` starts a gRPC server and blocks. The policies themselves are in
`clusterfab.policy.pack`, which has no side effects and is tested directly.
"""

from pulumi_policy import PolicyPack

from clusterfab.policy.pack import PACK_NAME, policies

PolicyPack(
    name=PACK_NAME,
    policies=policies(),
    description=(
        "clusterfab: IMDSv2 with hop limit 1, no public IPs or buckets, encryption at rest, no SSH/RDP from "
        "the internet, no * IAM grants, protected state, budget"
    ),
)
