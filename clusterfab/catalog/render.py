"""The catalog as the CLI shows it: the JSON contract of architecture §5 and Rich tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterfab.catalog.models import MachineType, Sourced
from clusterfab.catalog.parts import machine_types
from clusterfab.catalog.query import Catalog


def _provenance(record: Sourced) -> dict[str, Any]:
    return {
        "source": record.source,
        "as_of": record.as_of.isoformat(),
        "confidence": record.confidence,
        "unconfirmed": record.unconfirmed,
    }


def _machine(catalog: Catalog, machine: MachineType) -> dict[str, Any]:
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
    row.update(machine.listing(catalog))
    row.update(_provenance(machine))
    return row


def catalog_json(catalog: Catalog, cloud: str | None = None) -> dict[str, Any]:
    """The catalog in the `clusterfab catalog --format json` contract, optionally for one cloud."""
    machines = [m for m in machine_types(catalog) if cloud in (None, m.cloud)]
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
        # The envelope of every JSON document (clusterfab.contract; the catalog layer cannot import it).
        "schema_version": 1,
        "blueprint": None,
        "env": None,
        "cloud": cloud,
        "region": None,
        "version": catalog.version,
        "as_of": catalog.index.as_of.isoformat(),
        "machine_types": [_machine(catalog, m) for m in machines],
        "tpu_generations": tpus,
        "storage_tiers": tiers,
        "prices": prices,
        "sources": {k: v.model_dump(mode="json") for k, v in catalog.sources.items()},
    }


def _columns(width: int, full: Sequence[str], medium: Sequence[str], narrow: Sequence[str]) -> Sequence[str]:
    """The columns of a table that fit `width`: all of them from 140 columns, fewer below 120 and 100."""
    if width >= 140:
        return full
    return medium if width >= 100 else narrow


def _table(title: str, columns: Sequence[str], rows: list[dict[str, str]]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        # No capacity kind is cut (`capacity_bloc…`): the column is as wide as the longest, comma and all.
        kinds = [k for row in rows for k in row[column].split(", ")] if column == "capacity" else []
        widest = max((len(k) + 1 for k in kinds), default=None)
        # A price's model is one capacity kind, never cut either; what wraps is the regions list.
        table.add_column(column, no_wrap=column in {"name", "sku", "model", "price"}, min_width=widest)
    for row in rows:
        table.add_row(*(row[c] for c in columns))
    return table


def print_catalog(catalog: Catalog, cloud: str | None = None, *, width: int = 180) -> None:
    """Rich tables of the catalog on stdout, with the columns that fit `width` (`clusterfab catalog
    --format json` has every field)."""
    from rich.console import Console

    data = catalog_json(catalog, cloud)
    console = Console(width=width, highlight=False)
    console.print(f"clusterfab catalog {data['version']} (as of {data['as_of']})")
    console.print(_machine_table(data["machine_types"], width))
    if data["tpu_generations"]:
        console.print(_tpu_table(data["tpu_generations"], width))
    console.print(_storage_table(data["storage_tiers"], width))
    console.print(_price_table(data["prices"], width))


def _machine_table(rows: list[dict[str, Any]], width: int) -> Any:
    machines = []
    for m in rows:
        nics = m["max_efa_interfaces"] if m["max_efa_interfaces"] is not None else m["gpu_nics"]
        accelerators = f"{m['accelerator_count']}x {m['accelerator']} {m['accelerator_memory_gib']} GiB"
        machines.append(
            {
                "cloud": m["cloud"],
                "name": m["name"],
                "accelerators": accelerators,
                "vCPU": str(m["vcpus"]),
                "RAM GiB": str(m["memory_gib"]),
                "fabric": m["fabric"],
                "NICs": str(nics),
                "capacity": ", ".join(m["purchase_options"]),
                "locations": str(len(m["locations"])),
                "confidence": m["confidence"],
            }
        )
    full = list(machines[0]) if machines else []
    medium = ["cloud", "name", "accelerators", "fabric", "capacity", "locations"]
    narrow = ["name", "accelerators", "fabric", "capacity"]
    return _table("Machine types", _columns(width, full, medium, narrow), machines)


def _tpu_table(rows: list[dict[str, Any]], width: int) -> Any:
    tpus = []
    for g in rows:
        shapes = [t["topology"] for t in g["topologies"]]
        shown = ", ".join(shapes[:6]) + (f", … ({len(shapes) - 6} more)" if len(shapes) > 6 else "")
        tpus.append(
            {
                "generation": g["name"],
                "naming": f"{g['accelerator_type_prefix']}-N, N = {g['cores_per_chip']} x chips",
                "chips/host": str(g["chips_per_host"]),
                "topologies": shown,
                "runtime": g["runtime_version"],
                "zones": str(len(g["zones"])),
            }
        )
    full = list(tpus[0])
    narrow = ["generation", "naming", "topologies"]
    return _table("TPU generations", _columns(width, full, full, narrow), tpus)


def _storage_table(rows: list[dict[str, Any]], width: int) -> Any:
    tiers = []
    for t in rows:
        bands = "; ".join(
            f"{b['min_gib']}-{b['max_gib'] or '…'} by {b['step_gib']}" for b in t["capacity_bands"]
        )
        throughput = ", ".join(map(str, t["throughputs"])) or f"{t['fixed_throughput'] or '-'} (fixed)"
        tiers.append(
            {
                "cloud": t["cloud"],
                "service": t["service"],
                "tier": t["tier"],
                "capacity GiB": bands,
                "throughput MB/s/TiB": throughput,
            }
        )
    full = ["cloud", "service", "tier", "capacity GiB", "throughput MB/s/TiB"]
    return _table("Storage tiers", _columns(width, full, full, full[1:]), tiers)


def _price_table(rows: list[dict[str, Any]], width: int) -> Any:
    prices = [
        {
            "cloud": p["cloud"],
            "sku": p["sku"],
            "model": p["pricing_model"],
            "price": f"{p['usd']:g}/{p['unit']}",
            "regions": ", ".join(p["regions"]),
            "as of": p["as_of"],
            "confidence": p["confidence"],
        }
        for p in rows
    ]
    full = ["cloud", "sku", "model", "price", "regions", "as of", "confidence"]
    # The regions tell a SKU's rows apart (one price per set of regions): they stay, wrapped if need be.
    medium = ["cloud", "sku", "model", "price", "regions", "as of"]
    narrow = ["sku", "model", "price", "regions"]
    return _table("Prices (USD)", _columns(width, full, medium, narrow), prices)
