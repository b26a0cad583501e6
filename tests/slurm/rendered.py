"""The rendered Slurm files the lab runs."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"


def rendered_files(name: str = "handwritten") -> dict[str, str]:
    """The rendered Slurm files (name -> content) the lab runs.

    Until `clusterfab render slurm` lands this is the hand-written set under data/handwritten; then it
    becomes ``render_slurm(spec)`` for the matching blueprint (the only line to change).
    """
    return files_in(DATA / name)


def files_in(root: Path) -> dict[str, str]:
    """The files under ``root`` (``clusterfab render slurm --out DIR`` output) as name -> content."""
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}
