"""Environment overlays: deep merge, merge by name, and findings that point into the overlay."""

from __future__ import annotations

from clusterfab.load import load_bytes

BASE = b"""version: 1
name: ov
cloud: aws
region: us-east-1
zone: use1-az6
labels: {team: a, tier: gold}
node_groups:
  - name: trainers
    machine_type: p5.48xlarge
    count: 16
    capacity: {kind: capacity_block, reservation: cr-0123456789abcdef0, ends_at: "2027-03-18T11:30:00Z"}
  - name: eval
    machine_type: p5.48xlarge
    count: 2
storage:
  - {name: scratch, kind: lustre, deployment: scratch, capacity_gib: 2400}
"""


def _result(overlay: bytes, env: str | None = "dev"):  # type: ignore[no-untyped-def]
    return load_bytes(BASE + b"environments:\n  dev:\n" + overlay, "bp.yaml", environment=env)


def test_named_items_merge_by_name_and_keep_base_fields() -> None:
    result = _result(
        b"    node_groups:\n      - {name: eval, count: 1}\n      - {name: trainers, count: 4}\n"
    )
    assert result.ok, result.findings
    merged = result.blueprints["dev"].blueprint
    assert [(g.name, g.count, g.machine_type) for g in merged.node_groups] == [
        ("trainers", 4, "p5.48xlarge"),
        ("eval", 1, "p5.48xlarge"),
    ]
    # capacity was not named in the overlay: it stays the base's capacity block
    assert merged.node_groups[0].capacity.kind == "capacity_block"
    assert merged.node_groups[0].capacity.reservation == "cr-0123456789abcdef0"


def test_mappings_merge_key_by_key_and_null_removes_a_value() -> None:
    result = _result(
        b"    labels: {tier: bronze}\n"
        b"    node_groups:\n      - name: trainers\n"
        b"        capacity: {kind: spot, reservation: null, ends_at: null}\n"
    )
    assert result.ok, result.findings
    merged = result.blueprints["dev"].blueprint
    assert merged.labels == {"team": "a", "tier": "bronze"}
    assert merged.node_groups[0].capacity.kind == "spot"
    assert merged.node_groups[0].capacity.reservation is None
    assert merged.node_groups[0].capacity.ends_at is None


def test_scalars_and_plain_lists_are_replaced() -> None:
    result = _result(b"    network: {ssh_ingress_cidrs: [10.1.0.0/24]}\n    zone: use1-az4\n")
    merged = result.blueprints["dev"].blueprint
    assert merged.zone == "use1-az4"
    assert merged.network.ssh_ingress_cidrs == ["10.1.0.0/24"]
    assert merged.network.cidr == "10.0.0.0/16"


def test_an_error_the_overlay_causes_points_at_the_overlay_with_a_hint_that_edits_it() -> None:
    # The overlay makes the group spot; the reservation and the block's end it kept are written in the
    # base (line 11), which is valid as it is: the findings point at the overlay's capacity (line 21) and
    # say how to fix dev.
    for env in ("dev", None):
        result = _result(b"    node_groups:\n      - name: trainers\n        capacity: {kind: spot}\n", env)
        assert [(f.code, f.field, f.line, f.column, f.environment) for f in result.findings] == [
            ("BP119", "node_groups[0].capacity.reservation", 21, 9, "dev"),
            ("BP163", "node_groups[0].capacity.ends_at", 21, 9, "dev"),
        ]
        assert result.findings[0].hint == (
            "for dev only, write `reservation: null` in environments.dev.node_groups[0].capacity (the "
            "value comes from the base); or, for every environment: remove `reservation`, or set kind: "
            "reservation"
        )


def test_a_value_nothing_sets_is_never_to_be_nulled() -> None:
    # The base gives eval on-demand capacity; dev makes it flex-start, which needs a run duration that
    # neither sets: the hint says where to add it, never `null` (there is nothing to remove).
    base = BASE.replace(b"    count: 2\n", b"    count: 2\n    capacity: {kind: on_demand}\n")
    overlay = b"    node_groups:\n      - name: eval\n        capacity: {kind: flex_start}\n"
    result = load_bytes(base + b"environments:\n  dev:\n" + overlay, "bp.yaml", environment="dev")
    (needs_duration,) = [f for f in result.findings if f.code == "BP109"]
    field = "node_groups[1].capacity.max_run_duration_hours"
    assert (needs_duration.field, needs_duration.line) == (field, 22)
    assert needs_duration.hint == (
        "add `max_run_duration_hours:` (1-168) under capacity: in environments.dev.node_groups[0].capacity "
        "for dev only, or in the base for every environment"
    )


def test_an_overlay_that_moves_the_region_away_from_the_bases_zone_is_what_to_edit() -> None:
    # The zone (line 5) is right for the base's region; dev's region (line 19) is what makes it wrong.
    for env in ("dev", None):
        result = _result(b"    region: eu-west-1\n", env)
        assert [(f.code, f.field, f.line, f.column, f.environment, f.hint) for f in result.findings] == [
            ("BP203", "region", 19, 13, "dev", "set a zone of eu-west-1 in environments.dev too")
        ]
        assert result.findings[0].message == (
            "region eu-west-1 has no zone use1-az6 (the base's zone, in us-east-1) (environment 'dev')"
        )
    # Both moved in the overlay: the zone is the overlay's, and the finding stays at it.
    [both] = _result(b"    region: eu-west-1\n    zone: use1-az4\n").findings
    assert (both.field, both.line, both.hint) == (
        "zone",
        20,
        "use a zone of eu-west-1, or set region: us-east-1",
    )


def test_an_error_shared_by_two_environments_is_reported_for_each() -> None:
    text = BASE + (
        b"environments:\n"
        b"  dev:\n    node_groups: [{name: trainers, capacity: {kind: spot, ends_at: null}}]\n"
        b"  prod:\n    node_groups: [{name: trainers, capacity: {kind: on_demand, ends_at: null}}]\n"
    )
    result = load_bytes(text, "bp.yaml")
    assert [(f.code, f.line, f.column, f.environment) for f in result.findings] == [
        ("BP119", 19, 36, "dev"),
        ("BP119", 21, 36, "prod"),
    ]


def test_an_error_of_the_base_is_reported_once_without_an_environment() -> None:
    text = BASE.replace(b"count: 2", b"count: 0") + b"environments:\n  dev: {}\n  prod: {}\n"
    result = load_bytes(text, "bp.yaml")
    assert [(f.code, f.field, f.line, f.environment) for f in result.findings] == [
        ("BP009", "node_groups[1].count", 14, None),
    ]


def test_a_typo_inside_an_overlay_item_is_an_unknown_field_at_its_own_line() -> None:
    result = _result(b"    node_groups:\n      - {name: eval, cont: 1}\n")
    assert [(f.code, f.field, f.line, f.column, f.hint) for f in result.findings] == [
        ("BP005", "node_groups[1].cont", 20, 22, "did you mean 'count'?"),
    ]


def test_without_env_every_environment_is_checked_and_labelled() -> None:
    result = _result(b"    node_groups:\n      - {name: eval, count: 0}\n", env=None)
    assert [(f.code, f.field, f.line, f.message) for f in result.findings] == [
        ("BP009", "node_groups[1].count", 20, "0 (an integer) must be at least 1 (environment 'dev')"),
    ]
    assert list(result.blueprints) == [None]


def test_overlay_cannot_change_cloud_or_nest_environments() -> None:
    result = _result(b"    cloud: gcp\n    environments: {x: {}}\n")
    assert [(f.code, f.field, f.line, f.column) for f in result.findings] == [
        ("BP116", "environments.dev.cloud", 19, 5),
        ("BP116", "environments.dev.environments", 20, 5),
    ]


def test_overlay_items_need_a_name() -> None:
    result = _result(b"    node_groups:\n      - {count: 1}\n")
    assert [(f.code, f.field, f.line, f.column) for f in result.findings] == [
        ("BP006", "environments.dev.node_groups[0].name", 20, 9),
    ]


def _merged(overlay: bytes) -> object:
    result = _result(overlay)
    assert result.ok, result.findings
    return result.blueprints["dev"].blueprint


def test_null_removes_a_base_value_so_the_field_takes_its_default() -> None:
    merged = _merged(b"    labels: null\n")
    assert merged.labels == {}  # type: ignore[attr-defined]
    merged = _merged(b"    storage: null\n")
    assert merged.storage == []  # type: ignore[attr-defined]
    merged = _merged(b"    node_groups:\n      - {name: trainers, capacity: null}\n")
    trainers = merged.node_groups[0]  # type: ignore[attr-defined]
    assert (trainers.capacity.kind, trainers.capacity.reservation) == ("on_demand", None)


def test_an_empty_environment_is_an_empty_overlay() -> None:
    result = load_bytes(BASE + b"environments:\n  dev:\n  prod: {}\n", "bp.yaml")
    assert result.ok, result.findings
    assert result.checked == [None, "dev", "prod"]
    assert result.blueprints["dev"].blueprint.node_groups == result.blueprints[None].blueprint.node_groups


def test_an_empty_named_list_is_reported_not_ignored() -> None:
    result = _result(b"    storage: []\n")
    assert [(f.code, f.field, f.line, f.column, f.hint) for f in result.findings] == [
        (
            "BP136",
            "environments.dev.storage",
            19,
            14,
            "to remove every storage item in this environment write `storage: null`; to change one, list it "
            "by name: `storage: [{name: ..., ...}]`",
        )
    ]


def test_removing_a_required_field_points_at_the_null() -> None:
    result = _result(b"    node_groups:\n      - {name: eval, machine_type: null}\n")
    assert [(f.code, f.field, f.line, f.column) for f in result.findings] == [
        ("BP006", "node_groups[1].machine_type", 20, 36),
    ]


def test_with_env_a_problem_inherited_from_the_base_is_still_reported() -> None:
    text = BASE.replace(b"count: 2", b"count: 0") + b"environments:\n  dev: {labels: {x: y}}\n"
    result = load_bytes(text, "bp.yaml", environment="dev")
    assert [(f.code, f.field, f.line, f.environment) for f in result.findings] == [
        ("BP009", "node_groups[1].count", 14, None),
    ]
    assert not result.ok
