"""Session history (past transcripts): indexing, reading, session_search and its tool."""
