"""The primitive arithmetic that every numeric recipe in Alpha is written against.

Alpha promises that a program produces the same float32 bits on x86-64, AArch64 and GPUs,
and that a NumPy reference evaluating the same operations in the same order reproduces
them.  That promise only holds if every transcendental function (``exp``, ``log``, ...)
is *defined* as a fixed sequence of operations that every target performs identically.
IEEE 754 guarantees identical bits for exactly one class of operations: the basic,
correctly rounded ones (``+ - * / sqrt``), comparisons, selection, and bit manipulation.
This module names that class.  A recipe (see :mod:`alpha_core.semantics.mathfuncs` and
:mod:`alpha_core.semantics.rng`) written against :class:`Arith` can then be run through
two interpreters — :class:`~alpha_core.semantics.numpy_arith.NumpyArith` (the reference)
and :class:`~alpha_core.semantics.llvm_arith.LlvmArith` (the compiler) — and both see the
same operations in the same order.

Rules every implementation must obey (they are what makes the bits portable):

* every float operation is rounded to float32 on its own (round to nearest, ties to even);
  nothing is fused (no FMA, no ``contract``), reassociated or computed in wider precision;
* subnormals are kept (no flush-to-zero);
* comparisons are IEEE *ordered* comparisons: they are false when either side is NaN;
* integer operations are on two's-complement 32-bit values and wrap on overflow;
* the unsigned 64-bit operations of :class:`Arith64` wrap modulo 2**64.

The type parameters are the representation of a float32 value ``F``, of an int32 value
``I`` and of a comparison result ``M`` (a mask).  For NumPy they are arrays (a recipe then
works elementwise on any shape), for LLVM they are scalar ``ir.Value`` objects.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

F = TypeVar("F")
I = TypeVar("I")  # noqa: E741 - conventional name for the integer type parameter
M = TypeVar("M")
U = TypeVar("U")
I_co = TypeVar("I_co", covariant=True)


class Arith(Protocol[F, I, M]):
    """Correctly rounded float32 and wrapping int32 primitives.

    Each method is one IEEE operation; the recipes never rely on anything else, so two
    implementations that honour these definitions give identical bits.
    """

    # -- float32 -------------------------------------------------------------------------
    def const(self, x: float) -> F:
        """``x`` rounded to the nearest float32, exactly as ``np.float32(x)`` rounds it."""
        ...

    def add(self, a: F, b: F) -> F:
        """``a + b``, rounded once to float32."""
        ...

    def sub(self, a: F, b: F) -> F:
        """``a - b``, rounded once to float32."""
        ...

    def mul(self, a: F, b: F) -> F:
        """``a * b``, rounded once to float32 (never fused with a later add)."""
        ...

    def div(self, a: F, b: F) -> F:
        """``a / b``, correctly rounded (IEEE division, not a reciprocal estimate)."""
        ...

    def neg(self, a: F) -> F:
        """``-a``: flips the sign bit only (so ``-0.0`` and NaNs are handled exactly)."""
        ...

    def sqrt(self, a: F) -> F:
        """IEEE square root, correctly rounded; NaN for ``a < 0``, ``-0.0`` for ``-0.0``."""
        ...

    # -- comparisons and selection ---------------------------------------------------------
    def lt(self, a: F, b: F) -> M:
        """Ordered ``a < b`` (false if either is NaN)."""
        ...

    def le(self, a: F, b: F) -> M:
        """Ordered ``a <= b`` (false if either is NaN)."""
        ...

    def gt(self, a: F, b: F) -> M:
        """Ordered ``a > b`` (false if either is NaN)."""
        ...

    def ge(self, a: F, b: F) -> M:
        """Ordered ``a >= b`` (false if either is NaN)."""
        ...

    def eq(self, a: F, b: F) -> M:
        """Ordered ``a == b`` (false if either is NaN; ``-0.0 == +0.0``)."""
        ...

    def select(self, m: M, a: F, b: F) -> F:
        """``a`` where ``m`` holds, else ``b`` — both sides are always evaluated."""
        ...

    def iselect(self, m: M, a: I, b: I) -> I:
        """Integer counterpart of :meth:`select`."""
        ...

    # -- bit views and conversions -----------------------------------------------------------
    def bits(self, a: F) -> I:
        """The IEEE bit pattern of ``a`` as an int32 (a bit cast, no conversion)."""
        ...

    def from_bits(self, i: I) -> F:
        """The float32 whose bit pattern is ``i`` (inverse of :meth:`bits`)."""
        ...

    def itof(self, i: I) -> F:
        """Signed int32 to float32, rounded to nearest even (exact for ``|i| < 2**24``)."""
        ...

    def ftoi(self, f: F) -> I:
        """Float32 to int32, truncating toward zero.

        Defined for every input (LLVM's ``fptosi`` is not): values beyond the int32 range
        saturate to ``-2**31`` / ``2**31 - 1`` and NaN gives 0.
        """
        ...

    # -- int32 ----------------------------------------------------------------------------
    def iconst(self, x: int) -> I:
        """The int32 whose two's-complement bits are ``x mod 2**32``."""
        ...

    def iadd(self, a: I, b: I) -> I:
        """Wrapping 32-bit addition."""
        ...

    def isub(self, a: I, b: I) -> I:
        """Wrapping 32-bit subtraction."""
        ...

    def iand(self, a: I, b: I) -> I:
        """Bitwise and."""
        ...

    def ior(self, a: I, b: I) -> I:
        """Bitwise or."""
        ...

    def ishl(self, a: I, n: int) -> I:
        """Shift left by the constant ``n`` (0 <= n < 32); bits shifted out are lost."""
        ...

    def ishr(self, a: I, n: int) -> I:
        """Arithmetic (sign-propagating) shift right by the constant ``n`` (0 <= n < 32)."""
        ...


class Arith64(Protocol[U, I_co]):
    """Unsigned 64-bit primitives, used only by the counter-based generator.

    ``U`` holds a uint64; all arithmetic wraps modulo ``2**64``.  :meth:`u64_low32` is the
    one bridge to :class:`Arith` integers.
    """

    def u64const(self, x: int) -> U:
        """The uint64 ``x mod 2**64``."""
        ...

    def u64add(self, a: U, b: U) -> U:
        """``(a + b) mod 2**64``."""
        ...

    def u64mul(self, a: U, b: U) -> U:
        """``(a * b) mod 2**64`` (the low 64 bits of the product)."""
        ...

    def u64xor(self, a: U, b: U) -> U:
        """Bitwise exclusive or."""
        ...

    def u64shr(self, a: U, n: int) -> U:
        """Logical shift right by the constant ``n`` (0 <= n < 64), zero filling."""
        ...

    def u64_low32(self, a: U) -> I_co:
        """The low 32 bits of ``a``, reinterpreted as an int32."""
        ...


def check_shift(n: int, width: int) -> int:
    """Validate a constant shift amount.

    Shifts by ``width`` or more are undefined (poison) in LLVM, so they are rejected here,
    at recipe-construction time, rather than silently differing between targets.
    """
    if not isinstance(n, int) or not 0 <= n < width:
        raise ValueError(f"shift amount must be a constant in [0, {width}), got {n!r}")
    return n


def to_int32(x: int) -> int:
    """``x`` reduced to the signed 32-bit range (two's complement)."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def to_uint64(x: int) -> int:
    """``x`` reduced modulo ``2**64``."""
    return x & 0xFFFFFFFFFFFFFFFF
