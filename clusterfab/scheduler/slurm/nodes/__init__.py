"""The programs the Slurm controller runs against the cloud: the node sync (a systemd timer: names,
addresses, lost and orphaned instances, nodes drained for hardware) and the power programs Slurm calls for
elastic nodes (resume: create instances; suspend and resume-fail: delete them).

Shipped to the controller as the package `clusterfab_slurm_nodes` beside the rendered Slurm files and run
by Ubuntu's python3 (`python3 -m clusterfab_slurm_nodes sync|resume|suspend|resume-fail`): the standard
library plus boto3 (python3-boto3) on AWS, and only relative imports inside the package.
"""
