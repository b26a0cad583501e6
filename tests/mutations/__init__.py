"""Wrong facts and wrong renders the tests must refuse: one pure edit of one file each, with the tests
that must fail once it is applied (scripts/mutation_check.py applies them to a copy of the tree).

The modules `<area>_mutations.py` each hold a `MUTATIONS` tuple; none is collected by pytest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


class MutationMissedError(ValueError):
    """The text a mutation edits is not (or not exactly once) in its file: the mutation must follow it."""


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    """The file to edit, relative to the repository root."""
    edit: Callable[[str], str]
    """The file's text -> the mutated text (pure)."""
    must_fail: tuple[str, ...]
    """pytest node ids (or files), relative to the repository root, every one of which must fail."""
    why: str
    """What the wrong fact or render would do to a user."""


def replace_once(old: str, new: str) -> Callable[[str], str]:
    """An edit replacing the one occurrence of `old`; text where it is missing or repeated is refused, so
    that a mutation cannot silently stop applying when the file changes."""

    def edit(text: str) -> str:
        count = text.count(old)
        if count != 1:
            raise MutationMissedError(f"expected exactly one {old!r}, found {count}")
        return text.replace(old, new)

    return edit
