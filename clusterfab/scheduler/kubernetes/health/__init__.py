"""The deep GPU health check on a Kubernetes cluster (`clusterfab health`, docs/health.md): the objects it
applies (objects.py), the all-reduce program its node pairs run (allreduce.py), how it judges what they
report (judge.py), the API server client it talks through (kubeapi.py) and the run itself (run.py)."""
