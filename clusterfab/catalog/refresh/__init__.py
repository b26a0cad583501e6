"""Fetchers that refresh catalog data files from the vendors' own indexes (network access needed).

They are separate from the code that queries the catalog: `validate` and `cost` read the data files
only. Each fetcher keeps the parsing pure (tested offline on recorded answers) and the network call thin.
"""
