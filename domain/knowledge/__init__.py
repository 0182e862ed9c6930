"""The knowledge base: which files are documents, how they are cut into chunks, .gitignore rules."""
