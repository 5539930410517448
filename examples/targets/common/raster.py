"""The raster the example renderers draw with, once: the kernel's body (OpenCL C and CUDA C wrap
it), the triangles and texels a draw and a set_textures make, and the numpy reference that
read_back checks the framebuffer against.

A draw's triangles (x0 y0 x1 y1 x2 y2 colour, ints) each touch the pixels they cover, in order:
pixel = (pixel * 31 + colour) ^ texel, the texel from texture 0 (0 without textures)."""

import numpy as np

# The per-pixel loop; GLOBAL is the address-space qualifier (OpenCL's __global, nothing in CUDA),
# px, py, fb, width, tris, count, tex and tsize are the wrapper's.
KERNEL_BODY = """
  uint pixel = fb[py * width + px];
  for (int i = 0; i < count; ++i) {
    GLOBAL const int* t = tris + 7 * i;
    const int x0 = t[0], y0 = t[1], x1 = t[2], y1 = t[3], x2 = t[4], y2 = t[5];
    if (px < min(x0, min(x1, x2)) || px > max(x0, max(x1, x2)) ||
        py < min(y0, min(y1, y2)) || py > max(y0, max(y1, y2))) continue;
    const int e0 = (x1 - x0) * (py - y0) - (y1 - y0) * (px - x0);
    const int e1 = (x2 - x1) * (py - y1) - (y2 - y1) * (px - x1);
    const int e2 = (x0 - x2) * (py - y2) - (y0 - y2) * (px - x2);
    if (!((e0 >= 0 && e1 >= 0 && e2 >= 0) || (e0 <= 0 && e1 <= 0 && e2 <= 0))) continue;
    const uint texel = tsize ? tex[(py % tsize) * tsize + (px % tsize)] : 0u;
    pixel = (pixel * 31u + (uint)t[6]) ^ texel;
  }
  fb[py * width + px] = pixel;
"""

OPENCL_KERNEL = """
#define GLOBAL __global
__kernel void raster(__global uint* fb, int width, __global const int* tris, int count,
                     __global const uint* tex, int tsize) {
  const int px = get_global_id(0), py = get_global_id(1);
""" + KERNEL_BODY + "}\n"

CUDA_KERNEL = """
#define GLOBAL
typedef unsigned int uint;
extern "C" __global__ void raster(uint* fb, int width, int height, const int* tris, int count,
                                  const uint* tex, int tsize) {
  const int px = blockIdx.x * blockDim.x + threadIdx.x, py = blockIdx.y * blockDim.y + threadIdx.y;
  if (px >= width || py >= height) return;
""" + KERNEL_BODY + "}\n"


def triangles(width, height, count, seed):
    """count x 7 int32: small triangles anywhere on the framebuffer, a colour each."""
    rng = np.random.default_rng(seed)
    tris = np.empty((count, 7), dtype=np.int32)
    tris[:, 0] = rng.integers(0, width, count)
    tris[:, 1] = rng.integers(0, height, count)
    tris[:, 2:6] = tris[:, [0, 1, 0, 1]] + rng.integers(-12, 13, (count, 4))
    tris[:, 6] = rng.integers(0, 2**31, count)
    return tris


def texels(count, size, seed):
    """count textures of size x size texels (uint32), set by the seed."""
    base = np.arange(size * size, dtype=np.uint32) * np.uint32(2654435761)
    return [base ^ np.uint32((seed * 97 + i * 13 + 1) & 0xFFFFFFFF) for i in range(count)]


def reference_raster(image, tris, texture):
    """What the kernel does to `image` (height x width uint32, changed in place), in numpy."""
    height, width = image.shape
    tsize = 0 if texture is None else int(round(len(texture) ** 0.5))
    for x0, y0, x1, y1, x2, y2, colour in tris.tolist():
        bx0, bx1 = max(min(x0, x1, x2), 0), min(max(x0, x1, x2), width - 1)
        by0, by1 = max(min(y0, y1, y2), 0), min(max(y0, y1, y2), height - 1)
        if bx0 > bx1 or by0 > by1:
            continue
        py, px = np.mgrid[by0:by1 + 1, bx0:bx1 + 1]
        e0 = (x1 - x0) * (py - y0) - (y1 - y0) * (px - x0)
        e1 = (x2 - x1) * (py - y1) - (y2 - y1) * (px - x1)
        e2 = (x0 - x2) * (py - y2) - (y0 - y2) * (px - x2)
        mask = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
        region = image[by0:by1 + 1, bx0:bx1 + 1]
        texel = (texture[(py % tsize) * tsize + (px % tsize)] if tsize
                 else np.zeros(py.shape, dtype=np.uint32))
        region[mask] = (region[mask] * np.uint32(31) + np.uint32(colour)) ^ texel[mask]


def compare(name, width, got, want):
    """None when the framebuffer `got` (flat uint32) is the reference `want`, else what differs."""
    want = want.reshape(-1)
    differ = np.flatnonzero(got != want)
    if not len(differ):
        return None
    first = int(differ[0])
    return (f"read_back {name}: pixel ({first % width}, {first // width}) is "
            f"0x{int(got[first]):08x}, the reference expects 0x{int(want[first]):08x} "
            f"({len(differ)} of {len(want)} pixels differ)")
