"""Pulumi components for clusterfab clusters: the only code that imports pulumi_aws / pulumi_gcp /
pulumi_azure_native.

Every component follows one shape: typed args -> pure planning (a `plan_*` function, no engine) ->
children with `parent=self` and stable names derived from the blueprint's names -> typed outputs ->
`register_outputs` last. Shared contracts (mount targets, tags) live in `components._contracts` and
`components.tags`; names in `components._naming`.
"""
