"""The in-cluster software of a Kubernetes cluster, one module per piece: pure functions that return
plain manifests (dicts) from the pins in software.yaml and the node groups that need the piece."""
