"""A small renderer over PyOpenCL, as a gpufuzz target (README.md beside it says how to fuzz it).

A renderer is a context, an in-order render queue, a transfer queue for texture uploads and a
framebuffer. A draw is a raster kernel enqueued behind the renderer's frame gate (a user event)
and not waited for: the frame's draws run when it is submitted (sync, read_back, destroy, and a
texture replacement under the shipped policy). read_back checks the framebuffer against a numpy
reference of the same raster. Texture buffers are recycled from a pool (that is what makes
replacing them while draws still need them a bug). Device ops: bare contexts and buffers.

    python3 target.py [--platform NAME] FILE      (NAME: a part of the platform's name; pocl)
"""

import os
import sys

import numpy as np

# PyOpenCL's compiler cache takes a lock file while it builds. A target killed at its deadline
# mid-build leaves that file, and every later build waits a minute on it: a hang at `create`.
# It happened within one `make test`. pocl keeps its own kernel cache, so nothing is rebuilt.
os.environ.setdefault("PYOPENCL_NO_CACHE", "1")
import pyopencl as cl  # noqa: E402  (the ICD loader only: no platform is touched before setup())

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "../../../clients/python"), os.path.join(HERE, "../common")]
import gpufuzz_target as gpufuzz  # noqa: E402
from renderers import RendererOps  # noqa: E402
from raster import OPENCL_KERNEL, compare, reference_raster, texels, triangles  # noqa: E402

READ_ONLY_COPY = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
READ_WRITE_COPY = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR


class Ledger:
    """Every device buffer the target holds, so that the leak check can name what was kept."""

    def __init__(self):
        self.held = {}

    def alloc(self, ctx, flags, size=0, hostbuf=None):
        buf = cl.Buffer(ctx, flags, size, hostbuf=hostbuf)
        self.held[id(buf)] = buf
        return buf

    def free(self, buf):
        self.held.pop(id(buf))
        buf.release()


class Renderer:
    def __init__(self, target, width, height):
        self.target, self.width, self.height = target, width, height
        self.ctx = cl.Context([target.device])
        self.queue = cl.CommandQueue(self.ctx)  # in order: the draws
        self.transfers = cl.CommandQueue(self.ctx)  # texture uploads
        self.program = cl.Program(self.ctx, OPENCL_KERNEL).build()
        self.kernel = cl.Kernel(self.program, "raster")
        ledger = target.ledger
        self.fb = ledger.alloc(self.ctx, READ_WRITE_COPY,
                               hostbuf=np.zeros(width * height, dtype=np.uint32))
        self.no_texture = ledger.alloc(self.ctx, READ_ONLY_COPY, hostbuf=np.zeros(1, np.uint32))
        self.textures, self.texture_sizes, self.pool = [], 0, []  # pool: buffers to reuse
        self.replacements = 0
        self.frame = []  # this frame's triangle buffers
        self.gate = None  # the user event the frame's draws wait for
        self.image = np.zeros((height, width), dtype=np.uint32)  # the model's image
        self.model_textures = []

    def draw(self, count, seed):
        tris = triangles(self.width, self.height, count, seed)
        buf = self.target.ledger.alloc(self.ctx, READ_ONLY_COPY, hostbuf=tris)
        self.frame.append(buf)
        if self.gate is None:
            self.gate = cl.UserEvent(self.ctx)
        tex, tsize = ((self.textures[0], self.texture_sizes) if self.textures
                      else (self.no_texture, 0))
        self.kernel.set_args(self.fb, np.int32(self.width), buf, np.int32(count), tex,
                             np.int32(tsize))
        cl.enqueue_nd_range_kernel(self.queue, self.kernel, (self.width, self.height), None,
                                   wait_for=[self.gate])
        reference_raster(self.image, tris,
                         self.model_textures[0] if self.model_textures else None)

    def submit(self):
        """Opens the frame gate: the queued draws may run."""
        if self.gate is not None:
            self.gate.set_status(cl.command_execution_status.COMPLETE)
            self.gate = None
        self.queue.flush()

    def wait(self):
        self.submit()
        self.queue.finish()
        for buf in self.frame:
            self.target.ledger.free(buf)
        self.frame = []

    def set_textures(self, count, size, seed, wait):
        if wait:
            self.wait()  # the draws that sample the old textures are done
        self.pool += self.textures
        self.textures = []
        # Each replacement's texels differ (stamped with how many came before), as a renderer's
        # streamed textures would, even when the seed repeats.
        self.replacements += 1
        stamped = seed + 7919 * self.replacements
        for data in texels(count, size, stamped):
            # Buffers come in power-of-two sizes from 4 KiB; a pooled one that holds the texels is
            # reused (the smallest), else one is made.
            reusable = sorted((b for b in self.pool if b.size >= data.nbytes), key=lambda b: b.size)
            if reusable:
                buf = reusable[0]
                self.pool.remove(buf)
            else:
                bucket = max(4096, 1 << (data.nbytes - 1).bit_length())
                buf = self.target.ledger.alloc(self.ctx, cl.mem_flags.READ_ONLY, bucket)
            cl.enqueue_copy(self.transfers, buf, data, is_blocking=True)
            self.textures.append(buf)
        self.texture_sizes = size
        self.model_textures = texels(count, size, stamped)

    def read_back(self, name):
        self.wait()
        got = np.empty(self.width * self.height, dtype=np.uint32)
        cl.enqueue_copy(self.queue, got, self.fb, is_blocking=True)
        mismatch = compare(name, self.width, got, self.image)
        if mismatch:
            raise gpufuzz.Mismatch(mismatch)

    def release(self, policy):
        """The teardown, under the sequence's policy (README.md: what each one does)."""
        ledger = self.target.ledger
        buffers = (self.pool + self.textures + self.frame +
                   [self.no_texture, self.fb])
        if policy == "no-destroy-sync":
            self.submit()  # the frame runs, but nothing waits for it
        else:
            try:
                self.wait()
            except Exception:
                # A failed wait still releases everything (docs/failures.md): OpenCL keeps a
                # released buffer until the commands that use it are done.
                for buf in buffers + self.frame:
                    if id(buf) in ledger.held:
                        ledger.free(buf)
                self.pool, self.textures, self.frame = [], [], []
                raise
            buffers = [b for b in buffers if id(b) in ledger.held]
        if policy == "context-first":
            del self.kernel, self.program, self.queue, self.transfers
            self.ctx = None  # OpenCL counts references: the buffers keep the context alive
        for buf in buffers:
            ledger.free(buf)
        self.pool, self.textures, self.frame = [], [], []


class PyOpenClRenderer(RendererOps, gpufuzz.Target):
    name = "pyopencl-renderer"
    version = "1.0"

    def configure(self, args):
        self.platform = "Portable Computing Language"
        while args:
            if args[0] == "--platform" and len(args) > 1:
                self.platform, args = args[1], args[2:]
            else:
                raise SystemExit(f"{self.name}: unknown arguments: {' '.join(args)}")

    def setup(self, sequence):
        platforms = [p for p in cl.get_platforms() if self.platform.lower() in p.name.lower()]
        if not platforms:
            names = ", ".join(p.name for p in cl.get_platforms())
            raise gpufuzz.Error(f"no OpenCL platform named '{self.platform}' (there are: {names})")
        self.device = platforms[0].get_devices()[0]
        self.policy = sequence.policy
        self.ledger = Ledger()
        self.renderers, self.contexts, self.buffers = {}, {}, {}

    def make_renderer(self, width, height):  # the renderer vocabulary: RendererOps
        return Renderer(self, width, height)

    # Device vocabulary: a context with its queue; buffers in it.
    def ctx_create(self, c):
        ctx = cl.Context([self.device])
        self.contexts[c] = (ctx, cl.CommandQueue(ctx))

    def buf_create(self, c, b, bytes):
        self.buffers[b] = self.ledger.alloc(self.contexts[c][0], cl.mem_flags.READ_WRITE, bytes)

    def buf_destroy(self, b):
        self.ledger.free(self.buffers.pop(b))

    def ctx_destroy(self, c):
        ctx, queue = self.contexts.pop(c)
        queue.finish()
        del ctx, queue  # clReleaseContext: buffers still alive keep it (OpenCL is counted)

    def leak_check(self):
        held = self.ledger.held.values()
        if held:
            return (f"after everything was released the target still holds {len(held)} buffers "
                    f"({sum(b.size for b in held)} bytes)")
        return None


if __name__ == "__main__":
    gpufuzz.main(PyOpenClRenderer())
