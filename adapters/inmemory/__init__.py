"""In-memory adapters: real implementations of the ports, for tests and embedding."""
