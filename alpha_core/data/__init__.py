"""Data sets known at build time: table facts and the deterministic synthetic source."""
