"""`python -m pi_hermes_memory.adapters.cli`: the `pi-hermes-memory` command (for hosts that
start it without the console script on PATH)."""

import sys

from pi_hermes_memory.adapters.cli.app import main

if __name__ == "__main__":  # a test that imports every module must not run the CLI
    sys.exit(main())
