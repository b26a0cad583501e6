"""Real stacks: preview, up, destroy and promote through Pulumi's Automation API (needs the pulumi CLI).

The Automation API layer (`automation`) is thin; what decides anything is pure and tested without the
CLI: engine events as typed records (`events`), promotion gates (`gates`), the health record other
commands write (`health`) and the live progress view (`progress`). Nothing here imports Pulumi at
module import time; `automation` imports `pulumi.automation` inside its functions.
"""
