"""Load the catalog data files and answer questions about them.

The catalog is read once per process (about 60 ms) and is immutable. Nothing here imports Pulumi:
validation and cost estimates run on the catalog alone.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

from ruamel.yaml import YAML

from clusterfab.catalog.models import (
    AwsMachineType,
    AwsRegions,
    CapacityBlockLimits,
    CatalogIndex,
    CudaDriverTable,
    CudaRelease,
    EfaInterface,
    FabricSoftware,
    GcpMachineType,
    GpuSupport,
    HealthcheckThresholds,
    LustreClient,
    NetworkLayout,
    NodePackage,
    OsImage,
    Price,
    PricingModel,
    RecommendedStack,
    ReleaseList,
    Source,
    StatefulType,
    StorageTier,
    TpuGeneration,
)
from clusterfab.core.vocab import Cloud


def version_tuple(version: str) -> tuple[int, ...]:
    """'580.95.05' -> (580, 95, 5): compare driver and library versions numerically."""
    return tuple(int(part) for part in version.split("."))


def at_least(version: str, minimum: str) -> bool:
    """Whether `version` meets `minimum`; a version given as a branch ("580") is compared as that branch."""
    have, need = version_tuple(version), version_tuple(minimum)
    return have >= need[: len(have)]


@dataclass(frozen=True)
class Catalog:
    """Machine types, TPU generations, storage tiers, prices and software compatibility."""

    index: CatalogIndex
    sources: dict[str, Source]
    aws_regions: AwsRegions
    capacity_blocks: CapacityBlockLimits
    network_layouts: dict[str, NetworkLayout]
    aws_machine_types: dict[str, AwsMachineType]
    gcp_machine_types: dict[str, GcpMachineType]
    tpu_generations: dict[str, TpuGeneration]
    storage_tiers: tuple[StorageTier, ...]
    prices: tuple[Price, ...]
    cuda_drivers: CudaDriverTable
    gpus: dict[str, GpuSupport]
    recommended: RecommendedStack
    fabric_software: dict[str, FabricSoftware]
    healthcheck: HealthcheckThresholds
    images: tuple[OsImage, ...]
    lustre_clients: dict[str, LustreClient]
    stateful_types: dict[str, StatefulType]
    node_packages: dict[str, NodePackage]
    releases: dict[str, ReleaseList]
    """`nvidia_driver` and `nccl`: the versions NVIDIA released, to warn about one that does not exist."""

    @property
    def version(self) -> str:
        return self.index.version

    def default_image(self, cloud: Cloud, cpu_architecture: str) -> OsImage:
        """The OS image nodes boot when the blueprint names none."""
        for image in self.images:
            if (image.cloud, image.cpu_architecture) == (cloud, cpu_architecture):
                return image
        raise LookupError(f"the catalog has no {cloud} image for {cpu_architecture}")

    def efa_interfaces(self, machine: AwsMachineType) -> list[EfaInterface]:
        """The launch-template network interfaces that give `machine` its full EFA bandwidth."""
        return self.network_layouts[machine.efa_layout].expand()

    def storage_tier(self, cloud: Cloud, kind: str, tier: str) -> StorageTier | None:
        for candidate in self.storage_tiers:
            if (candidate.cloud, candidate.kind, candidate.tier) == (cloud, kind, tier):
                return candidate
        return None

    def tier_names(self, kind: str) -> list[str]:
        """The tiers of a storage kind, over all clouds, in catalog order."""
        return list(dict.fromkeys(t.tier for t in self.storage_tiers if t.kind == kind))

    def storage_tiers_for(self, cloud: Cloud, kind: str) -> list[StorageTier]:
        return [t for t in self.storage_tiers if (t.cloud, t.kind) == (cloud, kind)]

    def price(self, cloud: Cloud, sku: str, region: str, model: PricingModel) -> Price | None:
        """The newest price for (sku, pricing model) that applies in `region`."""
        matches = [
            p
            for p in self.prices
            if (p.cloud, p.sku, p.pricing_model) == (cloud, sku, model) and region in p.regions
        ]
        return max(matches, key=lambda p: (p.as_of, p.confidence != "unconfirmed"), default=None)

    def is_stale(self, as_of: dt.date, today: dt.date) -> bool:
        return (today - as_of).days > self.index.stale_after_days

    def min_driver_for_cuda(self, cuda: str) -> CudaRelease | None:
        """The minimum-driver entry for a CUDA version ("13.0" is the GA release, "13.0.2" update 2).

        For an update the table lacks, the closest older update of the same release applies.
        """
        parts = cuda.split(".")
        release, update = ".".join(parts[:2]), int(parts[2]) if len(parts) > 2 else 0
        candidates = [r for r in self.cuda_drivers.releases if r.cuda == release and r.update <= update]
        return max(candidates, key=lambda r: r.update, default=None)


def schema_choices(catalog: Catalog) -> dict[tuple[str, str], list[str]]:
    """Blueprint fields whose valid values are catalog entries, for the JSON Schema's enums."""
    return {
        ("TpuSliceSpec", "generation"): sorted(catalog.tpu_generations),
        ("FilestoreSpec", "tier"): catalog.tier_names("filestore"),
    }


def _read(name: str) -> Any:
    text = resources.files("clusterfab.catalog").joinpath("data", name).read_text("utf-8")
    return YAML(typ="safe").load(io.StringIO(text))


@functools.cache
def load_catalog() -> Catalog:
    """The catalog shipped with this version of clusterfab (parsed once per process)."""
    aws = _read("aws.yaml")
    gcp = _read("gcp.yaml")
    tpu = _read("tpu.yaml")
    software = _read("software.yaml")
    aws_types = [AwsMachineType.model_validate(m) for m in aws["machine_types"]]
    gcp_types = [GcpMachineType.model_validate(m) for m in gcp["machine_types"]]
    generations = [TpuGeneration.model_validate(g) for g in tpu["generations"]]
    fabrics = [FabricSoftware.model_validate(f) for f in software["fabrics"]]
    gpus = [GpuSupport.model_validate(g) for g in software["gpus"]]
    return Catalog(
        index=CatalogIndex.model_validate(_read("catalog.yaml")),
        sources={
            k: Source.model_validate(v) for k, v in cast("dict[str, Any]", _read("sources.yaml")).items()
        },
        aws_regions=AwsRegions.model_validate(aws["regions"]),
        capacity_blocks=CapacityBlockLimits.model_validate(aws["capacity_blocks"]),
        network_layouts={k: NetworkLayout.model_validate(v) for k, v in aws["network_layouts"].items()},
        aws_machine_types={m.name: m for m in aws_types},
        gcp_machine_types={m.name: m for m in gcp_types},
        tpu_generations={g.name: g for g in generations},
        storage_tiers=tuple(StorageTier.model_validate(t) for t in _read("storage.yaml")["tiers"]),
        prices=tuple(Price.model_validate(p) for p in _read("prices.yaml")["prices"]),
        cuda_drivers=CudaDriverTable.model_validate(software["cuda_min_driver"]),
        gpus={g.model: g for g in gpus},
        recommended=RecommendedStack.model_validate(software["recommended"]),
        fabric_software={f.name: f for f in fabrics},
        healthcheck=HealthcheckThresholds.model_validate(software["healthcheck_min_busbw_gbytes_per_s"]),
        node_packages={p.name: p for p in (NodePackage.model_validate(x) for x in software["node_packages"])},
        images=tuple(OsImage.model_validate(i) for i in _read("images.yaml")["images"]),
        stateful_types={
            t.type: t
            for t in (StatefulType.model_validate(x) for x in _read("stateful.yaml")["stateful_types"])
        },
        lustre_clients={
            c.cloud: c for c in (LustreClient.model_validate(x) for x in software["lustre_clients"])
        },
        releases={k: ReleaseList.model_validate(v) for k, v in _read("releases.yaml").items()},
    )
