"""A stand-in for the `pulumi` CLI, for driving the Automation API end to end without the real one.

Installed as `<root>/bin/pulumi` (see `FakePulumi` in conftest.py), it keeps its stacks in
`<root>/state.json` and appends every invocation to `<root>/calls.jsonl`. It answers what clusterfab's
Automation API layer calls: `version` (v3.200.0, so events go through a file), `stack select | output |
history | export`, `config` (all, get, set) and `preview | up | destroy ... --event-log FILE`, for
which it writes JSON engine events (prelude, a pre and outputs/failed event per scripted step, a
summary and a cancel event). `preview --save-plan FILE` writes the previewed steps as the update
plan; `up --plan FILE` fails, as the engine does, on a step the plan does not contain.

State per stack: `config` {key: value}, `outputs`, `resources` [{urn, type, protect}] (its state, for
`stack export`), `events` {operation: [steps]} with a step `{op, type, name, protect?, keys?, diffs?,
detailedDiff?, fail?}`, optional `outputs_after_up`, `fail` {operation: message}, and `delete_hooks`
(true: some resource has a delete hook, so that, as the engine does since 3.182, a destroy or its preview
without `--run-program` fails).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / "state.json"
CALLS = ROOT / "calls.jsonl"
PROJECT = "clusterfab"


def load() -> dict[str, Any]:
    return json.loads(STATE.read_text())


def save(state: dict[str, Any]) -> None:
    STATE.write_text(json.dumps(state, indent=2))


def fail(message: str, code: int = 255) -> None:
    sys.stderr.write(f"error: {message}\n")
    sys.exit(code)


def option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def stack_of(state: dict[str, Any], args: list[str]) -> tuple[str, dict[str, Any]]:
    name = option(args, "--stack") or ""
    stacks = state["stacks"]
    if name not in stacks:
        fail(f"no stack named '{name}' found")
    return name, stacks[name]


def urn(stack: str, step: dict[str, Any]) -> str:
    return f"urn:pulumi:{stack}::{PROJECT}::{step['type']}::{step['name']}"


def metadata(stack: str, step: dict[str, Any]) -> dict[str, Any]:
    # As the CLI writes them (sdk/go/common/apitype/events.go): an `omitempty` field that is empty is
    # left out (tests/deploy/test_recorded_events.py holds this file to those types).
    state = _present(
        {
            "type": step["type"],
            "urn": urn(stack, step),
            "custom": step.get("custom", True),
            "protect": step.get("protect", False),
            "inputs": {},
            "outputs": {},
        }
    )
    op = step["op"]
    return _present(
        {
            "op": op,
            "urn": urn(stack, step),
            "type": step["type"],
            "provider": "",
            "old": None if op == "create" else state,
            "new": None if op == "delete" else state,
            "keys": step.get("keys"),
            "diffs": step.get("diffs"),
            "detailedDiff": {
                path: {"diffKind": kind, "inputDiff": True}
                for path, kind in step.get("detailedDiff", {}).items()
            },
            "logical": True,
        }
    )


_OMITEMPTY = {"protect", "custom", "keys", "diffs", "logical", "planning"}


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields without the empty `omitempty` ones."""
    return {k: v for k, v in fields.items() if k not in _OMITEMPTY or v not in (None, False, [])}


def _planned(step: dict[str, Any]) -> list[str]:
    return [step["op"], step["type"], step["name"]]


def run_operation(operation: str, args: list[str]) -> None:
    state = load()
    name, stack = stack_of(state, args)
    log = option(args, "--event-log")
    planning = operation in {"preview", "preview-destroy"}
    steps = stack.get("events", {}).get(operation, [])
    saved = option(args, "--save-plan")
    if saved is not None:
        Path(saved).write_text(json.dumps({"steps": [_planned(step) for step in steps]}))
    held = option(args, "--plan")
    if held is not None:
        planned = json.loads(Path(held).read_text())["steps"]
        extra = [step for step in steps if _planned(step) not in planned]
        if extra:
            # As the engine does: an operation the update plan does not contain fails the update.
            fail(f"{urn(name, extra[0])}: resource violates plan: {extra[0]['op']} is not allowed")
    events: list[dict[str, Any]] = [{"preludeEvent": {"config": stack.get("config", {})}}]
    changes: dict[str, int] = {}
    failed = False
    for step in steps:
        meta = metadata(name, step)
        events.append({"resourcePreEvent": _present({"metadata": meta, "planning": planning})})
        if step.get("fail") and not planning:
            failed = True
            diagnostic = {"message": step["fail"], "color": "never", "severity": "error", "urn": meta["urn"]}
            events.append({"diagnosticEvent": diagnostic})
            events.append({"resOpFailedEvent": {"metadata": meta, "status": 1, "steps": 1}})
            continue
        events.append({"resOutputsEvent": _present({"metadata": meta, "planning": planning})})
        changes[step["op"]] = changes.get(step["op"], 0) + 1
    for policy in stack.get("policy_events", {}).get(operation, []):
        events.append({"policyEvent": policy})
    events.append({"summaryEvent": {"maybeCorrupt": False, "durationSeconds": 1, "resourceChanges": changes}})
    events.append({"cancelEvent": {}})
    if log is not None:
        with open(log, "a", encoding="utf-8") as out:
            for sequence, event in enumerate(events, 1):
                out.write(json.dumps({"sequence": sequence, "timestamp": int(time.time()), **event}) + "\n")
    print(f"{operation} of {name}: {len(steps)} steps")
    message = stack.get("fail", {}).get(operation)
    if failed or message:
        fail(message or "update failed")
    if operation == "up":
        if "outputs_after_up" in stack:
            stack["outputs"] = stack["outputs_after_up"]
        stack.setdefault("history", []).append({"kind": "update", "resourceChanges": changes, "ago_s": 0})
        save(state)
    if operation == "destroy":
        stack["resources"] = []
        stack["outputs"] = {}
        stack.setdefault("history", []).append({"kind": "destroy", "resourceChanges": changes, "ago_s": 0})
        save(state)


def _stamp(ago_s: float) -> str:
    when = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=ago_s)
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def history(stack: dict[str, Any]) -> list[dict[str, Any]]:
    """Newest first; an entry's `ago_s` says how long ago it ended (default: a day ago)."""
    entries = stack.get("history") or [{"kind": "update", "resourceChanges": {}}]
    return [
        {
            "kind": entry["kind"],
            "startTime": _stamp(entry.get("ago_s", 86400) + 60),
            "endTime": _stamp(entry.get("ago_s", 86400)),
            "message": "",
            "environment": {},
            "config": {},
            "result": "succeeded",
            "version": index + 1,
            "resourceChanges": entry["resourceChanges"],
        }
        for index, entry in reversed(list(enumerate(entries)))
    ]


def main(argv: list[str]) -> None:
    with CALLS.open("a", encoding="utf-8") as calls:
        calls.write(json.dumps(argv) + "\n")
    separator = argv.index("--") if "--" in argv else len(argv)
    args = [a for a in argv[:separator] if a != "--non-interactive"]
    tail = argv[separator + 1 :]
    if args == ["version"]:
        print(load().get("version", "v3.200.0"))
        return
    command = args[0] if args else ""
    if command == "stack":
        state = load()
        _, stack = stack_of(state, args)
        sub = args[1]
        if sub == "select":
            return
        if sub == "output":
            print(json.dumps(stack.get("outputs", {})))
            return
        if sub == "history":
            print(json.dumps(history(stack)[:1] if "--page-size" in args else history(stack)))
            return
        if sub == "export":
            print(json.dumps({"version": 3, "deployment": {"resources": stack.get("resources", [])}}))
            return
    if command == "config":
        state = load()
        name, stack = stack_of(state, args)
        config = stack.setdefault("config", {})
        if len(args) > 1 and args[1] == "get":
            key = args[2]
            if key not in config:
                fail(f"configuration key '{key}' not found for stack '{name}'")
            print(json.dumps({"value": config[key], "secret": False}))
            return
        if len(args) > 1 and args[1] == "set":
            config[args[2]] = tail[0]
            save(state)
            return
        print(json.dumps({key: {"value": value, "secret": False} for key, value in config.items()}))
        return
    if command == "preview":
        run_operation("preview", args)
        return
    if command == "up":
        run_operation("up", args)
        return
    if command == "destroy":
        _, stack = stack_of(load(), args)
        if stack.get("delete_hooks") and "--run-program=true" not in args:
            fail("this stack has resources with delete hooks: destroy must run the program (--run-program)")
        run_operation("preview-destroy" if "--preview-only" in args else "destroy", args)
        return
    fail(f"fake pulumi does not know `{' '.join(argv)}`", code=2)


if __name__ == "__main__":
    main(sys.argv[1:])
