"""The read-only doctor: its report and the cross-scope near-duplicate scan."""
