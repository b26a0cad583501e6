"""Plan inputs checked against the clouds' own API models (dev only: nothing outside tests/ imports it).

- `models.py` reads botocore service models, google-api-python-client's discovery documents and the
  google-cloud-lustre protobuf, and resolves a field path to its kind, enum, range, length and pattern.
- `mapping_aws.py` / `mapping_gcp.py` are the data: per Pulumi type token, each input path -> the API
  field it becomes (with a note where the provider renames or reshapes it) or why it has none.
- `documented.py`: constraints the APIs state in words, each with its quote; `rules.py`: cross-field
  rules with their sources; `plans.py`: which plans are checked; `test_api_models.py`: the tests.

When a component gains an input, the coverage test names it: add its mapping (or a `Free` reason).
"""
