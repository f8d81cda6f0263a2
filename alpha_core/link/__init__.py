"""Linking: the C runtime compiled per target with `zig cc`, joined with a role's kernels and
program description into one static executable."""

from alpha_core.link.link import link_executable
from alpha_core.link.toolchain import TARGETS, LinkError, compile_c, runtime_objects

__all__ = ["TARGETS", "LinkError", "compile_c", "link_executable", "runtime_objects"]
