"""pi-hermes-memory."""
