"""Load the catalog data files and answer questions about them.

The catalog is immutable and read once per process. Parsing and validating the data files costs
more than a whole `clusterfab validate` otherwise does, so the parsed catalog is also kept, compiled
(pickled), in the user's cache directory, under the sha256 of everything it is made from: the data
files, the models that read them and the versions of Python and pydantic. A changed data file is a
new key, so the cache is never stale. Unpickling runs code: a cache file is read only when it and its
folder are this user's own and nobody else may write them (not a link either); any other is ignored and
the catalog parsed from its data files.
Nothing here imports Pulumi: validation and cost estimates run on the catalog alone.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import io
import os
import pickle
import stat
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, cast

from pydantic.version import VERSION as PYDANTIC_VERSION
from ruamel.yaml import YAML

from clusterfab.catalog.azure_models import AzureTables
from clusterfab.catalog.health_models import GdrLoopbackFloors, HealthcheckThresholds, PairBandwidthFloors
from clusterfab.catalog.models import (
    AptPackage,
    AwsMachineType,
    AwsRegions,
    CapacityBlockLimits,
    CapacityBlockTimes,
    CatalogIndex,
    CudaDriverTable,
    CudaRelease,
    EfaInterface,
    FabricSoftware,
    GcpMachineType,
    GpuSupport,
    LocalDisks,
    LustreClient,
    MonitoringFacts,
    NcclBuilds,
    NcclFabricEnv,
    NcclTestsSupport,
    NetworkLayout,
    NodePackage,
    NodeRepository,
    OsImage,
    Price,
    PricingModel,
    ProviderSchemas,
    RecommendedStack,
    ReleaseList,
    ReplacementRule,
    Replacements,
    RestartingUpdate,
    SlurmFacts,
    SocketIfname,
    Source,
    StatefulType,
    StorageTier,
    TpuGeneration,
)
from clusterfab.catalog.parts import AddedPart, added_parts, parts
from clusterfab.core.plugins import catalog_parts
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
    capacity_block_times: CapacityBlockTimes
    network_layouts: dict[str, NetworkLayout]
    aws_machine_types: dict[str, AwsMachineType]
    gcp_machine_types: dict[str, GcpMachineType]
    azure: AzureTables
    """Azure's sizes, regions, RDMA range and AMLFS subnets (clusterfab.catalog.azure)."""
    tpu_generations: dict[str, TpuGeneration]
    storage_tiers: tuple[StorageTier, ...]
    prices: tuple[Price, ...]
    cuda_drivers: CudaDriverTable
    gpus: dict[str, GpuSupport]
    recommended: RecommendedStack
    fabric_software: dict[str, FabricSoftware]
    healthcheck: HealthcheckThresholds
    pair_bandwidth: PairBandwidthFloors
    gdr_loopback: GdrLoopbackFloors
    """The node health check's ib_write_bw GPUDirect loopback floors (InfiniBand machine types)."""
    images: tuple[OsImage, ...]
    monitoring: MonitoringFacts
    """The monitoring node, the monitoring host's packages, the exporters and NVIDIA's Xid catalog."""
    slurm: SlurmFacts
    """The Slurm controller and login machines, the nodes' Slurm release and its features, the ports."""
    lustre_clients: dict[str, LustreClient]
    stateful_types: dict[str, StatefulType]
    replacements: Replacements
    """Per resource type, the input changes that replace it (replacements.yaml)."""
    restarting_updates: dict[str, RestartingUpdate]
    """Per resource type, the input changes the provider makes by stopping and starting it (restarts.yaml)."""
    node_packages: dict[str, NodePackage]
    apt_repositories: dict[str, NodeRepository]
    apt_packages: tuple[AptPackage, ...]
    nccl_builds: NcclBuilds
    nccl_tests_support: NcclTestsSupport
    socket_ifnames: dict[str, SocketIfname]
    fabric_env: dict[str, NcclFabricEnv]
    """Per machine type, the fabric's NCCL topology file and variables (software.yaml `nccl_fabric_env`)."""
    local_disks: dict[str, LocalDisks]
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

    def apt_package(self, name: str, upstream_version: str | None = None) -> AptPackage | None:
        """The recorded package `name` (with that upstream version, when given); None: not recorded."""
        for package in self.apt_packages:
            if package.name == name and upstream_version in (None, package.upstream_version):
                return package
        return None

    def nccl_package_cuda(self, nccl: str, cuda: str) -> str:
        """The `+cuda<major.minor>` of the libnccl2 build a node installs for NCCL `nccl` with CUDA `cuda`.

        NVIDIA builds each NCCL release for a few CUDA minors only (2.28.9: 13.0; 2.29.x: 13.1), and an
        NCCL built for an older minor of the same major runs with a newer toolkit. So: the recorded build
        for the toolkit's own minor, else the newest recorded build of its major not newer than it, else
        (nothing recorded) the toolkit's major.minor.
        """
        major_minor = ".".join(cuda.split(".")[:2])
        major = major_minor.split(".")[0]
        built = []
        for package in self.apt_packages:
            if package.name == "libnccl2" and package.upstream_version == nccl and package.version:
                built.append(package.version.rsplit("+cuda", 1)[1])
        usable = [
            c for c in built if c.split(".")[0] == major and version_tuple(c) <= version_tuple(major_minor)
        ]
        return max(usable, key=version_tuple, default=major_minor)

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


def _replacements(data: Any) -> Replacements:
    rules = [ReplacementRule.model_validate(t) for t in data["types"]]
    return Replacements(
        providers={k: ProviderSchemas.model_validate(v) for k, v in data["providers"].items()},
        types={r.type: r for r in rules},
    )


CACHE_DIR_VARIABLE = "CLUSTERFAB_CACHE_DIR"
"""Where the compiled catalog is kept (default $XDG_CACHE_HOME/clusterfab or ~/.cache/clusterfab);
set it to an empty string to read the data files every time."""
_CACHE_FORMAT = b"clusterfab-catalog-cache/1"


def _cache_dir() -> Path | None:
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "clusterfab"


def catalog_digest() -> str:
    """sha256 of what the parsed catalog is made from (the cache key)."""
    package = resources.files("clusterfab.catalog")
    digest = hashlib.sha256(_CACHE_FORMAT)
    digest.update(f"{sys.version}|{PYDANTIC_VERSION}".encode())
    # Every module of the package: the models and each cloud's part (and the models of its own).
    for module in sorted(e.name for e in package.iterdir() if e.name.endswith(".py")):
        digest.update(package.joinpath(module).read_bytes())
    for entry in sorted(package.joinpath("data").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            digest.update(entry.name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return digest.hexdigest()


def _own(info: os.stat_result) -> bool:
    """Whether this user owns it and nobody else may write it."""
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _cached(path: Path) -> Catalog | None:
    """The catalog pickled at `path`, if the file and its folder are this user's own and nobody else may
    change them: unpickling runs code. In a folder others may write, anyone could put a link there to a
    file of this user's whose content they chose (or swap the file between a check and the read), so the
    folder is checked too, and the file is opened from the folder checked, never through a link."""
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if not _own(os.fstat(folder)):
                return None
            descriptor = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
        finally:
            os.close(folder)
        with os.fdopen(descriptor, "rb") as stream:
            if not _own(os.fstat(stream.fileno())):
                return None
            loaded = pickle.load(stream)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None
    return loaded if isinstance(loaded, Catalog) else None


def _store(path: Path, catalog: Catalog) -> None:
    """Write the cache atomically; a cache that cannot be written is only slower, never an error."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".catalog-", delete=False) as stream:
            pickle.dump(catalog, stream, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(stream.name, path)
    except OSError:
        return


def _with_added_parts(load: Callable[[], Catalog]) -> Callable[[], Catalog]:
    """`load` (the shipped catalog) once per process, with the rows of the clouds registered at run time
    with a catalog part added (once per set of them).

    Why here: every command gets its catalog from `load_catalog()`, and a cloud may be registered after
    the first call (a test registers one, a package on import), so the registry's state at each call
    decides; the shipped catalog stays what is compiled and cached, never mixed with rows from outside."""
    shipped = functools.cache(load)

    @functools.cache
    def extended(registered: tuple[tuple[str, str], ...]) -> Catalog:
        del registered  # the cache key: added_parts() imports the same modules
        return with_rows(shipped(), added_parts())

    @functools.wraps(load)
    def loaded() -> Catalog:
        registered = tuple(catalog_parts().items())
        return extended(registered) if registered else shipped()

    return loaded


def with_rows(catalog: Catalog, added: tuple[tuple[str, AddedPart], ...]) -> Catalog:
    """`catalog` with each part's rows added to its shared tables; a part may add rows, never replace
    one the catalog has (ValueError), nor give a field that is not a table (AttributeError, ValueError)."""
    tables: dict[str, Any] = {}
    for cloud, added_part in added:
        for name, rows in added_part.rows().items():
            table = tables.get(name, getattr(catalog, name))
            if isinstance(table, tuple):
                tables[name] = (*table, *rows)
            elif isinstance(table, dict) and isinstance(rows, Mapping) and not table.keys() & rows.keys():
                tables[name] = {**table, **rows}
            else:
                raise ValueError(f"cloud {cloud}'s catalog part cannot add {name}: not new rows of a table")
    return dataclasses.replace(catalog, **tables)


@_with_added_parts
def load_catalog() -> Catalog:
    """The catalog shipped with this version of clusterfab (once per process; compiled cache), with the
    rows of the clouds registered at run time (`_with_added_parts`)."""
    folder = _cache_dir()
    if folder is None:
        return parse_catalog()
    path = folder / f"catalog-{catalog_digest()[:32]}.pickle"
    catalog = _cached(path)
    if catalog is None:
        catalog = parse_catalog()
        _store(path, catalog)
    return catalog


def parse_catalog() -> Catalog:
    """The catalog read and validated from its data files."""
    cloud_tables: dict[str, Any] = {}
    for cloud, cloud_part in parts():
        cloud_tables.update(cloud_part.tables(_read(f"{cloud}.yaml")))
    return Catalog(**_general_tables(), **_software_tables(_read("software.yaml")), **cloud_tables)


def _general_tables() -> dict[str, Any]:
    """The tables of the data files every cloud shares but software.yaml and packages.yaml."""
    sources = cast("dict[str, Any]", _read("sources.yaml"))
    stateful = (StatefulType.model_validate(x) for x in _read("stateful.yaml")["stateful_types"])
    restarts = (RestartingUpdate.model_validate(x) for x in _read("restarts.yaml")["restarting_updates"])
    packages = _read("packages.yaml")
    return {
        "index": CatalogIndex.model_validate(_read("catalog.yaml")),
        "sources": {k: Source.model_validate(v) for k, v in sources.items()},
        "tpu_generations": {
            g.name: g for g in (TpuGeneration.model_validate(x) for x in _read("tpu.yaml")["generations"])
        },
        "storage_tiers": tuple(StorageTier.model_validate(t) for t in _read("storage.yaml")["tiers"]),
        "prices": tuple(Price.model_validate(p) for p in _read("prices.yaml")["prices"]),
        "monitoring": MonitoringFacts.model_validate(_read("monitoring.yaml")),
        "slurm": SlurmFacts.model_validate(_read("slurm.yaml")),
        "images": tuple(OsImage.model_validate(i) for i in _read("images.yaml")["images"]),
        "stateful_types": {t.type: t for t in stateful},
        "apt_repositories": {
            r.id: r for r in (NodeRepository.model_validate(x) for x in packages["repositories"])
        },
        "apt_packages": tuple(AptPackage.model_validate(x) for x in packages["packages"]),
        "nccl_builds": NcclBuilds.model_validate(_read("nccl_builds.yaml")),
        "replacements": _replacements(_read("replacements.yaml")),
        "restarting_updates": {r.type: r for r in restarts},
        "releases": {k: ReleaseList.model_validate(v) for k, v in _read("releases.yaml").items()},
    }


def _software_tables(software: Any) -> dict[str, Any]:
    """The tables of software.yaml: versions, what supports what, and the health check floors."""
    fabrics = (FabricSoftware.model_validate(f) for f in software["fabrics"])
    gpus = (GpuSupport.model_validate(g) for g in software["gpus"])
    ifnames = (SocketIfname.model_validate(x) for x in software["nccl_socket_ifnames"])
    fabric_env = (NcclFabricEnv.model_validate(x) for x in software["nccl_fabric_env"])
    disks = (LocalDisks.model_validate(x) for x in software["local_scratch_devices"])
    lustre = (LustreClient.model_validate(x) for x in software["lustre_clients"])
    packages = (NodePackage.model_validate(x) for x in software["node_packages"])
    return {
        "cuda_drivers": CudaDriverTable.model_validate(software["cuda_min_driver"]),
        "gpus": {g.model: g for g in gpus},
        "recommended": RecommendedStack.model_validate(software["recommended"]),
        "fabric_software": {f.name: f for f in fabrics},
        "healthcheck": HealthcheckThresholds.model_validate(software["healthcheck_min_busbw_gbytes_per_s"]),
        "pair_bandwidth": PairBandwidthFloors.model_validate(software["healthcheck_pair_busbw_gbytes_per_s"]),
        "gdr_loopback": GdrLoopbackFloors.model_validate(software["healthcheck_ib_write_bw_gdr_gbps"]),
        "node_packages": {p.name: p for p in packages},
        "nccl_tests_support": NcclTestsSupport.model_validate(software["nccl_tests_min_for_cuda"]),
        "socket_ifnames": {i.machine_type: i for i in ifnames},
        "fabric_env": {e.machine_type: e for e in fabric_env},
        "local_disks": {d.cloud: d for d in disks},
        "lustre_clients": {c.cloud: c for c in lustre},
    }
