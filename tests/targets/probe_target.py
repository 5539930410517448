"""probe_target: a target of the Python client library's tests. It logs every call it gets to
standard output ("call OP NAMES KEY=VALUE..."), fails on demand by a draw's seed, and reports
what process it runs in on read_back. It implements no `sync` (the unsupported operation)."""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../clients/python"))
import gpufuzz_target as gpufuzz  # noqa: E402

# draw's seed -> what it does
FAILURES = {
    1: lambda: (_ for _ in ()).throw(gpufuzz.Error("clFinish: CL_OUT_OF_RESOURCES")),
    2: lambda: (_ for _ in ()).throw(gpufuzz.Invalid("VUID-vkDestroyDevice-device-00378")),
    3: lambda: (_ for _ in ()).throw(gpufuzz.Mismatch("pixel (1, 2) is 0x0, expected 0x1")),
    4: lambda: (_ for _ in ()).throw(ValueError("a plain bug\nover two lines")),
    5: lambda: (_ for _ in ()).throw(gpufuzz.Leak("12 bytes")),
    6: lambda: time.sleep(3600),
    7: lambda: os.kill(os.getpid(), signal.SIGKILL),
    8: lambda: os._exit(5),
}


def status_field(name):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split()[1]
    return ""


class Probe(gpufuzz.Target):
    name = "probe-target"
    version = "1.2.3"

    def startup(self):
        self.started_in = os.getpid()

    def setup(self, sequence):
        self.policy = sequence.policy
        self.log("setup", sequence.policy)

    def log(self, *words):
        print("call", *words, flush=True)

    def create(self, r, width, height):
        self.log("create", r, f"width={width}", f"height={height}")

    def draw(self, r, triangles, seed):
        self.log("draw", r, f"triangles={triangles}", f"seed={seed}")
        if seed in FAILURES:
            FAILURES[seed]()

    def set_textures(self, r, count, size, seed):
        self.log("set_textures", r, f"count={count}", f"size={size}", f"seed={seed}")

    def read_back(self, r):
        self.log("read_back", r)
        facts = {
            "pid": os.getpid(), "pgid": os.getpgid(0), "ppid": os.getppid(),
            "started_in": self.started_in,
            "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
            "sigblk": status_field("SigBlk"), "sigign": status_field("SigIgn"),
            "env": {k: v for k, v in os.environ.items() if k.startswith(("GPUFUZZ", "PROBE"))},
            "stdin": os.readlink("/proc/self/fd/0"),
        }
        print("facts " + json.dumps(facts), flush=True)

    def destroy(self, r):
        self.log("destroy", r)
        if self.policy == "fail-destroy":
            raise gpufuzz.Error(f"destroy {r} failed")

    def ctx_create(self, c):
        self.log("ctx_create", c)

    def buf_create(self, c, b, bytes):
        self.log("buf_create", c, b, f"bytes={bytes}")

    def buf_destroy(self, b):
        self.log("buf_destroy", b)

    def ctx_destroy(self, c):
        self.log("ctx_destroy", c)

    def leak_check(self):
        self.log("leak_check")
        return "after everything was released 64 bytes are held" if self.policy == "leaky" else None


if __name__ == "__main__":
    gpufuzz.main(Probe())
