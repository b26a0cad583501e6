"""How every command writes: the terminal's width and colour, JSON, and a blueprint's findings."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

import typer

from clusterfab.cli.options import Format

if TYPE_CHECKING:
    from clusterfab.load import Loaded


def color() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def width() -> int:
    """Columns to lay text out for: COLUMNS if set, else the terminal's, else 120 (piped output)."""
    raw = os.environ.get("COLUMNS", "")
    if raw.isdigit() and int(raw) > 0:
        return max(int(raw), 40)
    if sys.stdout.isatty():
        return max(os.get_terminal_size(sys.stdout.fileno()).columns, 40)
    return 120


def echo_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2))


def show_validation(result: Loaded, output: Format, env: str | None, *, command: str, verdict: str) -> None:
    """Print a loaded blueprint's findings (all of them) on stdout in the format asked for; `verdict`
    ends the text form's last line (`valid (...)`, `invalid (...); not costed`)."""
    from clusterfab.core import markdown as md
    from clusterfab.rules.render import render_markdown, render_text

    if output is Format.json:
        echo_json(validation_json(result, env))
        return
    if output is Format.markdown:
        state = "valid" if result.ok else "invalid"
        title = f"clusterfab {command}: {md.code(result.file)} is {state}"
        typer.echo(render_markdown(result.findings, result.lines, title=title))
        return
    if result.findings:
        typer.echo(render_text(result.findings, result.lines, color=color(), width=width()))
        typer.echo("")
    typer.echo(f"{result.file}: {verdict}")


def validation_json(result: Loaded, env: str | None) -> dict[str, Any]:
    """The `clusterfab validate --format json` document (architecture §5, docs/json/validate.md); also
    what cost, plan and diff print for a blueprint they cannot act on."""
    from clusterfab.contract import envelope
    from clusterfab.core.findings import Severity, count_by_severity

    counts = count_by_severity(result.findings)
    cloud, region = _where(result, env)
    return {
        **envelope(blueprint=result.file, env=env, cloud=cloud, region=region),
        "ok": result.ok,
        "checked": [e for e in result.checked if env is None or e == env],
        "summary": {
            "errors": counts[Severity.ERROR],
            "warnings": counts[Severity.WARNING],
            "notes": counts[Severity.INFO],
        },
        "findings": [f.to_json() for f in result.findings],
    }


def _where(result: Loaded, env: str | None) -> tuple[str | None, str | None]:
    """The cloud and region of the blueprint (as loaded, else as written when they are strings)."""
    resolved = result.blueprints.get(env) or result.blueprints.get(None)
    if resolved is not None:
        return resolved.blueprint.cloud, resolved.blueprint.region
    data = result.document.data if result.document is not None else None
    if not isinstance(data, dict):
        return None, None
    cloud, region = data.get("cloud"), data.get("region")
    return (cloud if isinstance(cloud, str) else None), (region if isinstance(region, str) else None)
