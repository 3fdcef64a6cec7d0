"""Single-threaded BLAS for the products on the recall path.

The active tier is searched with one matrix-vector product right after the query is
embedded. numpy hands that product to BLAS, and OpenBLAS splits it over all cores; on a
small machine, waking those threads while ONNX's embedding threads still spin cost
3-8 ms per recall (median to p95 at 16k rows, 2 cores), and the spinning BLAS threads
then slowed the next embedding too.
One thread is memory-bound and fast: 0.9 ms for 16k x 384 float32 rows right after an
embedding, against 1.6 ms for ``np.einsum``'s own loop (2-core machine, OpenBLAS 0.3.31).

OpenBLAS (0.3.27+) has a thread-local thread count, ``openblas_set_num_threads_local``:
:func:`matvec` sets it to 1 on the calling thread for the one product and puts it back,
so nothing else in the process (the user's own numpy work, other threads) is affected.
The function is found in the OpenBLAS that numpy loaded (the ``numpy.libs`` folder of
the wheels, or any OpenBLAS mapped into the process on Linux). Without it (MKL,
Accelerate, an older OpenBLAS) :func:`matvec` uses ``np.einsum``, which never threads.

numpy 2.5's wheels (Python 3.12 and later) ship an OpenBLAS without it, so there the
product is ``np.einsum``'s: 1.6-1.9 ms right after an embedding at 16k x 384 rows,
against 1.2-1.5 ms on one BLAS thread and 3.1-3.4 ms on two (2 cores). Setting the
process-wide count around the product instead is not safe: OpenBLAS frees the
buffers of the threads above a new count, which another thread's BLAS call may be
using at that moment.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import sys
import threading
from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

_Setter = Callable[[int], int]


def _candidates() -> list[str]:
    """Paths of OpenBLAS libraries numpy may have loaded."""
    root = os.path.dirname(np.__file__)
    paths: list[str] = []
    for pattern in ("*openblas*.so*", "*openblas*.dll", "*openblas*.dylib"):
        paths += glob.glob(os.path.join(root + ".libs", pattern))  # Linux/Windows wheels
        paths += glob.glob(os.path.join(root, ".dylibs", pattern))  # macOS wheels
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
                for line in maps:
                    path = line.split(maxsplit=5)[-1].strip()
                    if "openblas" in os.path.basename(path).lower() and path not in paths:
                        paths.append(path)
        except OSError:
            pass
    return paths


def _find() -> tuple[_Setter, Callable[[], int]] | None:
    for path in _candidates():
        try:
            # PyDLL: the calls keep the GIL. They take microseconds; a ctypes call that
            # released it could hand it to another thread (the background writer, a
            # Chroma query elsewhere) and wait for it to come back before the product.
            lib = ctypes.PyDLL(path)
        except OSError:
            continue
        setter = getattr(lib, "openblas_set_num_threads_local", None)
        getter = None
        for name in (
            "openblas_get_num_threads",
            "scipy_openblas_get_num_threads64_",
            "openblas_get_num_threads64_",
        ):
            getter = getattr(lib, name, None)
            if getter is not None:
                break
        if setter is None or getter is None:
            continue
        setter.restype, setter.argtypes = ctypes.c_int, [ctypes.c_int]
        getter.restype, getter.argtypes = ctypes.c_int, []
        return setter, getter
    return None


_FOUND = _find()

#: Whether :func:`matvec` runs on single-threaded BLAS (else on ``np.einsum``).
SINGLE_THREADED_BLAS = _FOUND is not None


def matvec(
    query: npt.NDArray[np.float32], mat_t: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """``query @ mat_t`` on the calling thread alone.

    ``query`` is one vector ``(dim,)`` or a stack of them ``(m, dim)``; ``mat_t`` holds
    one vector per *column* (shape ``(dim, n)``): the transpose of a block of rows (the
    indexes' layout, 7-10 % slower than the same vectors stored by column right after an
    embedding, and a row is one read when a few are gathered), or a matrix of its own
    (the two-stage search's head block, :mod:`oblivion_core.index`). Returns ``(n,)`` or
    ``(m, n)``.
    """
    q = query.astype(np.float32, copy=False)
    if _FOUND is None:
        spec = "ji,j->i" if q.ndim == 1 else "ji,mj->mi"
        out: npt.NDArray[np.float32] = np.einsum(spec, mat_t, q)
        return out
    with one_thread():
        return q @ mat_t


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """BLAS and LAPACK calls of the calling thread run on it alone inside (nothing
    changes without the thread-local setter). For the other work on the recall path:
    the two-stage search's basis (a 384 x 384 ``eigh`` and products over up to 8,192
    rows), rebuilt by a recall when the active tier doubles. Right after an embedding on
    2 cores: the same at the median when they are idle (70 against 76 ms at 12k rows,
    141 against 132 ms at 40k) but 149 and 340 ms on the default threads' first call;
    0.14-0.36 s on one thread against 0.26-1.5 s on the default ones while other work
    kept the cores busy (a review's runs)."""
    depth = getattr(_DEPTH, "n", 0)
    if _FOUND is None or depth:  # (nested: the outermost block sets and puts back)
        _DEPTH.n = depth + 1
        try:
            yield
        finally:
            _DEPTH.n = depth
        return
    setter, getter = _FOUND
    previous = setter(1)
    _DEPTH.n = 1
    try:
        yield
    finally:
        _DEPTH.n = 0
        # the call returns the thread's count before: the global one unless this thread
        # had its own, which is then put back
        setter(0 if previous == getter() else previous)


#: How deep the calling thread is in :func:`one_thread` blocks.
_DEPTH = threading.local()
