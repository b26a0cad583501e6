"""The programs the Slurm controller runs against the cloud: the node sync (a systemd timer: names,
addresses, lost and orphaned instances, nodes drained for hardware) and the power programs Slurm calls for
elastic nodes (resume: create instances; suspend and resume-fail: delete them).

Shipped to the controller as the package `clusterfab_slurm_nodes` beside the rendered Slurm files (every
module of this folder) and run by Ubuntu's python3 (`python3 -m clusterfab_slurm_nodes
sync|resume|suspend|resume-fail`): the standard library plus boto3 (python3-boto3) on AWS, and only
relative imports inside the package.

What is the same on every cloud: nodesync.py (a round of the sync), reconcile.py (its decision), power.py
(resume and suspend), actions.py, groups.py, scontrol.py (slurmctld's side), accounting.py, counts.py,
files.py, bearer.py (the metadata services' tokens). A cloud is a `Fleet` (fleet.py) and a `NodeCloud` in
modules of its own (aws.py, aws_rds.py; gcp.py, gcp_http.py, gcp_cloudsql.py; azure.py), found by the
settings' `cloud` in clouds.py's table.
"""
