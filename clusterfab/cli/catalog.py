"""`clusterfab catalog` and `clusterfab schema`: what the blueprint language can name."""

from __future__ import annotations

from typing import Annotated

import typer

from clusterfab.cli.options import CloudChoice, TextOrJson, TextOrJsonOption
from clusterfab.cli.output import echo_json, width


def catalog(
    cloud: Annotated[CloudChoice | None, typer.Option("--cloud", help="Only this cloud.")] = None,
    output: TextOrJsonOption = TextOrJson.text,
) -> None:
    """Show the catalog: machine types, TPU generations, storage tiers and prices, with sources."""
    from clusterfab.catalog import load_catalog
    from clusterfab.catalog.render import catalog_json, print_catalog

    data = load_catalog()
    selected = str(cloud) if cloud is not None else None
    if output is TextOrJson.json:
        echo_json(catalog_json(data, selected))
    else:
        print_catalog(data, selected, width=width())


def schema() -> None:
    """Print the blueprint JSON Schema (for editor completion and CI checks)."""
    from clusterfab.blueprint.schema import blueprint_json_schema
    from clusterfab.catalog import load_catalog, schema_choices

    echo_json(blueprint_json_schema(schema_choices(load_catalog())))
