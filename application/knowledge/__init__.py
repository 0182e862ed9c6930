"""The knowledge base over the user's folders: indexing, search and its tools."""
