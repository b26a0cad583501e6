"""The pieces of Azure's identifiers the parsers of blueprint and stack values share (patterns, not compiled):
a GUID, and the `/subscriptions/<id>/resourceGroups/<group>` every resource id starts with."""

from __future__ import annotations

GUID = r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}"
"""A subscription, tenant, object or client id."""
GROUP_ID = rf"/subscriptions/(?P<subscription>{GUID})/(?i:resourceGroups)/(?P<group>[-\w.()]{{0,89}}[-\w()])"
"""A resource group's id: its subscription and its name (1-90 characters, no period last)."""
