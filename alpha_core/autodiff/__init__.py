"""Reverse-mode differentiation of the tensor graph into one leaf's training step."""
