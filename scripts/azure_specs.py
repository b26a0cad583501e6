"""Extract the Azure REST API specifications the API-spec test checks planned Azure resources against.

Microsoft generates, from the REST API specifications (Azure/azure-rest-api-specs), one type file per
resource provider and API version in Azure/bicep-types-az: `generated/<dir>/<namespace>/<version>/types.json`
holds the request-body types of every resource type of that version (objects, their properties with
flags Required / ReadOnly / WriteOnly, enums as unions of string literals, string and integer limits),
and `samples.md` beside it the provider's own request examples of the specifications (`examples/*.json`)
written out as Bicep. This script reads, at one pinned commit of that repository, the files of the
resource types clusterfab plans (at the API versions pulumi-azure-native uses by default), keeps the
types reachable from those resource types and the samples of those resource types, and writes them to
`tests/fixtures/azure_specs/` with the repository, commit, path and sha256 of each source file:

    uv run python scripts/azure_specs.py --git-dir <git dir of Azure/bicep-types-az>

`--check` compares instead of writing (exit 1 when a fixture differs), so anyone can re-extract and
compare. It runs offline against a checkout fetched beforehand.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "azure_specs"
SOURCE_REPOSITORY = "Azure/bicep-types-az"
SOURCE_COMMIT = "1f896de2db966ad91e8f7d7d981e11d32e4f5d8d"
"""2026-08-20, "Update types from https://github.com/Azure/azure-rest-api-specs/tree/b7170cade0"."""

# Per source directory: the resource types to keep (the type names of the ResourceType entries).
SOURCES: dict[str, tuple[str, ...]] = {
    "generated/resources_11/microsoft.resources/2024-03-01": (
        "Microsoft.Resources/resourceGroups@2024-03-01",
    ),
    "generated/network/microsoft.network/2024-05-01": (
        "Microsoft.Network/virtualNetworks@2024-05-01",
        "Microsoft.Network/virtualNetworks/subnets@2024-05-01",
        "Microsoft.Network/networkSecurityGroups@2024-05-01",
        "Microsoft.Network/natGateways@2024-05-01",
        "Microsoft.Network/publicIPAddresses@2024-05-01",
        "Microsoft.Network/networkInterfaces@2024-05-01",
        "Microsoft.Network/bastionHosts@2024-05-01",
    ),
    "generated/storage/microsoft.storage/2024-01-01": (
        "Microsoft.Storage/storageAccounts@2024-01-01",
        "Microsoft.Storage/storageAccounts/blobServices/containers@2024-01-01",
    ),
    "generated/msi/microsoft.managedidentity/2023-01-31": (
        "Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31",
    ),
    "generated/authorization/microsoft.authorization/2022-04-01": (
        "Microsoft.Authorization/roleAssignments@2022-04-01",
    ),
    "generated/compute_1/microsoft.compute/2024-11-01": (
        "Microsoft.Compute/virtualMachineScaleSets@2024-11-01",
        "Microsoft.Compute/virtualMachineScaleSets/virtualMachines@2024-11-01",
        "Microsoft.Compute/capacityReservationGroups@2024-11-01",
        "Microsoft.Compute/capacityReservationGroups/capacityReservations@2024-11-01",
        "Microsoft.Compute/proximityPlacementGroups@2024-11-01",
        "Microsoft.Compute/virtualMachines@2024-11-01",
        "Microsoft.Compute/virtualMachines/extensions@2024-11-01",
    ),
    "generated/compute_1/microsoft.compute/2024-03-02": ("Microsoft.Compute/disks@2024-03-02",),
    "generated/keyvault/microsoft.keyvault/2024-11-01": ("Microsoft.KeyVault/vaults@2024-11-01",),
    "generated/storagecache/microsoft.storagecache/2024-03-01": (
        "Microsoft.StorageCache/amlFilesystems@2024-03-01",
    ),
    "generated/mysql_0/microsoft.dbformysql/2024-02-01-preview": (
        "Microsoft.DBforMySQL/flexibleServers@2024-02-01-preview",
    ),
    "generated/mysql_0/microsoft.dbformysql/2023-12-30": (
        "Microsoft.DBforMySQL/flexibleServers/databases@2023-12-30",
        "Microsoft.DBforMySQL/flexibleServers/configurations@2023-12-30",
    ),
    "generated/privatedns/microsoft.network/2024-06-01": (
        "Microsoft.Network/privateDnsZones@2024-06-01",
        "Microsoft.Network/privateDnsZones/virtualNetworkLinks@2024-06-01",
    ),
    "generated/authorization/microsoft.authorization/2022-05-01-preview": (
        "Microsoft.Authorization/roleDefinitions@2022-05-01-preview",
    ),
}


def _show(git_dir: Path, path: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{SOURCE_COMMIT}:{path}"],
        check=True,
        capture_output=True,
    ).stdout


def _index(ref: dict[str, str]) -> int:
    return int(ref["$ref"].removeprefix("#/"))


def _refs(node: Any) -> list[int]:
    """The type indexes a type entry refers to."""
    if isinstance(node, dict):
        if set(node) == {"$ref"}:
            return [_index(node)]
        return [i for value in node.values() for i in _refs(value)]
    if isinstance(node, list):
        return [i for value in node for i in _refs(value)]
    return []


def _renumber(node: Any, new: dict[int, int]) -> Any:
    if isinstance(node, dict):
        if set(node) == {"$ref"}:
            return {"$ref": f"#/{new[_index(node)]}"}
        # Descriptions (documentation strings) are left out: the check needs the structure, and the source
        # has them. A property named `description` (a role assignment's, a security rule's) stays.
        return {
            k: _renumber(v, new) for k, v in node.items() if not (k == "description" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [_renumber(v, new) for v in node]
    return node


def reachable(types: list[dict[str, Any]], names: tuple[str, ...]) -> tuple[list[Any], dict[str, int]]:
    """The types reachable from the bodies of the named resource types, renumbered in source order, and
    the new index of each resource type's body."""
    by_name = {t["name"]: t for t in types if t["$type"] == "ResourceType"}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise SystemExit(f"not in the source: {missing}")
    roots = [_index(by_name[n]["body"]) for n in names]
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo += _refs(types[i])
    order = sorted(seen)
    new = {old: n for n, old in enumerate(order)}
    return [_renumber(types[i], new) for i in order], {n: new[r] for n, r in zip(names, roots, strict=True)}


# --- the samples: Bicep object literals as the generator writes them ------------------------------------

_SAMPLE = re.compile(
    r"^(?P<title>[^\n]+)\n```bicep\nresource \w+ '(?P<type>[^']+)' = (?P<body>\{.*?\n\})\n```", re.M | re.S
)
_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^'\\]|\\.)*')|(?P<word>[A-Za-z_$][\w$.-]*)|(?P<num>-?\d+(?:\.\d+)?)|(?P<punct>[{}\[\]:]))"
)
_ESCAPES = {"'": "'", "\\": "\\", "n": "\n", "r": "\r", "t": "\t", "$": "$"}


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ValueError(f"cannot read the sample at {text[pos : pos + 40]!r}")
        kind = match.lastgroup
        assert kind is not None
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


def _string(token: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES[m.group(1)], token[1:-1])


def _value(tokens: list[tuple[str, str]], i: int) -> tuple[Any, int]:
    kind, text = tokens[i]
    if kind == "str":
        return _string(text), i + 1
    if kind == "num":
        return (float(text) if "." in text else int(text)), i + 1
    if kind == "word":
        words: dict[str, Any] = {"true": True, "false": False, "null": None}
        if text not in words:
            raise ValueError(f"a sample refers to {text!r}, not a literal")
        return words[text], i + 1
    if text == "[":
        items: list[Any] = []
        i += 1
        while tokens[i] != ("punct", "]"):
            item, i = _value(tokens, i)
            items.append(item)
        return items, i + 1
    if text == "{":
        obj: dict[str, Any] = {}
        i += 1
        while tokens[i] != ("punct", "}"):
            key_kind, key = tokens[i]
            assert tokens[i + 1] == ("punct", ":"), tokens[i : i + 2]
            obj[_string(key) if key_kind == "str" else key], i = _value(tokens, i + 2)
        return obj, i + 1
    raise ValueError(f"unexpected {text!r}")


def bicep_literal(text: str) -> Any:
    """A Bicep object literal (strings, numbers, booleans, null, arrays and objects) as JSON data."""
    tokens = _tokens(text)
    value, end = _value(tokens, 0)
    assert end == len(tokens), tokens[end:]
    return value


def samples(text: str, names: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """The samples of the named resource types: title and request body (without the sample's own
    `name`, which is in the request's path)."""
    found: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for match in _SAMPLE.finditer(text):
        if match.group("type") in found:
            # `parent` and `scope` name other resources of the template (Bicep symbols, not literals).
            literal = re.sub(r"^  (?:parent|scope): .*\n", "", match.group("body"), flags=re.M)
            body = bicep_literal(literal)
            body = {k: v for k, v in body.items() if k != "name"}
            found[match.group("type")].append({"title": match.group("title").strip(), "body": body})
    return found


# --- writing ------------------------------------------------------------------------------------------


def fixture(git_dir: Path, directory: str, names: tuple[str, ...]) -> dict[str, Any]:
    types_bytes = _show(git_dir, f"{directory}/types.json")
    samples_bytes = _show(git_dir, f"{directory}/samples.md")
    types, bodies = reachable(json.loads(types_bytes), names)
    return {
        "source": {
            "repository": SOURCE_REPOSITORY,
            "commit": SOURCE_COMMIT,
            "types": {"path": f"{directory}/types.json", "sha256": hashlib.sha256(types_bytes).hexdigest()},
            "samples": {
                "path": f"{directory}/samples.md",
                "sha256": hashlib.sha256(samples_bytes).hexdigest(),
            },
        },
        "resources": bodies,
        "types": types,
        "samples": samples(samples_bytes.decode(), names),
    }


def file_name(directory: str) -> str:
    """`microsoft.compute@2024-11-01.json`."""
    _, _, namespace, version = directory.split("/")
    return f"{namespace}@{version}.json"


README_HEAD = f"""# Azure REST API specifications (generated types), pinned

Written by `scripts/azure_specs.py`; do not edit by hand. Read by `tests/apimodels/azure_spec.py`: every
planned pulumi-azure-native resource's inputs are mapped back to the ARM request body and checked against
the request-body type of its resource type at the API version pulumi-azure-native 3.29.0 uses by default
(the SDK's docstrings: "Uses Azure REST API version ...").

Source: [{SOURCE_REPOSITORY}](https://github.com/{SOURCE_REPOSITORY}) at commit `{SOURCE_COMMIT}`
(2026-08-20, "Update types from https://github.com/Azure/azure-rest-api-specs/tree/b7170cade0"): Microsoft's
types generated from the REST API specifications (Azure/azure-rest-api-specs), one `types.json` per
resource provider and API version, and `samples.md` beside it: the providers' own request examples of the
specifications (`examples/*.json`) written out as Bicep. Each fixture keeps the types reachable from its
resource types (descriptions left out) and the samples of those resource types as JSON request bodies.

Property flags (bicep-types `ObjectTypePropertyFlags`, spelt out in the generated `types.md`): 1 Required,
2 ReadOnly, 4 WriteOnly, 8 DeployTimeConstant, 16 Identifier. Unions of string literals are the enums;
the specifications' extensible enums (`modelAsString`) add `string` to the union.

`Microsoft.Storage` blobs: `azure-native:storage:Blob` is no resource of Azure Resource Manager (the
provider writes it through the Blob service's data-plane API, Put Blob); no fixture here describes it.
Its account and container names are checked against the storage account's and container's types.

To re-extract and compare:
`uv run python scripts/azure_specs.py --git-dir <git dir of {SOURCE_REPOSITORY}> --check`.

| fixture | resource types | source files (path, sha256) | sha256 of the fixture |
| --- | --- | --- | --- |
"""


def readme(fixtures: dict[str, str]) -> str:
    rows = []
    for name, text in fixtures.items():
        data = json.loads(text)
        source = data["source"]
        files = "<br>".join(f"`{source[k]['path']}` `{source[k]['sha256']}`" for k in ("types", "samples"))
        types = ", ".join(f"`{t}`" for t in sorted(data["resources"]))
        rows.append(f"| `{name}` | {types} | {files} | `{hashlib.sha256(text.encode()).hexdigest()}` |\n")
    return README_HEAD + "".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", type=Path, required=True, help="git dir of Azure/bicep-types-az")
    parser.add_argument("--check", action="store_true", help="compare with the fixtures instead of writing")
    args = parser.parse_args(argv)
    fixtures = {
        file_name(directory): json.dumps(fixture(args.git_dir, directory, names), indent=1, sort_keys=True)
        + "\n"
        for directory, names in SOURCES.items()
    }
    differ = []
    for name, text in {**fixtures, "README.md": readme(fixtures)}.items():
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                differ.append(path.name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if differ:
        print("differ from the source:", ", ".join(differ), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
