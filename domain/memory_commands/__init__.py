"""The memory commands other than `AddMemory`, one module per kind (ADR 0111). Import them
through `pi_hermes_memory.domain.memory.commands`, which builds a kind's class on first use."""
