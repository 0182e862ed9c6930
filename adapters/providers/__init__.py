"""Model providers: embedders, rerankers and LLM completers (HTTP and child process)."""
