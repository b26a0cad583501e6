"""`python -m clusterfab` runs the CLI."""

from clusterfab.cli import main

main()
