"""The live agent session: the lifecycle API, auto-recall/capture, the system-prompt context."""
