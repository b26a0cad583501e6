"""GCP components: networks per fabric, GPU node groups (MIGs), TPU slices, Managed Lustre, Filestore,
the cluster bucket and the budget.

Every resource is created in the project its Args name (passed explicitly, never left to the provider's
default) and carries the given labels where GCP allows labels.
"""
