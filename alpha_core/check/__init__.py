"""The checker: names, types, static shapes and the brief's invariants, giving a Program."""
