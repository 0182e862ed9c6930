"""What the LLM's replies and the user's messages teach: reply parsing, capture, corrections,
clustering."""
