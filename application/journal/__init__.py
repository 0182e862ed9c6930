"""The write pipeline over streams and the wire formats of events and snapshots."""
