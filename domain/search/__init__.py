"""Search terms and text similarity: how text is cut into keys and when two texts are
near-duplicates."""
