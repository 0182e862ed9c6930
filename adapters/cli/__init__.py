"""The `pi-hermes-memory` command line: `app` builds the parser and runs a command; one module
per command group (`consolidate`, `context`, `doctor`, `governance`, `knowledge`, `learn`,
`porting`, `review`, `server`, `skills`, `store_copy`) registers its subcommands."""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # the old flat module's names, for one release (ADR 0055)
    from pi_hermes_memory._moved import forward_attributes

    __getattr__ = forward_attributes(__name__, "pi_hermes_memory.adapters.cli.app")
    del forward_attributes
