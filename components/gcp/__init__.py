"""GCP components: networks per fabric, GPU node groups (MIGs), TPU slices, Managed Lustre, Filestore,
the cluster bucket and the budget.

Every resource is created in the blueprint's project (passed explicitly, never left to the provider's
default) and carries the standard labels where GCP allows labels.
"""

from __future__ import annotations


class GcpPlanError(ValueError):
    """A blueprint the GCP components cannot realize (raised by the pure `plan_*` functions, before any
    resource exists); the program reports it as a clean error, not a traceback."""
