"""The framework-neutral tool API: definitions, schemas per ecosystem, dispatch, the tool guide."""
