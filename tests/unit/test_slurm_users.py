"""The teams' users get one uid on every host, derived from the name alone."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from clusterfab.scheduler.slurm.users import user_ids

FIRST_UID, LAST_UID = 20000, 49999
"""The teams' uid range as documented (users.py: "here 20000-49999"), clear of the ids Ubuntu's adduser
and the cloud agents allocate below it."""
NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,15}", fullmatch=True), max_size=40)


def test_a_uid_is_the_names_hash_in_the_range() -> None:
    # The documented derivation, done here: 20000 + (the first 8 bytes of sha256(name), big-endian) mod 30000.
    digest = hashlib.sha256(b"alice").digest()
    assert user_ids(["alice"]) == {"alice": 20000 + int.from_bytes(digest[:8], "big") % 30000}
    # Pinned: a uid that changed between releases would take every user's files away from them.
    assert user_ids(["alice"])["alice"] == 40207


@given(NAMES, NAMES)
def test_uids_are_distinct_in_range_and_stable_when_others_join(names: list[str], more: list[str]) -> None:
    ids = user_ids(names)
    assert len(set(ids.values())) == len(ids) == len(set(names))
    assert all(FIRST_UID <= uid <= LAST_UID for uid in ids.values())
    assert user_ids(list(reversed(names))) == ids
    alone = {name: user_ids([name])[name] for name in names}
    together = user_ids(names + more)
    # Only a collision moves a uid, and then only for the later name.
    moved = [name for name in names if together[name] != alone[name]]
    for name in moved:
        assert any(user_ids([other])[other] == alone[name] and other < name for other in together)
