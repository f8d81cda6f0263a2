"""The typed tensor IR: static shapes, a leading batch axis, every operation's order fixed."""
