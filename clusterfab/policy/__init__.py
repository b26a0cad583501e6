"""clusterfab's CrossGuard policies, importable without side effects.

`checks` holds the rules as pure functions over plain resources (type token, camelCase props, protect
flag), `pricing` prices planned resources with the catalog through the same estimator as
`clusterfab cost`, and `pack` wraps both as pulumi_policy policies. The policy pack itself
(`policy/__main__.py` at the repository root) is the only place that constructs a `PolicyPack`, which
starts a gRPC server and never returns.
"""
