"""The rules of a Kubernetes cluster's node pools (GKE node pools, EKS managed node groups): the machines a
service's GPU node images run, TPU multislice on GKE, flex-start as GKE's queued provisioning, and what an
autoscaled pool means on reserved capacity.

The facts and their sources: node images per machine family in facts.yaml (S-EKS-ML-AMI, S-CTK); GKE
multislice joins only multi-host TPU slice node pools (S-GKE-MULTISLICE); a queued provisioning node pool
has an autoscaling minimum of 0 and no compact placement unless it holds TPUs (S-CTK:
modules/compute/gke-node-pool/main.tf, the checks of enable_queued_provisioning).
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.core.findings import Finding
from clusterfab.core.hints import listing
from clusterfab.scheduler.base import RuleView
from clusterfab.scheduler.kubernetes.facts import NodePools, kubernetes_facts


def check(ctx: RuleView) -> Iterator[Finding]:
    pools = kubernetes_facts().pools(ctx.blueprint.cloud)
    if pools is None:
        return
    yield from _machines(ctx, pools)
    yield from _reserved_autoscaling(ctx, pools)
    yield from _no_autoscaler(ctx, pools)
    # Flex-start capacity and TPU slices exist on GCP alone: a group or slice the catalog does not sell on
    # the blueprint's cloud has its own finding (BP206, BP110) and none of these.
    yield from _queued_provisioning(ctx, pools)
    yield from _multislice(ctx, pools)


def _machines(ctx: RuleView, pools: NodePools) -> Iterator[Finding]:
    for group in ctx.spec.node_groups:
        if pools.image(group.machine.name) is None:
            families = [family for image in pools.images for family in image.families]
            yield ctx.finding(
                "BP177",
                (*group.path, "machine_type"),
                f"{pools.service}'s GPU node images do not run {group.machine.name}",
                hint=f"{pools.service} node pools run the families {listing(families)}",
            )


def _reserved_autoscaling(ctx: RuleView, pools: NodePools) -> Iterator[Finding]:
    for group in ctx.spec.node_groups:
        if group.autoscaled and group.capacity.kind == "reservation":
            yield ctx.finding(
                "BP181",
                (*group.path, "autoscaling"),
                f"node group '{group.name}' is autoscaled on a reservation: the reservation is billed "
                "whether its instances run or not, so the cluster autoscaler's removing idle nodes saves "
                "nothing and makes the next pod wait for a node to boot",
                hint=f"use `count: {group.max_size}` on reserved capacity",
                at_key=True,
            )


def _no_autoscaler(ctx: RuleView, pools: NodePools) -> Iterator[Finding]:
    if pools.autoscaler:
        return
    for group in ctx.spec.node_groups:
        if group.autoscaled and group.capacity.kind != "reservation":
            yield ctx.finding(
                "BP182",
                (*group.path, "autoscaling"),
                f"{pools.service} resizes node group '{group.name}' only when a cluster autoscaler runs in "
                f"the cluster, and clusterfab installs none: it keeps {group.min_size} nodes until someone "
                "scales it",
                hint=f"use `count: N`, or run Cluster Autoscaler or Karpenter in the cluster (`cost` prices "
                f"the group at its max, {group.max_size})",
                at_key=True,
            )


def _queued_provisioning(ctx: RuleView, pools: NodePools) -> Iterator[Finding]:
    """GKE buys flex-start for a node pool as queued provisioning: the pool holds no node until a
    ProvisioningRequest (Kueue's) gets all of a workload's nodes at once."""
    for group in ctx.spec.node_groups:
        if group.capacity.kind != "flex_start" or "flex_start" not in group.machine.purchase_options:
            continue
        if group.autoscaled and group.min_size > 0:
            yield ctx.finding(
                "BP179",
                (*group.path, "autoscaling", "min"),
                f"node group '{group.name}' is flex-start: {pools.service}'s queued provisioning pool starts "
                "empty and gets nodes only for a queued workload, so it has no minimum size",
                hint="set autoscaling.min to 0, or use `count:` (the pool's most nodes)",
            )
        written = ctx.blueprint.node_groups[group.index].placement
        if written == "compact":
            yield ctx.finding(
                "BP180",
                (*group.path, "placement"),
                f"node group '{group.name}' is flex-start: a {pools.service} queued provisioning pool of "
                "GPUs takes no compact placement policy",
                hint="remove placement (flex-start capacity arrives together), or use another capacity kind",
            )


def _multislice(ctx: RuleView, pools: NodePools) -> Iterator[Finding]:
    for tpu in ctx.spec.tpu_slices:
        if tpu.slices > 1 and tpu.shape.hosts == 1 and tpu.generation.cloud == pools.cloud:
            multi_host = [t for t, shape in tpu.generation.topologies.items() if shape.hosts > 1]
            hint = f"use a topology of several hosts ({multi_host[0]} is the smallest)" if multi_host else ""
            yield ctx.finding(
                "BP178",
                (*tpu.path, "slices"),
                f"{pools.service} joins only multi-host TPU slices into a multislice; a "
                f"{tpu.generation.name} {tpu.topology} slice is one host",
                hint=f"{hint}, or slices: 1" if hint else "use slices: 1",
            )
