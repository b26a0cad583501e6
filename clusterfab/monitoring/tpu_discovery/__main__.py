"""`python3 -m clusterfab_tpu_discovery CONFIG`: one discovery round (the systemd timer runs it)."""

from __future__ import annotations

import sys

from .program import main

sys.exit(main(sys.argv[1:]))
