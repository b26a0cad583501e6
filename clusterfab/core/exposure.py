"""Which source ranges expose a port to the internet: one answer for the blueprint's SSH rule (BP111) and
the policy pack's SSH / RDP rule, so that a range the blueprint warns about is the range the pack refuses.

Every public range wider than one site's counts, not only 0.0.0.0/0: 0.0.0.0/1 + 128.0.0.0/1 is the
same internet, and a /16 of someone else's network is not an office.
"""

from __future__ import annotations

import ipaddress

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

PUBLIC_PREFIX_MIN = 24
"""The widest public IPv4 range a port may be open to: an office or VPN egress is a few addresses."""

PUBLIC_IPV6_PREFIX_MIN = 48
"""The same for IPv6: a /48 is what one end site is assigned (RFC 6177 §2; RIPE-690 §4.2), the IPv6
counterpart of an office's IPv4 range."""


def network(cidr: str) -> Network | None:
    """A CIDR as a network (host bits ignored, as the clouds do), or None when it is not one."""
    try:
        return ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError:
        return None


def too_public(net: Network) -> bool:
    """Whether a port open to `net` is open to the internet: a public range wider than one site's."""
    widest = PUBLIC_PREFIX_MIN if net.version == 4 else PUBLIC_IPV6_PREFIX_MIN
    return not net.is_private and net.prefixlen < widest


def describe(net: Network) -> str:
    """What a public range is, in words: `the whole internet`, `8,388,608 public addresses (0.0.0.0/9)`."""
    if net.prefixlen == 0:
        return "the whole internet"
    if net.version == 6:
        return f"the public IPv6 range {net}"
    return f"{net.num_addresses:,} public addresses ({net})"
