"""Background learning through the LLM port: reviews, consolidation, the interview, learn-skill."""
