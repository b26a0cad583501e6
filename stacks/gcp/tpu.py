"""TPU slices: queued resources of TPU VMs on the system network."""

from __future__ import annotations

from typing import Literal, assert_never

from cluster import TpuSliceExport

from clusterfab.bootstrap import boot_script_key, render_boot_fetch
from clusterfab.core.naming import physical
from clusterfab.provision.extravars import tpu_host_vars
from clusterfab.spec import CapacityBlock, FlexStart, OnDemand, Reservation, Spot, TpuSlice
from components._contracts import MountTarget
from components._naming import child
from components.gcp.tpu import QUEUED_RESOURCE_ID_MAX, GcpTpuSlices, GcpTpuSlicesArgs

from .names import SERVICE_ACCOUNT_ID_MAX
from .site import GcpRealizeError, Site


def _tpu_capacity(tpu: TpuSlice) -> Literal["on_demand", "spot", "reservation"]:
    capacity = tpu.capacity
    match capacity:
        case OnDemand():
            return "on_demand"
        case Spot():
            return "spot"
        case Reservation():
            return "reservation"
        case CapacityBlock() | FlexStart():
            raise GcpRealizeError(f"TPU slice {tpu.name}: TPU VMs are not sold as {capacity.kind}")
        case _:
            assert_never(capacity)


def tpu_slices(site: Site, tpu: TpuSlice, mounts: list[MountTarget]) -> TpuSliceExport:
    spec, catalog, stack = site.spec, site.cluster.input.catalog, site.cluster.stack
    slices = GcpTpuSlices(
        child(spec.name, tpu.name),
        GcpTpuSlicesArgs(
            node_group=tpu.name,
            project=site.project,
            zone=spec.zone,
            accelerator_type=tpu.accelerator_type,
            runtime_version=tpu.runtime_version,
            service_account_id=physical(spec.name, stack, tpu.name, max_length=SERVICE_ACCOUNT_ID_MAX),
            network_id=site.network.system_network_id,
            subnetwork_id=site.network.system_subnetwork_id,
            bucket_name=site.bucket.bucket_name,
            slices=tpu.slices,
            capacity=_tpu_capacity(tpu),
            reservation=tpu.capacity.reservation if isinstance(tpu.capacity, Reservation) else None,
            node_prefix=physical(spec.name, stack, tpu.name, max_length=QUEUED_RESOURCE_ID_MAX - 4),
            startup_script=site.bucket.bucket_name.apply(
                lambda bucket: render_boot_fetch(
                    cloud="gcp", cluster=spec.name, stack=stack, node_group=tpu.name, bucket=bucket
                )
            ),
            boot_object=(
                boot_script_key(tpu.name),
                site.cluster.boot_script(
                    name=tpu.name,
                    bucket_name=site.bucket.uploaded_name,
                    mounts=mounts,
                    playbook="tpu_host.yml",
                    playbook_vars=lambda resolved: tpu_host_vars(spec, tpu, catalog, resolved),
                    healthcheck_vars=None,
                ),
            ),
            description=f"{spec.name}/{tpu.name}",
            service_account_description=f"clusterfab TPU VMs of {spec.name}/{tpu.name} ({stack})",
            labels=site.cluster.tags(f"tpu-{tpu.name}"),
        ),
        site.opts,
    )
    return TpuSliceExport(
        nodes=slices.node_names,
        accelerator_type=tpu.accelerator_type,
        topology=tpu.topology,
        runtime_version=tpu.runtime_version,
        slices=tpu.slices,
        hosts_per_slice=tpu.hosts_per_slice,
        capacity=tpu.capacity.kind,
        identity=slices.service_account_email,
    )
