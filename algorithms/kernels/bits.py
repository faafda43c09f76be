"""Bit and SIMD primitives for numba kernels, written as LLVM intrinsics. Exact.

numba exposes neither the bit-scan instructions nor vector compares, yet a pre-tokenizer that
classifies 64 bytes per step and finds the end of a run with one ``tzcnt`` needs both. Each
primitive here is a hand-written piece of LLVM IR (:func:`bpebench.algorithms.kernels.jit.intrinsic`,
lazy like ``njit``) with a plain-Python twin that computes the same value, so
``NUMBA_DISABLE_JIT=1`` still runs every kernel, and tests compare the two.

``cttz(x)`` / ``ctlz(x)``
    trailing / leading zero bits of a uint64, 64 for 0 (``tzcnt`` / ``lzcnt``). O(1).
``load_u64(data, i)``
    the 8 bytes ``data[i:i+8]`` of a uint8 array as a little-endian uint64 (one unaligned load;
    the caller guarantees ``i + 8 <= len(data)``). O(1).
``load_u16(data, i)``
    the 2 bytes ``data[i:i+2]`` as a little-endian number, as a uint64 (``i + 2 <= len(data)``). O(1).
``ascii_masks(data, i)``
    classify the 64 bytes ``data[i:i+64]`` (the caller guarantees ``i + 64 <= len(data)``): a
    tuple of uint64 bitmaps, bit ``j`` for byte ``i + j``, in the order of :data:`MASKS`
    (``[A-Z]``, ``[a-z]``, ``[0-9]``, ``[\\t\\n\\v\\f\\r ]``, ``[\\r\\n]``, ``/``, ``'``, ``' '``,
    bytes ``>= 0x80``). Vector compares (AVX-512: one ``vpcmpb`` per test). O(1) per 64 bytes.
``bit_planes(codes, i)``
    the eight bit planes of the 64 bytes ``codes[i:i+64]``: plane ``k`` has bit ``j`` set when
    bit ``k`` of byte ``i + j`` is (a 64 x 8 bit transpose). O(1) per 64 bytes.
``prefetch(array, i)``
    hint that ``array[i]`` will be read soon (``prefetcht0``); no effect on results.
``address_pointer(address, dtype)``
    a typed pointer to an integer address (compiled code only), for ``numba.carray``.
"""

from __future__ import annotations

from .jit import intrinsic, njit  # noqa: F401 - njit: this is a kernel module (jit.kernel_modules)

_U64 = (1 << 64) - 1
#: the bitmaps ``ascii_masks`` returns, in order
MASKS = ("upper", "lower", "digit", "space", "crlf", "slash", "apostrophe", "blank", "non_ascii", "lead")
(MASK_UPPER, MASK_LOWER, MASK_DIGIT, MASK_SPACE, MASK_CRLF, MASK_SLASH, MASK_APOS, MASK_BLANK,
 MASK_NON_ASCII, MASK_LEAD) = range(10)


def _cttz_py(x):
    x = int(x) & _U64
    return 64 if x == 0 else (x & -x).bit_length() - 1


def _ctlz_py(x):
    x = int(x) & _U64
    return 64 - x.bit_length()


def _load_u64_py(data, i):
    import numpy as np

    return np.uint64(int.from_bytes(bytes(data[int(i):int(i) + 8]), "little"))


def _load_u16_py(data, i):
    import numpy as np

    return np.uint64(int.from_bytes(bytes(data[int(i):int(i) + 2]), "little"))


def _byte_classes(b):
    return (65 <= b <= 90, 97 <= b <= 122, 48 <= b <= 57, 9 <= b <= 13 or b == 32, b in (10, 13), b == 47,
            b == 39, b == 32, b >= 128, b >= 192)


def _ascii_masks_py(data, i):
    import numpy as np

    masks = [0] * len(MASKS)
    for j in range(64):
        for k, hit in enumerate(_byte_classes(int(data[int(i) + j]))):
            if hit:
                masks[k] |= 1 << j
    return tuple(np.uint64(m) for m in masks)


def _prefetch_py(array, i):
    return None


def _zero_count(llvm_name: str):
    """The definition of an intrinsic counting a uint64's trailing or leading zero bits (64 for 0)."""

    def definition(typingctx, x):
        from llvmlite import ir
        from numba.core import types

        def codegen(context, builder, signature, args):
            value = context.cast(builder, args[0], signature.args[0], types.uint64)
            i64 = ir.IntType(64)
            fn = builder.module.declare_intrinsic(llvm_name, [i64], ir.FunctionType(i64, [i64, ir.IntType(1)]))
            return builder.call(fn, [value, ir.Constant(ir.IntType(1), 0)])  # 0: defined for 0 (gives 64)

        return types.int64(x), codegen

    return definition


cttz = intrinsic(_cttz_py)(_zero_count("llvm.cttz"))
ctlz = intrinsic(_ctlz_py)(_zero_count("llvm.ctlz"))


def _element_pointer(context, builder, array_type, array, index, index_type):
    from numba.core import types

    arr = context.make_array(array_type)(context, builder, array)
    offset = context.cast(builder, index, index_type, types.intp)
    return builder.gep(arr.data, [offset])


@intrinsic(_load_u64_py)
def load_u64(typingctx, data, i):
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1], signature.args[1])
        word = builder.load(builder.bitcast(pointer, ir.IntType(64).as_pointer()), align=1)
        return word  # x86 and the other little-endian targets numba supports

    return types.uint64(data, i), codegen


@intrinsic(_load_u16_py)
def load_u16(typingctx, data, i):
    """The two bytes ``data[i:i+2]`` as one little-endian number (one load instead of two and a shift)."""
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1], signature.args[1])
        half = builder.load(builder.bitcast(pointer, ir.IntType(16).as_pointer()), align=1)
        return builder.zext(half, ir.IntType(64))

    return types.uint64(data, i), codegen


@intrinsic(_ascii_masks_py)
def ascii_masks(typingctx, data, i):
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1], signature.args[1])
        i8, i64 = ir.IntType(8), ir.IntType(64)
        vector = ir.VectorType(i8, 64)
        v = builder.load(builder.bitcast(pointer, vector.as_pointer()), align=1)

        def splat(value):
            return ir.Constant(vector, [value] * 64)

        def in_range(low, count):  # low <= v < low + count, unsigned
            return builder.icmp_unsigned("<", builder.sub(v, splat(low)), splat(count))

        def equal(value):
            return builder.icmp_unsigned("==", v, splat(value))

        tests = (in_range(65, 26), in_range(97, 26), in_range(48, 10),
                 builder.or_(in_range(9, 5), equal(32)), builder.or_(equal(10), equal(13)), equal(47), equal(39), equal(32),
                 builder.icmp_signed("<", v, splat(0)), builder.icmp_unsigned(">=", v, splat(192)))
        words = [builder.bitcast(test, i64) for test in tests]
        return context.make_tuple(builder, signature.return_type, words)

    return types.UniTuple(types.uint64, len(MASKS))(data, i), codegen


@intrinsic(_prefetch_py)
def prefetch(typingctx, array, i):
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1], signature.args[1])
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = builder.module.declare_intrinsic("llvm.prefetch", fnty=ir.FunctionType(
            ir.VoidType(), [i8p, i32, i32, i32]))
        builder.call(fn, [builder.bitcast(pointer, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.none(array, i), codegen


def _address_pointer_py(address, dtype):
    raise NotImplementedError("address_pointer exists in compiled code only (the ahead-of-time exports)")


@intrinsic(_address_pointer_py)
def address_pointer(typingctx, address, dtype):
    """A typed pointer to the memory at the integer ``address`` (``dtype``: a numpy scalar type such
    as ``np.int32``, a compile-time constant); ``numba.carray`` makes an array of it. For the
    ahead-of-time exports, which receive a plan's arrays as addresses in one int64 array: the
    caller keeps those arrays alive and checked (:mod:`bpebench.algorithms.pipeline.aot`)."""
    from numba.core import types

    target = getattr(dtype, "instance_type", None) or getattr(dtype, "dtype", None)
    if not isinstance(address, types.Integer) or target is None:
        return None

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

    return types.CPointer(target)(address, dtype), codegen


def _bit_planes_py(codes, i):
    import numpy as np

    planes = [0] * 8
    for j in range(64):
        code = int(codes[int(i) + j])
        for k in range(8):
            if code >> k & 1:
                planes[k] |= 1 << j
    return tuple(np.uint64(p) for p in planes)


@intrinsic(_bit_planes_py)
def bit_planes(typingctx, codes, i):
    """The eight bit planes of the 64 bytes ``codes[i:i+64]`` (``i + 64 <= len(codes)``): plane ``k`` has
    bit ``j`` set when bit ``k`` of byte ``i + j`` is (AVX-512: one ``vptestmb`` a plane)."""
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1], signature.args[1])
        i8, i64 = ir.IntType(8), ir.IntType(64)
        vector = ir.VectorType(i8, 64)
        v = builder.load(builder.bitcast(pointer, vector.as_pointer()), align=1)
        zero = ir.Constant(vector, [0] * 64)
        planes = [builder.bitcast(builder.icmp_unsigned("!=", builder.and_(v, ir.Constant(vector, [1 << k] * 64)), zero),
                                  i64) for k in range(8)]
        return context.make_tuple(builder, signature.return_type, planes)

    return types.UniTuple(types.uint64, 8)(codes, i), codegen
