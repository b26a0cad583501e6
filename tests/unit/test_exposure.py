"""Which source ranges count as the internet: the one test of BP111 and the pack's SSH / RDP policy."""

from __future__ import annotations

import pytest

from clusterfab.core import exposure


@pytest.mark.parametrize(
    ("cidr", "described"),
    [
        ("0.0.0.0/0", "the whole internet"),
        ("128.0.0.0/1", "2,147,483,648 public addresses (128.0.0.0/1)"),
        ("35.235.240.0/20", "4,096 public addresses (35.235.240.0/20)"),
        ("::/0", "the whole internet"),
        ("2600::/16", "the public IPv6 range 2600::/16"),
    ],
)
def test_public_ranges_wider_than_a_site_are_the_internet(cidr: str, described: str) -> None:
    net = exposure.network(cidr)
    assert net is not None
    assert (exposure.too_public(net), exposure.describe(net)) == (True, described)


@pytest.mark.parametrize(
    "cidr", ["203.0.113.0/24", "203.0.113.7/32", "10.0.0.0/8", "2600:1f18:abcd::/48", "fd00::/8"]
)
def test_one_site_or_a_private_range_is_not(cidr: str) -> None:
    net = exposure.network(cidr)
    assert net is not None
    assert not exposure.too_public(net)


def test_what_is_not_a_range_is_none() -> None:
    assert [exposure.network(c) for c in ("", "sg-123", "10.0.0.0/33")] == [None, None, None]
    assert str(exposure.network("10.1.2.3/8")) == "10.0.0.0/8"  # host bits ignored, as the clouds do
