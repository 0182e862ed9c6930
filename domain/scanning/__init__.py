"""The content scanner: secrets, prompt injection and invisible Unicode, checked before every
write."""
