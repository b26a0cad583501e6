"""Node software: Ansible extravars and inventory from the blueprint, and the ansible-runner driver.

Submodules are imported explicitly (``from clusterfab.provision.runner import run_playbook``) so
that importing the package stays free of side effects and of heavy imports.
"""
