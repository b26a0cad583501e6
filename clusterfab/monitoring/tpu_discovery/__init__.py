"""The monitoring host's TPU host discovery: a standard-library program (program.py) that lists the
cluster's TPU VMs through the Cloud TPU API and writes them as a Prometheus file_sd file. TPU VMs are not
Compute Engine instances, so gce_sd_configs (instances.list) never sees them.

Shipped as the package `clusterfab_tpu_discovery` under `lib/` of the monitoring host's files and run by a
systemd timer (the prometheus role). gcp_http.py and bearer.py are links to the GCP node programs' HTTP
helper and the token cache it uses (clusterfab/scheduler/slurm/nodes/): one helper, shipped with each program
that needs it.
"""
