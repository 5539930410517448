"""The renderer vocabulary of an example target, once: each operation goes to the renderer object
its name stands for. A target that mixes it in sets `self.renderers = {}` and `self.policy` in
setup() and makes its renderers in make_renderer(width, height); a renderer has draw(triangles,
seed), wait(), set_textures(count, size, seed, wait), read_back(name) and release(policy)."""


class RendererOps:
    def create(self, r, width, height):
        self.renderers[r] = self.make_renderer(width, height)

    def draw(self, r, triangles, seed):
        self.renderers[r].draw(triangles, seed)

    def sync(self, r):
        self.renderers[r].wait()

    def set_textures(self, r, count, size, seed):
        # no-texture-wait: replaced textures go without waiting for the draws that sample them.
        self.renderers[r].set_textures(count, size, seed, wait=self.policy != "no-texture-wait")

    def read_back(self, r):
        self.renderers[r].read_back(r)

    def destroy(self, r):
        self.renderers.pop(r).release(self.policy)
