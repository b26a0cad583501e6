"""Blueprint fields whose values are names of plugins (architecture §11.1): `cloud`.

The names are open: a cloud registered at run time (`clusterfab.core.plugins.register_cloud`) is as
valid as a built-in one. A name nobody registered is reported as a value outside a fixed list would be
(the same error type, so the same finding, BP007, and the same did-you-mean), and the JSON Schema
offers the built-in clouds as its enum, for editors.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from clusterfab.core.plugins import BUILTIN_CLOUDS, clouds
from clusterfab.core.vocab import Cloud


def _choices(names: list[str]) -> str:
    """The names as pydantic lists a literal's values: 'a' or 'b'; 'a', 'b' or 'c'."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _known_cloud(value: Any) -> Any:
    known = list(clouds())
    if isinstance(value, str) and value in known:
        return value
    expected = _choices(known)
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


CloudName = Annotated[
    Cloud,
    BeforeValidator(_known_cloud),
    WithJsonSchema({"enum": list(BUILTIN_CLOUDS), "type": "string"}),
    Field(description="aws or gcp."),
]
"""The blueprint's `cloud`: a known cloud's name."""
