"""What goes into the agent's prompt: the policy/context blocks, auto-recall, standing
instructions."""
