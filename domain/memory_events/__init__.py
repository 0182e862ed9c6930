"""The event classes of a memory stream, one module per kind (ADR 0111). Import them through
`pi_hermes_memory.domain.memory.events`, which builds a kind's class on its first use."""
