"""Property: a hostile string in any string field of the blueprint schema is refused at that field, or it
reaches the hosts as inert data (architecture §11.4, issue 29).

Every string field the JSON Schema names (values, list items, mapping keys) is given, in turn, template
syntax, control and invisible characters, shell metacharacters, quotes, a look-alike, a path traversal
and a very long value, in a blueprint that uses the field (Slurm with monitoring and SMTP on AWS, TPU
slices and Filestore on GCP). The blueprint is validated as `clusterfab validate` does (the base and
every environment). Then either an error finding points at the field (or at the list or mapping that
holds it), at a line of the file; or nothing refuses it, and then everything a host gets from the
blueprint is rendered (each playbook's variables as the boot scripts write them, the Slurm controller's
and the monitoring host's files), and the value must arrive as data: in variables every string is marked
unsafe for Ansible; in a YAML or JSON file it is a whole scalar; in a file of another format (slurm.conf,
the accounts files) it must not appear at all. No step may raise.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ruamel.yaml import YAML

from clusterfab.blueprint.schema import blueprint_json_schema
from clusterfab.bootstrap import Mount
from clusterfab.bootstrap.inert import inert, inert_json, plain
from clusterfab.catalog import load_catalog
from clusterfab.core.findings import Finding, Severity
from clusterfab.load import load_bytes
from clusterfab.monitoring.host import monitoring_host_vars
from clusterfab.monitoring.render import render_monitoring
from clusterfab.provision.extravars import gpu_node_vars, healthcheck_vars, tpu_host_vars
from clusterfab.scheduler.slurm.hostvars import client_vars, controller_files, controller_host_vars, node_vars
from clusterfab.scheduler.slurm.render import slurm_groups
from clusterfab.spec import ClusterSpec
from tests.factories import EXAMPLES_DIR, TODAY

CATALOG = load_catalog()
STACK = "prod"
HOSTILE = {
    "template": "{{ lookup('pipe', 'touch /tmp/owned') }}",
    "statement": "{% for x in range(9) %}x{% endfor %}",
    "comment": "a{# b #}",
    "line-feed": "a\nb: c",
    "escape": "a\x1b[2Jb",
    "bidi": "abc\u202edcb",
    "zero-width": "ml\u200bops",
    "shell": "$(touch /tmp/owned)",
    "backticks": "`id`",
    "separator": "x; rm -rf / #",
    "quotes": "'\"",
    "look-alike": "\u0455lurm",  # a Cyrillic dze, not an s
    "traversal": "../../etc/passwd",
    "long": "a" * 5000,
}
SMTP = {
    "smarthost": "email-smtp.us-east-1.amazonaws.com:587",
    "sender": "alerts@example.com",
    "username": "ses-smtp-user",
    "password_secret": "llm/alertmanager-smtp",
}


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load((EXAMPLES_DIR / name).read_text())
    return data


def _aws() -> dict[str, Any]:
    """Slurm (partitions, teams, login, database), monitoring with SMTP, storage, labels, keys."""
    data = _load("aws-p5-slurm.yaml")
    data["monitoring"] = {**data["monitoring"], "alert_emails": ["ml@example.com"], "smtp": dict(SMTP)}
    data["storage"][0]["import_path"] = "s3://llm-datasets/train"
    data["scheduler"]["partitions"][0]["default_time"] = "1-00:00:00"
    data["network"]["ssh_ingress_cidrs"] = ["10.99.0.0/24"]
    return data


def _gcp_tpu() -> dict[str, Any]:
    data = _load("gcp-tpu-v5p-multislice.yaml")
    data["project"] = "ml-project"
    return data


def _gcp_filestore() -> dict[str, Any]:
    return _load("gcp-a3mega-tcpxo-filestore.yaml")


BASES = {"aws": _aws(), "gcp-tpu": _gcp_tpu(), "gcp-filestore": _gcp_filestore()}


def _string_fields() -> list[tuple[str | int, ...]]:
    """Every string field of the schema: a path of property names, 0 for a list item, `*` for a mapping's
    value and `<key>` for its key."""
    schema = blueprint_json_schema()
    defs = schema.get("$defs", {})
    found: set[tuple[str | int, ...]] = set()

    def walk(node: dict[str, Any], path: tuple[str | int, ...], seen: tuple[str, ...]) -> None:
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name not in seen:
                walk(defs[name], path, (*seen, name))
            return
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, []):
                walk(sub, path, seen)
        kind = node.get("type")
        if kind == "string" or (isinstance(kind, list) and "string" in kind):
            found.add(path)
        for name, sub in node.get("properties", {}).items():
            if name != "environments":  # overlays are the same fields: one case below
                walk(sub, (*path, name), seen)
        if isinstance(node.get("items"), dict):
            walk(node["items"], (*path, 0), seen)
        if isinstance(node.get("additionalProperties"), dict):
            found.add((*path, "<key>"))
            walk(node["additionalProperties"], (*path, "*"), seen)

    walk(schema, (), ())
    return sorted(found, key=str)


def _base_for(path: tuple[str | int, ...]) -> str:
    if path[0] == "tpu_slices" or path == ("project",):
        return "gcp-tpu"
    if path[:1] == ("storage",) and path[-1] in {"share_name", "tier"}:
        return "gcp-filestore"
    return "aws"


def _with(data: dict[str, Any], path: tuple[str | int, ...], value: str) -> dict[str, Any]:
    """`data` with `value` at `path` (a mapping's key: a new key holding a plain value)."""
    result = copy.deepcopy(data)
    holder: Any = result
    for step in path[:-1]:
        key = next(iter(holder)) if step == "*" else step
        holder = holder.setdefault(key, {}) if isinstance(holder, dict) else holder[key]
    last = path[-1]
    if last == "<key>":
        holder[value] = "plain"
    elif last == "*":
        holder[next(iter(holder))] = value
    elif isinstance(holder, list):
        holder[last] = value
    else:
        holder[last] = value
    return result


def _dump(data: dict[str, Any]) -> bytes:
    # JSON is YAML: every string written with escapes, so any character reaches the loader as written.
    return json.dumps(data, ensure_ascii=True, indent=1).encode()


def _mounts(spec: ClusterSpec, attach: tuple[str, ...]) -> list[Mount]:
    """The stack's mounts of the attached storage, with a stand-in source (a file system's address is the
    cloud's, never the blueprint's)."""
    return [
        Mount(s.name, "lustre" if s.kind == "lustre" else "nfs", "stand-in@tcp:/fs", s.mount_point, "_netdev")
        for s in spec.storage
        if s.name in attach
    ]


def _host_variables(spec: ClusterSpec) -> Iterator[dict[str, Any]]:
    for group in spec.node_groups:
        yield gpu_node_vars(spec, group, CATALOG, _mounts(spec, group.storage))
        yield healthcheck_vars(spec, group, CATALOG)
    for tpu in spec.tpu_slices:
        yield tpu_host_vars(spec, tpu, CATALOG, _mounts(spec, tpu.storage))
    if spec.scheduler is not None:
        yield controller_host_vars(spec, CATALOG, stack=STACK, files_dir="/opt/files", project="p")
        yield client_vars(spec, CATALOG.slurm, stack=STACK, project="p")
        for group in slurm_groups(spec):
            yield node_vars(spec, CATALOG.slurm, group, stack=STACK, project="p")
    if spec.monitoring is not None and spec.monitoring.host != "controller":
        yield monitoring_host_vars(spec, CATALOG, files_dir="/opt/files", project="p")


def _host_files(spec: ClusterSpec) -> dict[str, str]:
    files: dict[str, str] = {}
    if spec.scheduler is not None:
        files |= controller_files(spec, CATALOG.slurm, stack=STACK, project="p")
    if spec.monitoring is not None:
        rendered = render_monitoring(spec, CATALOG, stack=STACK, project="p", today=TODAY)
        files |= {f"monitoring/{name}": text for name, text in rendered.items()}
    return files


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


def _inert_on_hosts(spec: ClusterSpec, before: ClusterSpec, hostile: str) -> list[str]:
    """Where `hostile` reaches a host as something other than data (`before`: the spec without it, whose
    files may hold the same characters already: the shipped programs' sources)."""
    problems = []
    for variables in _host_variables(spec):
        written = json.loads(inert_json(variables))
        if written != inert(plain(written)) or plain(written) != json.loads(json.dumps(variables)):
            problems.append("a variables file holds a string Ansible would template")
    files, unchanged = _host_files(spec), _host_files(before)
    for name, text in files.items():
        if text.count(hostile) <= unchanged.get(name, "").count(hostile):
            continue
        if name.endswith(".json"):
            document = json.loads(text)
        elif name.endswith((".yml", ".yaml")):
            document = yaml.safe_load(text)
        else:
            problems.append(f"{name} holds it raw")
            continue
        if not any(hostile in leaf for leaf in _leaves(document)):
            problems.append(f"{name} holds it outside a scalar")
    return problems


def _at(finding: Finding, path: tuple[str | int, ...]) -> bool:
    """Whether a finding is about the field at `path`, the list or mapping that holds it, or a part of it."""
    return finding.line > 0 and (
        finding.path[: len(path)] == path or path[: len(finding.path)] == finding.path
    )


def _concrete(data: dict[str, Any], path: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """`path` with the mapping keys it writes to (the first key for `*`; a new key is reported at its
    mapping)."""
    out: list[str | int] = []
    holder: Any = data
    for step in path:
        if step == "<key>":
            break
        key = next(iter(holder)) if step == "*" else step
        out.append(key)
        holder = holder[key] if isinstance(holder, dict | list) else None
    return tuple(out)


FIELDS = _string_fields()
CASES = [(path, kind) for path in FIELDS for kind in HOSTILE]


def test_the_schema_walk_finds_every_kind_of_string_field() -> None:
    # Values, list items and mapping keys alike, in every section that has strings.
    assert len(FIELDS) == 65  # a new string field of the blueprint is counted here, and tested below
    assert ("labels", "<key>") in FIELDS
    assert ("teams", 0, "users", 0) in FIELDS
    assert ("monitoring", "smtp", "password_secret") in FIELDS
    assert ("storage", 0, "mount_point") in FIELDS
    assert {path[0] for path in FIELDS} >= {
        "name", "labels", "network", "node_groups", "tpu_slices", "storage", "software", "budget",
        "monitoring", "scheduler", "teams",
    }  # fmt: skip


@pytest.mark.parametrize(("path", "kind"), CASES, ids=[f"{'.'.join(map(str, p))}-{k}" for p, k in CASES])
def test_a_hostile_string_is_refused_at_its_field_or_reaches_hosts_as_data(
    path: tuple[str | int, ...], kind: str
) -> None:
    hostile = HOSTILE[kind]
    base = BASES[_base_for(path)]
    data = _with(base, path, hostile)
    result = load_bytes(_dump(data), "hostile.yaml", today=TODAY)
    errors = [f for f in result.findings if f.severity is Severity.ERROR]
    if errors:
        field = _concrete(data, path)
        assert any(_at(f, field) for f in errors), [(f.code, f.field, f.line) for f in errors]
        return
    # Accepted: everything the hosts get from each environment carries it as data.
    assert kind not in {"template", "statement", "comment", "line-feed", "escape", "bidi", "zero-width"}
    before = load_bytes(_dump(base), "base.yaml", today=TODAY).blueprints
    for environment, validated in result.blueprints.items():
        assert _inert_on_hosts(validated.spec, before[environment].spec, hostile) == [], environment


def test_an_overlays_hostile_string_is_refused_where_the_overlay_writes_it() -> None:
    data = copy.deepcopy(BASES["aws"])
    data["environments"]["dev"]["node_groups"][0]["local_scratch"] = {"mount_point": HOSTILE["template"]}
    result = load_bytes(_dump(data), "hostile.yaml", today=TODAY)
    assert [(f.code, f.path) for f in result.findings if f.severity is Severity.ERROR] == [
        ("BP010", ("environments", "dev", "node_groups", 0, "local_scratch", "mount_point"))
    ]


def test_the_cases_run_against_the_examples_the_bases_come_from() -> None:
    for name in ("aws-p5-slurm.yaml", "gcp-tpu-v5p-multislice.yaml", "gcp-a3mega-tcpxo-filestore.yaml"):
        assert Path(EXAMPLES_DIR / name).is_file()
    for name, data in BASES.items():
        result = load_bytes(_dump(data), f"{name}.yaml", today=TODAY)
        assert [f for f in result.findings if f.severity is Severity.ERROR] == [], name
