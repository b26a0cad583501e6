"""The teams' users get one uid on every host, derived from the name alone."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from clusterfab.scheduler.slurm.users import FIRST_UID, UID_SPAN, user_ids

NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,15}", fullmatch=True), max_size=40)


def test_a_uid_is_the_names_hash_in_the_range() -> None:
    digest = hashlib.sha256(b"alice").digest()
    assert user_ids(["alice"]) == {"alice": FIRST_UID + int.from_bytes(digest[:8], "big") % UID_SPAN}
    # Pinned: a uid that changed between releases would take every user's files away from them.
    assert user_ids(["alice"])["alice"] == 40207


@given(NAMES, NAMES)
def test_uids_are_distinct_in_range_and_stable_when_others_join(names: list[str], more: list[str]) -> None:
    ids = user_ids(names)
    assert len(set(ids.values())) == len(ids) == len(set(names))
    assert all(FIRST_UID <= uid < FIRST_UID + UID_SPAN for uid in ids.values())
    assert user_ids(list(reversed(names))) == ids
    alone = {name: user_ids([name])[name] for name in names}
    together = user_ids(names + more)
    # Only a collision moves a uid, and then only for the later name.
    moved = [name for name in names if together[name] != alone[name]]
    for name in moved:
        assert any(user_ids([other])[other] == alone[name] and other < name for other in together)
