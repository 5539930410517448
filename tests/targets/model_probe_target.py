"""model_probe_target: a target of the Python client library's model tests (test_client_models.py).
It speaks any model: it logs every call it gets to standard output, one line each:

    method OP NAMES... KEY=VALUE...     a method named as the operation (pool_create, alloc)
    handle OP POSITIONAL... KEY=VALUE...  a handler registered with handle() (PROBE_HANDLE)
    run OP NAMES... KEY=VALUE... at=AT thread=T   Target.run(), for every other operation
    release KIND NAME                     a release handler (PROBE_RELEASE)

POSITIONAL shows a KIND* slot's list as [a,b]. What else it does, by environment:

    PROBE_HANDLE=op,op        register handlers for these operations
    PROBE_RELEASE=kind,kind   register release handlers for these kinds
    PROBE_UNSUPPORTED=op,op   run() raises Unsupported for these
    PROBE_FAIL=op:SECONDS,..  these raise gpufuzz.Error after sleeping SECONDS
    PROBE_SLOW=op:SECONDS,..  these sleep SECONDS first
    PROBE_PLAIN=1             a target with one method (pool_create) and nothing else: every
                              other operation is the library's own `unsupported`
    PROBE_MODEL_FILES=DIR     setup writes DIR/paths (the values of GPUFUZZ_MODEL and
                              GPUFUZZ_MODEL_FACTS, a line each) and copies the two files to
                              DIR/model and DIR/facts

`block` waits (10 s at most, then fails) until `unblock` runs: only threads let it pass."""

import os
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../clients/python"))
import gpufuzz_target as gpufuzz  # noqa: E402


def setting(name):
    """{op: seconds} (or {op: None}) of a PROBE_ variable."""
    out = {}
    for item in filter(None, os.environ.get(name, "").split(",")):
        op, _, seconds = item.partition(":")
        out[op] = float(seconds) if seconds else None
    return out


def shown(value):
    return "[" + ",".join(value) + "]" if isinstance(value, list) else str(value)


_LOG = threading.Lock()


def log(*words):
    # One write of the whole line under a lock: print() writes the words and the newline apart,
    # and the lines of two threads interleaved ("at=2 thread=0run\n block ...").
    with _LOG:
        sys.stdout.write(" ".join(map(str, words)) + "\n")
        sys.stdout.flush()


class Probe(gpufuzz.Target):
    name = "model-probe"
    version = "1.0"

    def setup(self, sequence):
        self.unblocked = threading.Event()
        self.fail, self.slow = setting("PROBE_FAIL"), setting("PROBE_SLOW")
        self.unsupported = setting("PROBE_UNSUPPORTED")
        for op in setting("PROBE_HANDLE"):
            self.handle(op, self.handler(op))
        for kind in setting("PROBE_RELEASE"):
            self.handle_release(kind, lambda name, kind=kind: log("release", kind, name))
        log("setup", sequence.model.name, f"threads={sequence.threads}")
        folder = os.environ.get("PROBE_MODEL_FILES")
        if folder:
            with open(os.path.join(folder, "paths"), "w") as f:
                f.write(os.environ.get(gpufuzz.MODEL_VARIABLE, "") + "\n" +
                        os.environ.get(gpufuzz.MODEL_FACTS_VARIABLE, "") + "\n")
            shutil.copy(os.environ[gpufuzz.MODEL_VARIABLE], os.path.join(folder, "model"))
            shutil.copy(os.environ[gpufuzz.MODEL_FACTS_VARIABLE], os.path.join(folder, "facts"))

    def behave(self, op):
        if op in self.slow:
            time.sleep(self.slow[op])
        if op == "block" and not self.unblocked.wait(10):
            raise gpufuzz.Error("block: unblock never ran (the threads did not overlap)")
        if op == "unblock":
            self.unblocked.set()
        if op in self.fail:
            time.sleep(self.fail[op] or 0)
            raise gpufuzz.Error(f"{op} failed as asked")

    def handler(self, op):
        def handle(*positional, **args):
            log("handle", op, *map(shown, positional), *(f"{k}={v}" for k, v in args.items()))
            self.behave(op)
        return handle

    def pool_create(self, p, flags):
        log("method", "pool_create", p, f"flags={flags}")
        self.behave("pool_create")

    def alloc(self, p, s, b, bytes):
        log("method", "alloc", p, s, b, f"bytes={bytes}")
        self.behave("alloc")

    def run(self, operation):
        if operation.op in self.unsupported:
            raise gpufuzz.Unsupported(f"the probe lacks {operation.op}")
        log("run", operation.op, *operation.names, *(f"{k}={v}" for k, v in operation.args.items()),
            f"at={operation.at}", f"thread={operation.thread}")
        self.behave(operation.op)

    def leak_check(self):
        log("leak_check")


class Plain(gpufuzz.Target):
    name = "plain-probe"

    def pool_create(self, p, flags):
        log("method", "pool_create", p, f"flags={flags}")


if __name__ == "__main__":
    gpufuzz.main(Plain() if os.environ.get("PROBE_PLAIN") else Probe())
