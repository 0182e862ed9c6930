"""The `pi-hermes-memory` command line: `app` builds the parser and runs a command; one module
per command group (`consolidate`, `context`, `doctor`, `governance`, `knowledge`, `learn`,
`porting`, `review`, `server`, `skills`, `store_copy`) registers its subcommands."""
