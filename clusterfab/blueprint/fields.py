"""What every blueprint model shares: the strict base model and the field types more than one section uses.

The sections' models live in modules of their own (`models` the cluster and its resources, `scheduler` the
workload scheduler and the teams); they all build on these.
"""

# No `from __future__ import annotations`: pydantic evaluates every field's annotation when a model class
# is created (see models.py).
import ipaddress
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

KEY_FORMS = (
    "AWS: the key's ARN, arn:aws:kms:<region>:<account>:key/<key id> (not an alias); GCP: "
    "projects/<project>/locations/<region>/keyRings/<ring>/cryptoKeys/<key>. In the blueprint's region"
)
"""How a customer-managed key is written, for the `kms_key` fields' descriptions."""


def _ipv4_network(value: str) -> str:
    try:
        network = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise PydanticCustomError(
            "cidr",
            "'{value}' is not an IPv4 network in CIDR form ({reason})",
            {"value": value, "reason": str(exc)},
        ) from None
    return str(network)


Cidr = Annotated[str, AfterValidator(_ipv4_network)]
"""An IPv4 network in CIDR form, normalized (`10.0.0.0/16`)."""

ITEM_NAME_PATTERN = r"^[a-z]([a-z0-9-]{0,28}[a-z0-9])?$"

KmsKey = Annotated[str, Field(min_length=1, max_length=2048, pattern=r"^\S+$")]
"""A customer-managed key; its cloud's format and location are checked by rule BP138."""
ItemName = Annotated[str, Field(pattern=ITEM_NAME_PATTERN, max_length=30)]
UNIX_NAME_PATTERN = r"^[a-z_][a-z0-9_-]{0,31}$"
TeamUser = Annotated[
    str,
    Field(
        # A Unix login name (Slurm), or an e-mail address: the Google account a GKE cluster authenticates.
        pattern=r"^([a-z_][a-z0-9_-]{0,31}|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})$",
        max_length=254,
    ),
]


class Spec(BaseModel):
    """Base of every blueprint model: strict, frozen, no unknown keys."""

    # defer_build: a model's validator is built on its first use, not at import. A run validates the
    # Blueprint (whose validator takes in the nested models' schemas), so building every nested model's
    # own validator at import was work no command used. The nested defaults are made with
    # model_construct for the same reason; a test checks that each equals the validated one.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)
