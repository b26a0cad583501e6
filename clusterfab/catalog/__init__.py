"""The catalog: machine types, TPU generations, storage tiers, prices and software compatibility,
as versioned data files with a source, date and confidence for every changeable figure."""

from clusterfab.catalog.query import Catalog, at_least, load_catalog, schema_choices, version_tuple

__all__ = ["Catalog", "at_least", "load_catalog", "schema_choices", "version_tuple"]
