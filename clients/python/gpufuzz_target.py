"""gpufuzz_target: a gpufuzz target in Python (the contract: target.md; the API: README.md).

A target is a subclass of Target with one method per operation it implements, named as the
operation, taking the operation's names and its keys (ints, defaults filled in); `main` does the
rest: reads the sequence file, writes the events, turns the target's failures into outcomes,
releases what is left at the end, and serves as a fork server when the harness asks for one.

    import gpufuzz_target as gpufuzz

    class Mine(gpufuzz.Target):
        name, version = "mine", "1.0"
        def setup(self, sequence): self.device = open_device()    # in the run, never before
        def create(self, r, width, height): ...
        def destroy(self, r): ...

    if __name__ == "__main__":
        gpufuzz.main(Mine())

Standard library only (Python 3.11).
"""

import ctypes
import errno
import fcntl
import gc
import os
import re
import select
import signal
import socket
import sys

__all__ = ["Target", "Failure", "Error", "Invalid", "Mismatch", "Leak", "Sequence", "Operation",
           "SequenceError", "main", "run_sequence", "serve_forks"]

FORK_SERVER_VERSION = 1
EVENTS_FD_VARIABLE = "GPUFUZZ_EVENTS_FD"
FORK_SERVER_FD_VARIABLE = "GPUFUZZ_FORK_SERVER_FD"
MAX_MESSAGE = 64 * 1024
MAX_FDS = 2

# ---------------------------------------------------------------------------------------------
# Failures a target raises; each becomes `outcome CLASS AT OP DETAIL`. Any other exception is an
# `error` at that operation, with the exception's type and text as the detail.


class Failure(Exception):
    """A failure the target saw itself; `outcome` names its class."""

    outcome = "error"


class Error(Failure):
    """A device call failed (name the call and the runtime's error in the message)."""

    outcome = "error"


class Invalid(Failure):
    """The runtime's own checker said a call broke the API's rules (name the rule)."""

    outcome = "invalid"


class Mismatch(Failure):
    """A read-back differed from what it should be (say where and how)."""

    outcome = "mismatch"


class Leak(Failure):
    """Device memory was not returned once everything was released (say how much)."""

    outcome = "leak"


# ---------------------------------------------------------------------------------------------
# Sequence files: the normalized form of sequences.md the harness writes.


class SequenceError(Exception):
    """A sequence file that is not one; the message starts with FILE:LINE:COLUMN."""


class Operation:
    """One operation: `op` (create, draw, ...), `names` (positional), `args` (every key, ints)."""

    __slots__ = ("op", "names", "args", "line")

    def __init__(self, op, names, args, line):
        self.op, self.names, self.args, self.line = op, names, args, line

    def __repr__(self):
        keys = "".join(f" {k}={v}" for k, v in self.args.items())
        return f"{self.op} {' '.join(self.names)}{keys}"


class Sequence:
    """A parsed file: `directives` ({"policy": "shipped", ...}) and `operations`."""

    def __init__(self, path, directives, operations):
        self.path, self.directives, self.operations = path, directives, operations

    @property
    def policy(self):
        return self.directives.get("policy", "shipped")


# op: (kinds of its names, what it does to them, its keys with their defaults and bounds).
# Kinds: r renderer, c context, b buffer. Effects: "new" introduces the last name, "end" ends the
# first, "" leaves them as they are.
_BOUND32 = 2**32 - 1
_OPS = {
    "create": ("r", "new", {"width": (64, 1, 4096), "height": (64, 1, 4096)}),
    "draw": ("r", "", {"triangles": (4, 1, 1024), "seed": (0, 0, _BOUND32)}),
    "sync": ("r", "", {}),
    "set_textures": ("r", "", {"count": (1, 0, 16), "size": (32, 1, 2048),
                               "seed": (0, 0, _BOUND32)}),
    "read_back": ("r", "", {}),
    "destroy": ("r", "end", {}),
    "ctx_create": ("c", "new", {}),
    "buf_create": ("cb", "new", {"bytes": (256, 1, 2**31)}),
    "buf_destroy": ("b", "end", {}),
    "ctx_destroy": ("c", "end", {}),
}
RENDERER_OPS = ("create", "draw", "sync", "set_textures", "read_back", "destroy")
DEVICE_OPS = ("ctx_create", "buf_create", "buf_destroy", "ctx_destroy")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")
_DIRECTIVE = re.compile(r"#\s*([a-z][a-z0-9_.]*):\s*(.*?)\s*\Z")
_INT = re.compile(r"(0|[1-9][0-9]*)\Z")


def parse_sequence(text, path="<sequence>"):
    """Parses the normalized text; raises SequenceError with the place of the first problem."""
    directives, operations, kinds = {}, [], {}
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        stripped = line.strip()

        def fail(message, token=None):
            column = line.find(token) + 1 if token else len(line) - len(line.lstrip()) + 1
            raise SequenceError(f"{path}:{number}:{max(column, 1)}: {message}")

        if not stripped:
            continue
        if stripped.startswith("#"):
            match = _DIRECTIVE.match(stripped)
            if match and not operations:
                key, value = match.groups()
                if key in directives:
                    fail(f"directive '{key}' given twice", key)
                directives[key] = value
            continue
        words = stripped.split("#", 1)[0].split()
        op, *rest = words
        if op not in _OPS:
            fail(f"unknown operation '{op}' (known: {', '.join(_OPS)})", op)
        name_kinds, effect, keys = _OPS[op]
        names, args = rest[:len(name_kinds)], {k: d for k, (d, _, _) in keys.items()}
        if len(names) < len(name_kinds) or any("=" in n for n in names):
            fail(f"'{op}' takes {len(name_kinds)} name(s)", op)
        for index, (name, kind) in enumerate(zip(names, name_kinds)):
            if not _NAME.match(name):
                fail(f"'{name}' is not a name ([a-z][a-z0-9_]*, at most 32 characters)", name)
            new = effect == "new" and index == len(names) - 1
            if new and name in kinds:
                fail(f"'{name}' is introduced twice", name)
            if not new and kinds.get(name) != kind:
                fail(f"'{name}' is not a live {_KIND_WORDS[kind]} here", name)
        for word in rest[len(name_kinds):]:
            key, equals, value = word.partition("=")
            if not equals or key not in keys:
                known = ", ".join(keys) or "none"
                fail(f"unknown argument '{word}' for '{op}' (keys: {known})", word)
            _, low, high = keys[key]
            if not _INT.match(value) or not low <= int(value) <= high:
                fail(f"{key}={value}: expected an integer in {low}..{high}", word)
            args[key] = int(value)
        if effect == "new":
            kinds[names[-1]] = name_kinds[-1]
        elif effect == "end":
            kinds[names[0]] = None
        operations.append(Operation(op, names, args, number))
    return Sequence(path, directives, operations)


_KIND_WORDS = {"r": "renderer", "c": "context", "b": "buffer"}


def load_sequence(path):
    try:
        with open(path, "rb") as f:
            text = f.read().decode("ascii")  # the built-in codec: nothing to import in a fork
    except (OSError, UnicodeDecodeError) as e:
        raise SequenceError(f"{path}: cannot read the sequence file: {e}") from None
    return parse_sequence(text, path)


# ---------------------------------------------------------------------------------------------
# The target's side: subclass Target.


class Target:
    """Subclass it; implement the operations you support as methods of the same name.

    Renderer vocabulary:  create(r, width, height)  draw(r, triangles, seed)  sync(r)
                          set_textures(r, count, size, seed)  read_back(r)  destroy(r)
    Device vocabulary:    ctx_create(c)  buf_create(c, b, bytes)  buf_destroy(b)  ctx_destroy(c)

    An operation that is missing is reported as `unsupported operation`. Leftovers are released
    through destroy, buf_destroy and ctx_destroy.
    """

    name = "python-target"
    version = "0"
    fork_server = False  # set before startup(): whether this process serves forks

    def configure(self, args):
        """The words after CMD before the sequence file (CMD ARGS... FILE); once per process."""
        if args:
            raise SystemExit(f"{self.name}: unknown arguments {' '.join(args)}")

    def startup(self):
        """Once per process, before any fork: imports, kernel sources. Never touch the device.
        `self.fork_server` says whether runs will be forked from this process."""

    def setup(self, sequence):
        """Once per run, before the first operation: open the device here. `sequence.policy`."""

    def leak_check(self):
        """After everything was released: a description of what is still held, or None."""
        return None


class _Events:
    """One event a line, one write(2) each, unbuffered. A gone reader stops nothing."""

    def __init__(self, fd):
        self.fd = fd

    def write(self, *words):
        if self.fd is None:
            return
        data = (" ".join(str(w) for w in words).replace("\n", " ").replace("\r", " ") +
                "\n").encode("ascii", "replace")
        try:
            while data:
                data = data[os.write(self.fd, data):]
        except OSError:
            self.fd = None  # the supervisor is gone; the run itself goes on


def _events_from_environment():
    value = os.environ.get(EVENTS_FD_VARIABLE)
    if value is None:
        return _Events(sys.stdout.fileno())  # run by hand: the events, readable
    return _Events(int(value))


def _describe(exc):
    if isinstance(exc, Failure):
        return str(exc) or type(exc).__name__
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _call(target, op, names, args):
    """Calls the target's method for `op`; None when it has none."""
    method = getattr(target, op, None)
    if method is None or not callable(method):
        return False
    method(*names, **args)
    return True


def run_sequence(target, sequence, events=None):
    """Runs one parsed sequence; returns the exit status (0 pass, 1 otherwise)."""
    events = events or _events_from_environment()
    ops = sequence.operations
    events.write("start", len(ops))

    def outcome(cls, at, op, detail):
        if cls != "pass":
            sys.stdout.flush()
            print(f"{target.name}: {cls} at {at} ({op}): {detail}", file=sys.stderr, flush=True)
        events.write("outcome", cls, at, op, detail)
        return 0 if cls == "pass" else 1

    def failed(exc, at, op, prefix=""):
        if not isinstance(exc, Failure):
            import traceback  # noqa: PLC0415 - on failure only: a fork imports nothing it need not

            traceback.print_exc()
        return outcome(exc.outcome if isinstance(exc, Failure) else "error", at, op,
                       prefix + _describe(exc))

    try:
        target.setup(sequence)
    except Exception as e:  # noqa: BLE001 - every failure is an outcome
        return failed(e, "-", "-", "setup: ")
    live = {"r": [], "b": [], "c": []}  # in creation order
    for at, o in enumerate(ops, 1):
        events.write("begin", at, o.op)
        kinds, effect, _ = _OPS[o.op]
        if effect == "end":  # gone before the call, so that a release that fails is not retried
            live[kinds[0]].remove(o.names[0])
        try:
            if not _call(target, o.op, o.names, o.args):
                return outcome("error", at, o.op, "unsupported operation")
        except Exception as e:  # noqa: BLE001
            return failed(e, at, o.op)
        if effect == "new":
            live[kinds[-1]].append(o.names[-1])
        events.write("done", at)
    # Leftovers, in the order of sequences.md: renderers, bare buffers, bare contexts.
    events.write("begin", "end", "end")
    for kind, op in (("r", "destroy"), ("b", "buf_destroy"), ("c", "ctx_destroy")):
        while live[kind]:
            name = live[kind].pop(0)
            try:
                if not _call(target, op, [name], {}):
                    return outcome("error", "end", "end", f"{op} {name}: unsupported operation")
            except Exception as e:  # noqa: BLE001
                return failed(e, "end", "end", f"{op} {name}: ")
    events.write("done", "end")
    try:
        leak = target.leak_check()
    except Exception as e:  # noqa: BLE001
        if isinstance(e, Leak):
            return outcome("leak", "-", "-", _describe(e))
        return failed(e, "-", "-", "leak_check: ")
    if leak:
        return outcome("leak", "-", "-", str(leak))
    return outcome("pass", "-", "-", "")


def _run_file(target, path):
    try:
        sequence = load_sequence(path)
    except SequenceError as e:
        print(f"{target.name}: {e}", file=sys.stderr)
        return 2
    return run_sequence(target, sequence)


def _finish(status):
    """Ends the process without Python's teardown (no finalizer touches a broken device)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


# ---------------------------------------------------------------------------------------------
# Fork server, version 1 (the harness's side: harness/supervise/ForkServer.h).
#
#   server -> harness   "hello 1"                once start-up is done, the device untouched
#   harness -> server   "run" NUL COUNT NUL (NAME=VALUE NUL)*COUNT (ARG NUL)*
#                        + SCM_RIGHTS [output, events]          (events may be missing)
#   server -> harness   "pid P"  or  "error MESSAGE" (nothing started; back to waiting)
#   server -> harness   "exit S"                 the child exited, still unreaped (waitpid status)
#   harness -> server   "reap"                   the server reaps it, then waits for the next run
# End of file at any point (or, while a child runs, any message but a `reap` after `exit`): the
# server SIGKILLs the child's process group, reaps it and exits 0. A request that does not parse
# gets "error malformed fork server request".

_PR_SET_PDEATHSIG = 1
_PR_SET_PTRACER = 0x59616D61
_MALFORMED = b"error malformed fork server request"


_libc = None


def _prctl(option, value):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    return _libc.prctl(option, value, 0, 0, 0)


# As the harness starts a target: SIGTERM and SIGINT ignored; as Python starts itself: SIGPIPE
# and SIGXFSZ ignored (so that a closed events pipe reads the same forked or fresh). Every other
# signal at its default.
_IGNORED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ)


def _reset_signals():
    """Sets the dispositions a fresh start has; only those that differ."""
    for sig in signal.valid_signals():
        want = signal.SIG_IGN if sig in _IGNORED_SIGNALS else signal.SIG_DFL
        try:
            if signal.getsignal(sig) != want:
                signal.signal(sig, want)
        except (OSError, ValueError, RuntimeError):
            pass  # SIGKILL, SIGSTOP, the C library's own


def _parse_request(message, fds, flags):
    """(environment entries, args) of a `run` request, or None when it does not parse."""
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC) or not 1 <= len(fds) <= MAX_FDS:
        return None
    if not message.endswith(b"\0"):
        return None
    fields = message[:-1].split(b"\0")
    if len(fields) < 2 or fields[0] != b"run" or not _INT.match(fields[1].decode("latin-1")):
        return None
    count = int(fields[1])
    if count > len(fields) - 2:
        return None
    env = [f.decode("utf-8", "surrogateescape") for f in fields[2:2 + count]]
    if any(not e or e.startswith("=") for e in env):
        return None  # NAME without "=" sets NAME to the empty string
    args = [os.fsdecode(f) for f in fields[2 + count:]]
    return env, args


def _become_child(target, server, harness, sock, fds, env, args):
    """In the fork: the process a freshly started target would be, then the run."""
    try:
        os.close(sock.fileno())  # not sock.close(): each Python call a fork makes costs it pages
        os.setpgid(0, 0)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != server:
            os._exit(127)  # the server died before the signal was armed
        _prctl(_PR_SET_PTRACER, harness)  # for the harness's gdb, as the runner allows
        # The signal dispositions and the (empty) mask are the server's, set once.
        output = fcntl.fcntl(fds[0], fcntl.F_DUPFD_CLOEXEC, 10)
        events = fcntl.fcntl(fds[1], fcntl.F_DUPFD_CLOEXEC, 10) if len(fds) > 1 else None
        os.dup2(output, 1)
        os.dup2(output, 2)
        if events is not None:
            os.dup2(events, 3)
        os.closerange(3 if events is None else 4, os.sysconf("SC_OPEN_MAX"))
        if EVENTS_FD_VARIABLE in os.environ:
            del os.environ[EVENTS_FD_VARIABLE]
        for entry in env:
            name, _, value = entry.partition("=")
            os.environ[name] = value
    except BaseException:  # noqa: BLE001 - nothing of the server may run on in the child
        os._exit(127)
    try:
        status = _run_file(target, args[-1]) if args else 2
    except BaseException:  # noqa: BLE001
        import traceback  # noqa: PLC0415 - on failure only: a fork imports nothing it need not

        traceback.print_exc()
        status = 3
    _finish(status)


def _wait_status(pid):
    """The waitpid(2) status word of an exited child, left unreaped."""
    while True:
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            break
        except InterruptedError:
            continue
    if info.si_code == os.CLD_EXITED:
        return (info.si_status & 0xFF) << 8
    return (info.si_status & 0x7F) | (0x80 if info.si_code == os.CLD_DUMPED else 0)


def _kill_and_reap(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    _reap(pid)


def _reap(pid):
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _exited_or_hung_up(sock, pid):
    """Waits until the child exits (True) or the harness hangs up or speaks out of turn (False)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return True  # no pidfd: wait for the child alone
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(sock.fileno(), select.POLLIN)
        while True:
            ready = dict(poller.poll())
            if pidfd in ready:
                return True
            if ready:
                return False
    finally:
        os.close(pidfd)


def _receive(sock):
    """(message, fds, flags); an empty message at end of file or on error."""
    while True:
        try:
            message, fds, flags, _ = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS,
                                                      socket.MSG_CMSG_CLOEXEC)
            return message, fds, flags
        except InterruptedError:
            continue
        except OSError:
            return b"", [], 0


def _send(sock, text):
    try:
        sock.send(text if isinstance(text, bytes) else text.encode())
        return True
    except OSError:
        return False


def serve_forks(target, fd):
    """Serves `run` requests on the socket `fd` until the harness closes it; returns 0."""
    server, harness = os.getpid(), os.getppid()
    sock = socket.socket(fileno=fd)
    _prctl(_PR_SET_PTRACER, harness)  # loads the C library's handle once, for every child
    # The server's signal dispositions and mask are those of a fresh start (its children inherit
    # them), whatever start-up installed: set once here rather than in every fork.
    _reset_signals()
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    # Start-up's objects are never collected in a child: frozen, forks do not copy their pages.
    gc.collect()
    gc.freeze()
    if not _send(sock, f"hello {FORK_SERVER_VERSION}"):
        return 0
    while True:
        message, fds, flags = _receive(sock)
        if not message:
            for f in fds:
                os.close(f)
            return 0
        request = _parse_request(message, fds, flags)
        if request is None:
            for f in fds:
                os.close(f)
            if not _send(sock, _MALFORMED):
                return 0
            continue
        env, args = request
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as e:
            for f in fds:
                os.close(f)
            if not _send(sock, f"error fork: {os.strerror(e.errno or errno.EAGAIN)}"):
                return 0
            continue
        if pid == 0:
            _become_child(target, server, harness, sock, fds, env, args)
        for f in fds:
            os.close(f)
        if not _send(sock, f"pid {pid}") or not _exited_or_hung_up(sock, pid):
            _kill_and_reap(pid)
            return 0
        if not _send(sock, f"exit {_wait_status(pid)}"):
            _kill_and_reap(pid)
            return 0
        reply, reply_fds, _ = _receive(sock)
        for f in reply_fds:
            os.close(f)
        if reply != b"reap":
            _kill_and_reap(pid)
            return 0
        _reap(pid)


# ---------------------------------------------------------------------------------------------

USAGE = """usage: {prog} [ARGS...] FILE     run one sequence file, events to $GPUFUZZ_EVENTS_FD
       {prog} [ARGS...]          with $GPUFUZZ_FORK_SERVER_FD set: serve as a fork server
       {prog} --version          the target's name and version
"""


def main(target, argv=None):
    """The target's whole command line; never returns."""
    argv = sys.argv[1:] if argv is None else list(argv)
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else target.name
    if "--version" in argv:
        print(f"{target.name} {target.version}", flush=True)
        _finish(0)
    if "--help" in argv or "-h" in argv:
        print(USAGE.format(prog=prog), end="", flush=True)
        _finish(0)
    server_fd = os.environ.get(FORK_SERVER_FD_VARIABLE)
    if server_fd is not None:
        os.environ.pop(FORK_SERVER_FD_VARIABLE)
        target.fork_server = True
        target.configure(argv)
        target.startup()
        _finish(serve_forks(target, int(server_fd)))
    if not argv:
        print(f"{prog}: no sequence file given\n" + USAGE.format(prog=prog), end="",
              file=sys.stderr, flush=True)
        _finish(2)
    target.configure(argv[:-1])
    target.startup()
    _finish(_run_file(target, argv[-1]))
