"""Store the openAPIV3Schema of the Kueue and JobSet CRDs the program's objects use, per kind and version,
as test data (tests/fixtures/crds/<group>/<version>/<Kind>.json), read from the projects' repositories at
their release tags:

    uv run python scripts/crd_schemas.py \\
        --kueue <git dir of kubernetes-sigs/kueue> v0.19.2 \\
        --jobset <git dir of kubernetes-sigs/jobset> v0.12.0

Every served version of each CRD is stored, its `description` texts left out (they are documentation, and
the JobSet CRD carries the pod template's). Record the tags, their commits and the date in
tests/fixtures/crds/README.md; tests/crd_schema.py validates manifests against these files.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "crds"
KUEUE = (
    "admissionchecks",
    "clusterqueues",
    "cohorts",
    "localqueues",
    "provisioningrequestconfigs",
    "resourceflavors",
    "topologies",
    "workloadpriorityclasses",
)
"""The Kueue CRDs (config/components/crd/bases/kueue.x-k8s.io_<plural>.yaml) of the objects clusterfab
applies; Workload and the MultiKueue kinds are Kueue's own."""
JOBSET = ("jobsets",)


def _without_descriptions(schema: Any, *, in_properties: bool = False) -> Any:
    """The schema without its `description` texts; a property named `description` stays."""
    if isinstance(schema, dict):
        return {
            key: _without_descriptions(value, in_properties=key == "properties" and not in_properties)
            for key, value in schema.items()
            if in_properties or not (key == "description" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [_without_descriptions(item) for item in schema]
    return schema


def _store(git_dir: str, tag: str, group: str, plural: str) -> list[Path]:
    path = f"config/components/crd/bases/{group}_{plural}.yaml"
    text = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{tag}:{path}"], check=True, capture_output=True, text=True
    ).stdout
    crd = YAML(typ="safe").load(text)
    kind = crd["spec"]["names"]["kind"]
    written = []
    for version in crd["spec"]["versions"]:
        if not version.get("served"):
            continue
        out = OUT / group / version["name"] / f"{kind}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        schema = _without_descriptions(version["schema"]["openAPIV3Schema"])
        out.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
        written.append(out)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kueue", nargs=2, metavar=("GIT_DIR", "TAG"), required=True)
    parser.add_argument("--jobset", nargs=2, metavar=("GIT_DIR", "TAG"), required=True)
    args = parser.parse_args()
    written = [p for plural in KUEUE for p in _store(*args.kueue, "kueue.x-k8s.io", plural)]
    written += [p for plural in JOBSET for p in _store(*args.jobset, "jobset.x-k8s.io", plural)]
    for path in written:
        print(path.relative_to(REPO))


if __name__ == "__main__":
    main()
