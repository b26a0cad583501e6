"""The catalog as the CLI shows it: the JSON contract of architecture §5 and Rich tables."""

from __future__ import annotations

import sys
from typing import Any

from clusterfab.catalog.models import AwsMachineType, GcpMachineType, Sourced
from clusterfab.catalog.query import Catalog


def _provenance(record: Sourced) -> dict[str, Any]:
    return {
        "source": record.source,
        "as_of": record.as_of.isoformat(),
        "confidence": record.confidence,
        "unconfirmed": record.unconfirmed,
    }


def _machine(catalog: Catalog, machine: AwsMachineType | GcpMachineType) -> dict[str, Any]:
    accelerator = machine.accelerator
    row: dict[str, Any] = {
        "cloud": machine.cloud,
        "name": machine.name,
        "accelerator": accelerator.model,
        "accelerator_count": accelerator.count,
        "accelerator_memory_gib": accelerator.memory_gib,
        "vcpus": machine.vcpus,
        "memory_gib": machine.memory_gib,
        "fabric": machine.fabric,
        "network_cards": None,
        "max_efa_interfaces": None,
        "gpu_nics": None,
        "locations": [],
        "cpu_architecture": machine.cpu_architecture,
        "network_gbps": machine.network_gbps,
        "purchase_options": machine.purchase_options,
    }
    if isinstance(machine, AwsMachineType):
        row.update(
            network_cards=machine.network_cards,
            max_efa_interfaces=machine.max_efa_interfaces,
            locations=sorted(z for zones in machine.locations.values() for z in zones),
            efa_interfaces=[i.model_dump() for i in catalog.efa_interfaces(machine)],
        )
    else:
        row.update(
            gpu_nics=machine.gpu_nics,
            locations=sorted(machine.zones),
            networks=machine.network.model_dump(),
            placement=machine.placement.model_dump(),
        )
    row.update(_provenance(machine))
    return row


def catalog_json(catalog: Catalog, cloud: str | None = None) -> dict[str, Any]:
    """The catalog in the `clusterfab catalog --format json` contract, optionally for one cloud."""
    every: list[AwsMachineType | GcpMachineType] = [
        *catalog.aws_machine_types.values(),
        *catalog.gcp_machine_types.values(),
    ]
    machines = [m for m in every if cloud in (None, m.cloud)]
    tpus = [
        {
            "name": g.name,
            "accelerator_type_prefix": g.type_prefix,
            "cores_per_chip": g.cores_per_chip,
            "chips_per_host": g.chips_per_host,
            "dimensions": g.dimensions,
            "runtime_version": g.runtime_version,
            "purchase_options": g.purchase_options,
            "zones": g.zones,
            "topologies": [
                {
                    "topology": t,
                    "chips": spec.chips,
                    "hosts": spec.hosts,
                    "accelerator_type": g.accelerator_type(t),
                }
                for t, spec in g.topologies.items()
            ],
            **_provenance(g),
        }
        for g in catalog.tpu_generations.values()
        if cloud in (None, g.cloud)
    ]
    tiers = [
        {
            "cloud": t.cloud,
            "kind": t.kind,
            "service": t.service,
            "tier": t.tier,
            "deployment": t.deployment,
            "capacity_bands": [b.model_dump() for b in t.capacity_bands],
            "throughputs": t.throughputs,
            "fixed_throughput": t.fixed_throughput,
            **_provenance(t),
        }
        for t in catalog.storage_tiers
        if cloud is None or t.cloud == cloud
    ]
    prices = [{**p.model_dump(mode="json")} for p in catalog.prices if cloud is None or p.cloud == cloud]
    return {
        "version": catalog.version,
        "as_of": catalog.index.as_of.isoformat(),
        "machine_types": [_machine(catalog, m) for m in machines],
        "tpu_generations": tpus,
        "storage_tiers": tiers,
        "prices": prices,
        "sources": {k: v.model_dump(mode="json") for k, v in catalog.sources.items()},
    }


def print_catalog(catalog: Catalog, cloud: str | None = None) -> None:
    """Rich tables of the catalog on stdout."""
    from rich.console import Console
    from rich.table import Table

    data = catalog_json(catalog, cloud)
    # Piped output has no terminal width to fit; keep rows on one line for grep and diffs.
    console = Console() if sys.stdout.isatty() else Console(width=180)
    console.print(f"clusterfab catalog {data['version']} (as of {data['as_of']})")

    machines = Table(title="Machine types", title_justify="left")
    for column in (
        "cloud",
        "name",
        "accelerators",
        "vCPU",
        "RAM GiB",
        "fabric",
        "NICs",
        "capacity",
        "locations",
        "confidence",
    ):
        machines.add_column(column, no_wrap=column in {"name", "cloud"})
    for m in data["machine_types"]:
        nics = m["max_efa_interfaces"] if m["max_efa_interfaces"] is not None else m["gpu_nics"]
        machines.add_row(
            m["cloud"],
            m["name"],
            f"{m['accelerator_count']}x {m['accelerator']} {m['accelerator_memory_gib']} GiB",
            str(m["vcpus"]),
            str(m["memory_gib"]),
            m["fabric"],
            str(nics),
            ", ".join(m["purchase_options"]),
            str(len(m["locations"])),
            m["confidence"],
        )
    console.print(machines)

    if data["tpu_generations"]:
        tpus = Table(title="TPU generations", title_justify="left")
        for column in ("generation", "naming", "chips/host", "topologies", "runtime", "zones"):
            tpus.add_column(column)
        for g in data["tpu_generations"]:
            shapes = [t["topology"] for t in g["topologies"]]
            shown = ", ".join(shapes[:6]) + (f", … ({len(shapes) - 6} more)" if len(shapes) > 6 else "")
            naming = f"{g['accelerator_type_prefix']}-N, N = {g['cores_per_chip']} x chips"
            tpus.add_row(
                g["name"], naming, str(g["chips_per_host"]), shown, g["runtime_version"], str(len(g["zones"]))
            )
        console.print(tpus)

    tiers = Table(title="Storage tiers", title_justify="left")
    for column in ("cloud", "service", "tier", "capacity GiB", "throughput MB/s/TiB"):
        tiers.add_column(column)
    for t in data["storage_tiers"]:
        bands = "; ".join(
            f"{b['min_gib']}-{b['max_gib'] or '…'} by {b['step_gib']}" for b in t["capacity_bands"]
        )
        throughput = ", ".join(map(str, t["throughputs"])) or f"{t['fixed_throughput'] or '-'} (fixed)"
        tiers.add_row(t["cloud"], t["service"], t["tier"], bands, throughput)
    console.print(tiers)

    prices = Table(title="Prices (USD)", title_justify="left")
    for column in ("cloud", "sku", "model", "price", "regions", "as of", "confidence"):
        prices.add_column(column)
    for p in data["prices"]:
        prices.add_row(
            p["cloud"],
            p["sku"],
            p["pricing_model"],
            f"{p['usd']:g}/{p['unit']}",
            ", ".join(p["regions"]),
            p["as_of"],
            p["confidence"],
        )
    console.print(prices)
