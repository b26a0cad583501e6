"""Azure components (pulumi-azure-native): resource group, network, cluster bucket, node identity, GPU
scale sets (one per InfiniBand fabric unit) and Azure Managed Lustre.

Every resource is created in the resource group and location its Args name (passed explicitly, never
left to the provider's default) and carries the given tags. Each module imports only the
pulumi-azure-native submodules it uses: the package is large and its modules load lazily.
"""
