"""memory_search: full-text, hybrid (embeddings) and the retrieval scoring pipeline."""
