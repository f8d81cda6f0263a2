"""A file as the editor and the CLI see it: parsed, checked whole (systems, plans, pairings,
data), memoised and re-checked incrementally."""
