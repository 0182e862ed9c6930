"""Pure domain of pi-hermes-memory: values, events, decisions and rules.

Imports only the standard library and attrs. No I/O, no clock, no randomness: time and ids
arrive inside commands.
"""
