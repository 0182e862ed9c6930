"""Files on disk other than the Markdown memory: skill and knowledge folders, session JSONL,
config."""
