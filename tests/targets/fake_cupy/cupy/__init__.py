"""A stand-in for the few CuPy calls examples/targets/cupy uses, on numpy, so that the target's
Python runs here (no GPU): streams run their work at once, the memory pools count the bytes of
the live arrays and blocks, and the RawKernel runs the numpy reference raster. It checks the
target's own code (calls, arguments, bookkeeping, leak check), not CuPy."""

import os
import sys
import weakref

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../../../../examples/targets/common"))
from raster import reference_raster  # noqa: E402

__version__ = "fake"
uint32 = np.uint32


class ndarray:
    def __init__(self, data):
        self.data = data
        _default_pool.hold(self, data.nbytes)

    def get(self, stream=None):
        return self.data.copy()


def zeros(n, dtype):
    return ndarray(np.zeros(n, dtype=dtype))


def asarray(a):
    return ndarray(np.array(a))


class _Pool:
    def __init__(self):
        self.used = 0

    def hold(self, owner, nbytes):
        self.used += nbytes
        weakref.finalize(owner, self._give_back, nbytes)

    def _give_back(self, nbytes):
        self.used -= nbytes

    def used_bytes(self):
        return self.used


_default_pool = _Pool()


def get_default_memory_pool():
    return _default_pool


class RawKernel:
    def __init__(self, code, name):
        assert "extern \"C\" __global__ void " + name in code, "no such kernel in the source"

    def __call__(self, grid, block, args):
        fb, width, height, tris, count, tex, tsize = args
        assert grid[0] * block[0] >= width and grid[1] * block[1] >= height, "grid too small"
        image = fb.data.reshape(int(height), int(width))
        reference_raster(image, tris.data[:int(count)], tex.data if int(tsize) else None)


class _Cuda:
    class Stream:
        current = []

        def __init__(self, non_blocking=False):
            self.non_blocking = non_blocking

        def __enter__(self):
            _Cuda.Stream.current.append(self)
            return self

        def __exit__(self, *exc):
            _Cuda.Stream.current.pop()

        def synchronize(self):
            pass

        def record(self):
            return object()

        def wait_event(self, event):
            pass

    class Device:
        def __init__(self, n=0):
            self.n = n

        def use(self):
            pass

        def synchronize(self):
            pass

    class MemoryPool(_Pool):
        def malloc(self, nbytes):
            block = type("MemoryPointer", (), {})()
            self.hold(block, nbytes)
            return block

        def free_all_blocks(self):
            pass


cuda = _Cuda
