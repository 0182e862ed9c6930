"""Past session transcripts: Pi JSONL lines, incremental-indexing bookkeeping, search requests."""
