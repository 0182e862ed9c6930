"""Memory entries: values, commands, events, the document aggregate, chains and their rules."""
