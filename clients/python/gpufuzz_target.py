"""gpufuzz_target: a gpufuzz target in Python (the contract: docs/target.md; the API: README.md).

A target is a subclass of Target with one method per operation it implements, named as the
operation, taking the operation's names and its keys (defaults filled in); `main` does the rest:
reads the lifecycle model (docs/models.md) and the sequence file, writes the events, turns the
target's failures into outcomes, releases what is left at the end in the model's order, runs the
threads of a threaded sequence, and serves as a fork server when the harness asks for one.

    import gpufuzz_target as gpufuzz

    class Mine(gpufuzz.Target):
        name, version = "mine", "1.0"
        def setup(self, sequence): self.device = open_device()    # in the run, never before
        def create(self, r, width, height): ...
        def destroy(self, r): ...

    if __name__ == "__main__":
        gpufuzz.main(Mine())

The model is read as the normalized facts gpufuzz writes: the file $GPUFUZZ_MODEL_FACTS names
(the harness always sets it), else the facts beside the model file $GPUFUZZ_MODEL or the
sequence's `# model:` directive names, else the built-in `all` (BUILTIN_MODEL). An operation of a
model with a name that is no method's can be registered: `self.handle("op-name", function)`.

Standard library only (Python 3.11).
"""

import _thread
import ctypes
import errno
import faulthandler
import fcntl
import gc
import os
import re
import select
import signal
import socket
import sys

__all__ = ["Target", "Failure", "Error", "Invalid", "Mismatch", "Leak", "Unsupported", "Sequence",
           "Operation", "SequenceError", "Model", "ModelError", "Resource", "Slot", "Argument",
           "OperationSpec", "BUILTIN_MODEL", "main", "run_sequence", "serve_forks",
           "parse_sequence", "load_sequence", "parse_model_facts", "load_model_facts",
           "load_model", "builtin_model", "model_facts_path", "model_hash", "Injected", "may_fail",
           "FAIL_WORDS"]

FORK_SERVER_VERSION = 1
EVENTS_FD_VARIABLE = "GPUFUZZ_EVENTS_FD"
FORK_SERVER_FD_VARIABLE = "GPUFUZZ_FORK_SERVER_FD"
MODEL_VARIABLE = "GPUFUZZ_MODEL"
MODEL_FACTS_VARIABLE = "GPUFUZZ_MODEL_FACTS"
STACKS_FILE_VARIABLE = "GPUFUZZ_STACKS_FILE"
MAX_MESSAGE = 64 * 1024
MAX_FDS = 2
MAX_THREADS = 8
# The failures a mark asks for (docs/failures.md), and how far `!WORD@N` counts.
FAIL_WORDS = ("oom", "host-oom", "lost")
MAX_MARK_NTH = 64

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


class Injected(Exception):
    """The marked call failed, as the operation's mark asked (may_fail raises it). Let it out of
    the handler: the operation then ends with `fail`, its new names are never made, and the run
    goes on. A handler that swallows it is judged by what follows, as any other."""

    def __init__(self, word, call=""):
        self.word, self.call = word, call
        super().__init__(f"{call + ': ' if call else ''}{word} (injected)")


class Unsupported(Exception):
    """The target does not implement this operation: `outcome unsupported AT OP DETAIL`."""

    def __init__(self, detail="unsupported operation"):
        super().__init__(detail)


# ---------------------------------------------------------------------------------------------
# Lifecycle models (docs/models.md): the kinds of resource, the operations and their arguments, the
# order of the release. This library reads a model's normalized facts, one fact a line, which
# gpufuzz writes from a model it has checked (`gpufuzz model normalize`); it parses no `.model`.

# The built-in model `all` as its normalized facts (`gpufuzz model normalize all`): the vocabulary
# of a sequence that names no model. The C++ library holds the same text (kBuiltinModel), and a
# test checks both against gpufuzz's output.
BUILTIN_MODEL = """\
gpufuzz-model-facts 1
model all 26fc6db1938459b1
note The shipped GpuRenderer and the bare device runtime beneath it: the union of renderer and device.
resource renderer r
resource context c
resource buffer b
owner buffer context
op create
weight create 15
slot create renderer new
arg create width int 64 1 4096
arg create height int 64 1 4096
fails create oom host-oom lost
op draw
weight draw 30
slot draw renderer use
arg draw triangles int 4 1 1024
arg draw seed int 0 0 4294967295
fails draw host-oom lost
effect draw set pending renderer
op sync
weight sync 7
slot sync renderer use
fails sync host-oom lost
effect sync clear pending renderer
op set_textures
weight set_textures 10
slot set_textures renderer use
arg set_textures count int 1 0 16
arg set_textures size int 32 1 2048
arg set_textures seed int 0 0 4294967295
fails set_textures oom host-oom lost
effect set_textures set textured renderer
op read_back
weight read_back 7
slot read_back renderer use
fails read_back host-oom lost
effect read_back clear pending renderer
op destroy
weight destroy 16
slot destroy renderer end
fails destroy host-oom lost
op ctx_create
weight ctx_create 9
slot ctx_create context new
fails ctx_create oom host-oom
op buf_create
weight buf_create 16
slot buf_create context use
slot buf_create buffer new
arg buf_create bytes int 256 1 2147483648
fails buf_create oom host-oom lost
op buf_destroy
weight buf_destroy 9
slot buf_destroy buffer end
op ctx_destroy
weight ctx_destroy 8
slot ctx_destroy context end
release renderer destroy
release buffer buf_destroy
release context ctx_destroy
"""
# Names a `# model:` directive may give for the built-in model: `renderer` and `device` are parts
# of `all`, so every sequence of theirs is one of `all`.
BUILTIN_MODEL_NAMES = ("all", "renderer", "device")
RENDERER_OPS = ("create", "draw", "sync", "set_textures", "read_back", "destroy")
DEVICE_OPS = ("ctx_create", "buf_create", "buf_destroy", "ctx_destroy")
# The first line of the facts this library reads: the form and its version.
MODEL_FACTS_HEADER = "gpufuzz-model-facts 1"

_INT = re.compile(r"(0|[1-9][0-9]*)\Z")
_MAX_U64 = 2**64 - 1


class SequenceError(Exception):
    """A sequence file that is not one; the message starts with FILE:LINE:COLUMN."""


class ModelError(SequenceError):
    """Model facts this library cannot read (the message starts with FILE:LINE:COLUMN), or a model
    file without facts beside it."""


class Resource:
    """A kind of name: `kind`, `prefix`, `owner` (a kind, or None) and `line` (of its fact)."""

    __slots__ = ("kind", "prefix", "owner", "line")

    def __init__(self, kind, prefix, owner, line):
        self.kind, self.prefix, self.owner, self.line = kind, prefix, owner, line

    def __repr__(self):
        owner = f" owner {self.owner}" if self.owner else ""
        return f"resource {self.kind} prefix {self.prefix}{owner}"


class Slot:
    """A used name of an operation: `mode` is "use" (KIND), "end" (KIND!) or "list" (KIND*)."""

    __slots__ = ("kind", "mode")

    def __init__(self, kind, mode):
        self.kind, self.mode = kind, mode

    def __repr__(self):
        return self.kind + {"use": "", "end": "!", "list": "*"}[self.mode]


class Argument:
    """An integer in `low`..`high` (`words` None, values ints), or one of `words`."""

    __slots__ = ("key", "default", "low", "high", "words")

    def __init__(self, key, default, low=None, high=None, words=None):
        self.key, self.default, self.low, self.high, self.words = key, default, low, high, words

    def value(self, text):
        """The value `text` gives this argument, or None when it is not one."""
        if self.words is not None:
            return text if text in self.words else None
        if not _INT.match(text) or not self.low <= int(text) <= self.high:
            return None
        return int(text)

    def expected(self):
        if self.words is not None:
            return "one of " + ", ".join(self.words)
        return f"an integer in {self.low}..{self.high}"

    def __repr__(self):
        if self.words is not None:
            return f"{self.key}={self.default} {{{'|'.join(self.words)}}}"
        return f"{self.key}={self.default} ({self.low}..{self.high})"


class OperationSpec:
    """One operation. `slots`: the used names' Slots in order; `introduces`: the kinds of the new
    names; `args`: {key: Argument} in declaration order; `weight`; `fails`: the words a mark may
    ask of it; `flags`: [("+" or "-", FLAG, KIND)]; `line`: of its `op` fact."""

    __slots__ = ("name", "slots", "introduces", "args", "weight", "flags", "line", "fails")

    def __init__(self, name, slots, introduces, args, weight=1, flags=(), line=0, fails=()):
        self.name, self.slots, self.introduces = name, list(slots), list(introduces)
        self.args, self.weight, self.flags, self.line = dict(args), weight, list(flags), line
        self.fails = frozenset(fails)

    @property
    def has_list(self):
        return any(s.mode == "list" for s in self.slots)

    def name_count(self):
        """(fewest, most) names an operation line of this kind has; most None: any number."""
        fixed = sum(1 for s in self.slots if s.mode != "list") + len(self.introduces)
        return fixed, None if self.has_list else fixed

    def defaults(self):
        return {key: a.default for key, a in self.args.items()}

    def roles(self, names):
        """(positional, used, introduced) of an operation line's names: `positional` as a
        handler gets them (a name per slot, a list for the KIND* slot, introduced names last),
        `used` [(name, Slot)], `introduced` [(name, KIND)]."""
        fewest, _ = self.name_count()
        listed = len(names) - fewest if self.has_list else 0
        positional, used, k = [], [], 0
        for slot in self.slots:
            if slot.mode == "list":
                group = list(names[k:k + listed])
                positional.append(group)
                used.extend((n, slot) for n in group)
                k += listed
            else:
                positional.append(names[k])
                used.append((names[k], slot))
                k += 1
        introduced = list(zip(names[k:], self.introduces))
        positional.extend(names[k:])
        return positional, used, introduced

    def __repr__(self):
        arrow = " -> " + " ".join(self.introduces) if self.introduces else ""
        args = "".join(f" {a!r}" for a in self.args.values())
        return f"op {self.name} {' '.join(map(repr, self.slots))}{arrow}{args}".replace("  ", " ")


class Model:
    """A model as its facts give it: `resources` {KIND: Resource} and `operations` {NAME:
    OperationSpec} in declaration order, `release` [KIND], `released_by` {KIND: NAME} (each
    kind's default release), `name`, `hash` (of the model file's text), `note`, `path` and
    `text` (of the facts)."""

    def __init__(self, name, note, resources, operations, release, path="<facts>", text="",
                 model_hash=None, released_by=None):
        self.name, self.note, self.path, self.text = name, note, path, text
        self.resources, self.operations, self.release = resources, operations, list(release)
        self.hash, self.released_by = model_hash, dict(released_by or {})

    def operation(self, name):
        return self.operations.get(name)

    def release_operation(self, kind):
        """The operation that releases a leftover of `kind` by default: the kind's only ending
        operation, when it has no other slot (nor a new name); else None. gpufuzz works it out."""
        name = self.released_by.get(kind)
        return None if name is None else self.operations[name]

    def __repr__(self):
        return f"<Model {self.name or '?'}: {len(self.resources)} kinds, " \
               f"{len(self.operations)} operations>"


_SLOT_MODES = ("use", "end", "list")
# fact -> (fewest, most) words, the first included; most None: any number.
_FACT_WORDS = {"model": (3, 3), "resource": (3, 3), "owner": (3, 3), "op": (2, 2),
               "weight": (3, 3), "slot": (4, 4), "arg": (6, None), "fails": (3, 2 + 3),
               "effect": (5, 5), "release": (2, 3)}
_FACT_FORMS = {"model": "model NAME HASH", "resource": "resource KIND PREFIX",
               "owner": "owner KIND OWNER", "op": "op NAME", "weight": "weight OP N",
               "slot": "slot OP KIND use|end|list|new",
               "arg": "arg OP KEY int DEFAULT MIN MAX, or arg OP KEY word DEFAULT WORD...",
               "fails": "fails OP WORD...", "effect": "effect OP set|clear FLAG KIND",
               "release": "release KIND [OP]"}


def _words(line):
    """[(word, column)] of a facts line, split at blanks."""
    return [(m.group(), m.start() + 1) for m in re.finditer(r"\S+", line)]


def parse_model_facts(text, path="<facts>"):
    """Reads a model's normalized facts (docs/models.md: the text `gpufuzz model normalize`
    prints). A line whose first word this library does not know is skipped: later versions of the
    form may add facts. Raises ModelError (FILE:LINE:COLUMN) for another form or version, a fact
    with the wrong number of words, a value that is not one, or a name no earlier line declares."""
    lines = text.split("\n")
    first = lines[0].rstrip("\r")
    if first != MODEL_FACTS_HEADER:
        if first.startswith("gpufuzz-model-facts "):
            raise ModelError(f"{path}:1:1: '{first[:40]}' is a version of the facts this library "
                             f"cannot read ({MODEL_FACTS_HEADER})")
        raise ModelError(f"{path}:1:1: not a model's facts: the first line is "
                         f"'{MODEL_FACTS_HEADER}' (gpufuzz model normalize)")
    name, model_hash, note, resources, operations, release, released_by = \
        None, None, None, {}, {}, [], {}
    for number, raw in enumerate(lines[1:], 2):
        line = raw.rstrip("\r")
        w = _words(line)
        if not w:
            continue
        fact = w[0][0]

        def fail(message, field=0, number=number, w=w):
            raise ModelError(f"{path}:{number}:{w[min(field, len(w) - 1)][1]}: {message}")

        if fact == "note":
            note = line[w[0][1] + 3:].strip()
            continue
        if fact not in _FACT_WORDS:
            continue  # a fact of a later version
        fewest, most = _FACT_WORDS[fact]
        if len(w) < fewest or (most is not None and len(w) > most):
            fail(f"'{fact}' is {_FACT_FORMS[fact]}")
        words = [word for word, _ in w]

        def kind(field, words=words, fail=fail):
            if words[field] not in resources:
                fail(f"'{words[field]}' is not a kind of an earlier resource fact", field)
            return words[field]

        def operation(field, words=words, fail=fail):
            if words[field] not in operations:
                fail(f"'{words[field]}' is not an operation of an earlier op fact", field)
            return operations[words[field]]

        def integer(field, words=words, fail=fail):
            if not _INT.match(words[field]) or int(words[field]) > _MAX_U64:
                fail(f"'{words[field]}' is not an unsigned decimal integer", field)
            return int(words[field])

        if fact == "model":
            if name is not None:
                fail("a second model fact")
            name, model_hash = words[1], words[2]
        elif fact == "resource":
            if words[1] in resources:
                fail(f"kind '{words[1]}' is declared twice", 1)
            resources[words[1]] = Resource(words[1], words[2], None, number)
        elif fact == "owner":
            owner = kind(2)
            resources[kind(1)].owner = owner
        elif fact == "op":
            if words[1] in operations:
                fail(f"operation '{words[1]}' is declared twice", 1)
            operations[words[1]] = OperationSpec(words[1], [], [], {}, line=number)
        elif fact == "weight":
            o = operation(1)
            o.weight = integer(2)
            if o.weight < 1:
                fail("a weight is at least 1", 2)
        elif fact == "slot":
            o, k, mode = operation(1), kind(2), words[3]
            if mode == "new":
                o.introduces.append(k)
            elif mode in _SLOT_MODES:
                if o.introduces:
                    fail("a used slot after a new one", 3)
                if mode == "list" and o.has_list:
                    fail("a second list slot", 3)
                o.slots.append(Slot(k, mode))
            else:
                fail(f"'{mode}' is not a slot's use: use, end, list or new", 3)
        elif fact == "arg":
            o, key = operation(1), words[2]
            if key in o.args:
                fail(f"argument '{key}' is declared twice", 2)
            if words[3] == "int":
                if len(words) != 7:
                    fail("'arg' is arg OP KEY int DEFAULT MIN MAX")
                default, low, high = integer(4), integer(5), integer(6)
                if not low <= default <= high:
                    fail("the default is not within MIN..MAX", 4)
                o.args[key] = Argument(key, default, low, high)
            elif words[3] == "word":
                choices = tuple(words[5:])
                if words[4] not in choices:
                    fail("the default is not one of the words", 4)
                o.args[key] = Argument(key, words[4], words=choices)
            else:
                fail(f"'{words[3]}' is not an argument's type: int or word", 3)
        elif fact == "fails":
            o = operation(1)
            for field, word in enumerate(words[2:], 2):
                if word not in FAIL_WORDS:
                    fail(f"unknown failure '{word}': {', '.join(FAIL_WORDS)}", field)
            o.fails = frozenset(words[2:])
        elif fact == "effect":
            o = operation(1)
            if words[2] not in ("set", "clear"):
                fail(f"'{words[2]}' is not an effect: set or clear", 2)
            o.flags.append(("+" if words[2] == "set" else "-", words[3], kind(4)))
        elif fact == "release":
            k = kind(1)
            if k in release:
                fail(f"kind '{k}' is released twice", 1)
            release.append(k)
            if len(words) == 3:
                released_by[k] = operation(2).name
    if name is None:
        raise ModelError(f"{path}:{len(lines)}:1: the facts have no 'model NAME HASH'")
    return Model(name, note, resources, operations, release, path, text, model_hash, released_by)


def model_facts_path(model_path):
    """Where a model file's facts are kept: its path with `.model` replaced by `.facts` (`.facts`
    added when it does not end in `.model`). gpufuzz writes them beside every model file it
    writes."""
    if model_path.endswith(".model"):
        model_path = model_path[:-len(".model")]
    return model_path + ".facts"


def model_hash(data):
    """The hash gpufuzz takes of a model file's text (bytes): 64-bit FNV-1a, as 16 hex digits."""
    h = 14695981039346656037
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


_models = {}  # path -> the Model its facts were read as (a fork server reads each once)


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ModelError(f"{path}: cannot read the {what}: {e}") from None


def _cached_facts(path, data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelError(f"{path}: cannot read the model facts: {e}") from None
    cached = _models.get(path)
    if cached is not None and cached.text == text:
        return cached
    model = _models[path] = parse_model_facts(text, path)
    return model


def load_model_facts(path):
    """Reads a file of model facts (the same file's same text is read once per process)."""
    return _cached_facts(path, _read(path, "model facts"))


def load_model(path):
    """The model a model file declares, read from the facts beside it (model_facts_path). Raises
    ModelError when the model file cannot be read, when there are no facts beside it, and when
    they were written from another text of it."""
    digest = model_hash(_read(path, "model file"))
    facts = model_facts_path(path)
    again = f"write them with `gpufuzz model normalize {path} > {facts}`"
    try:
        with open(facts, "rb") as f:
            data = f.read()
    except OSError:
        raise ModelError(f"{path}: no facts beside the model file ({facts}): {again}") from None
    model = _cached_facts(facts, data)
    if model.hash != digest:
        raise ModelError(f"{facts}: the facts are of another text of {path} (hash {model.hash}, "
                         f"the file's is {digest}): {again}")
    return model


def builtin_model():
    """The built-in model `all` (BUILTIN_MODEL)."""
    model = _models.get(None)
    if model is None:
        model = _models[None] = parse_model_facts(BUILTIN_MODEL, "<built-in model all>")
    return model


def _model_of(directives, places, path):
    """(model, given) for a sequence: $GPUFUZZ_MODEL_FACTS, else the facts beside
    $GPUFUZZ_MODEL, else its `# model:`, else the built-in; `given`: whether a model was named."""
    facts = os.environ.get(MODEL_FACTS_VARIABLE)
    if facts:
        return load_model_facts(facts), True
    named = os.environ.get(MODEL_VARIABLE)
    if named:
        return load_model(named), True
    value = directives.get("model")
    if value is None:
        return builtin_model(), False
    if "/" in value or value.endswith(".model"):
        if not os.path.isabs(value):
            value = os.path.join(os.path.dirname(path) or ".", value)
        return load_model(value), True
    if value in BUILTIN_MODEL_NAMES:
        return builtin_model(), True
    raise SequenceError(f"{path}:{places['model']}:1: the built-in model '{value}' is not one "
                        f"this library holds ({', '.join(BUILTIN_MODEL_NAMES)}): set "
                        f"{MODEL_FACTS_VARIABLE} to its facts (gpufuzz model normalize {value} > "
                        "FILE)")


# ---------------------------------------------------------------------------------------------
# Sequence files: the normalized form of docs/sequences.md the harness writes, in a model's words.


class Operation:
    """One operation line: `op` (its name), `names` (as written: slot order, new names last),
    `args` (every key of the model, defaults filled in: ints, or the word of a {a|b} argument),
    `line`, `at` (its 1-based ordinal), `thread` (the T of `@T`, 0 without), `spec` (its
    OperationSpec) and `positional` (the names as a handler gets them: one per slot, a list for
    a KIND* slot, new names last)."""

    __slots__ = ("op", "names", "args", "line", "at", "thread", "spec", "positional", "mark")

    def __init__(self, op, names, args, line, at=None, thread=0, spec=None, positional=None,
                 mark=None):
        self.op, self.names, self.args, self.line = op, names, args, line
        self.at, self.thread, self.spec = at, thread, spec
        self.positional = list(names) if positional is None else positional
        self.mark = mark  # (WORD, N) of a trailing `!WORD@N` (docs/failures.md), or None

    def __repr__(self):
        keys = "".join(f" {k}={v}" for k, v in self.args.items())
        thread = f"@{self.thread} " if self.thread else ""
        mark = ""
        if self.mark:
            mark = f" !{self.mark[0]}" + (f"@{self.mark[1]}" if self.mark[1] != 1 else "")
        return f"{thread}{self.op} {' '.join(self.names)}{keys}{mark}"


class Sequence:
    """A parsed file: `directives` ({"policy": "shipped", ...}), `operations`, `model` (the
    Model it was read in), `threads` (how many its `@T` lines and `# threads:` ask for) and
    `model_given` (whether the environment or `# model:` named the model)."""

    def __init__(self, path, directives, operations, model=None, threads=1, model_given=False):
        self.path, self.directives, self.operations = path, directives, operations
        self.model = model or builtin_model()
        self.threads, self.model_given = threads, model_given

    @property
    def policy(self):
        return self.directives.get("policy", "shipped")

    def leftovers(self, unmade=()):
        """[(KIND, name)] still alive after the last operation, in the order they are released:
        the model's `release` order, each kind's names in creation order. `unmade`: names that
        failed operations never made (docs/failures.md), which nothing releases."""
        alive = {}  # name -> kind, in creation order
        for o in self.operations:
            spec = o.spec or self.model.operation(o.op)
            _, used, introduced = spec.roles(o.names)
            for name, slot in used:
                if slot.mode == "end":
                    alive.pop(name, None)
            for name, kind in introduced:
                alive[name] = kind
        return [(kind, name) for kind in self.model.release
                for name, k in alive.items() if k == kind and name not in unmade]


_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")
_DIRECTIVE = re.compile(r"#\s*([a-z][a-z0-9_.]*):\s*(.*?)\s*\Z")


def _mark(token, fail):
    """(WORD, N) of a mark `!WORD` or `!WORD@N`."""
    word, at, count = token[1:].partition("@")
    if word not in FAIL_WORDS:
        fail(f"unknown failure '{word}' in a mark: expected {', '.join(FAIL_WORDS)}", token)
    if at and (not _INT.match(count) or not 1 <= int(count) <= MAX_MARK_NTH):
        fail(f"'{count}' after '@' in a mark: expected a call count in 1..{MAX_MARK_NTH}", token)
    return word, int(count) if at else 1


def parse_sequence(text, path="<sequence>", model=None):
    """Parses the normalized text in `model` (None: the one the environment or the file's
    `# model:` names, else the built-in); raises SequenceError with the place of the first
    problem (ModelError for a model that cannot be read)."""
    directives, places, operations, kinds = {}, {}, [], {}  # kinds: name -> KIND, None once ended
    given, threads = model is not None, 1
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
                if key == "threads" and (not _INT.match(value) or
                                         not 1 <= int(value) <= MAX_THREADS):
                    fail(f"threads: {value}: expected 1..{MAX_THREADS}", value)
                directives[key], places[key] = value, number
            continue
        if model is None:  # the directives are all read: the first operation's line
            model, given = _model_of(directives, places, path)
        words = stripped.split("#", 1)[0].split()
        thread = 0
        if words[0].startswith("@"):
            digits = words[0][1:]
            if not _INT.match(digits) or int(digits) >= MAX_THREADS:
                fail(f"'{words[0]}' is not a thread (@0..@{MAX_THREADS - 1})", words[0])
            thread, words = int(digits), words[1:]
            if not words:
                fail("a thread without an operation")
            threads = max(threads, thread + 1)
        if words[0].startswith("!"):
            fail(f"'{words[0]}': a mark ends an operation line, and this line has no operation",
                 words[0])
        mark = None
        if words[-1].startswith("!"):
            mark = _mark(words[-1], fail)
            words = words[:-1]
        for word in words:
            if word.startswith("!"):
                fail(f"'{word}': " + ("a second mark" if mark else "a mark ends the line"), word)
        op, *rest = words
        spec = model.operation(op)
        if spec is None:
            fail(f"unknown operation '{op}' (known: {', '.join(model.operations)})", op)
        if mark and mark[0] not in spec.fails:
            declared = "|".join(w for w in FAIL_WORDS if w in spec.fails)
            fail(f"{op} cannot fail with {mark[0]}: its model declares " +
                 (f"fails:{declared}" if declared else "no fails: for it"), "!" + mark[0])
        names = []
        for word in rest:
            if "=" in word:
                break
            names.append(word)
        fewest, most = spec.name_count()
        if len(names) < fewest or (most is not None and len(names) > most):
            count = f"at least {fewest}" if most is None else str(fewest)
            fail(f"'{op}' takes {count} name(s), not {len(names)}", op)
        positional, used, introduced = spec.roles(names)
        seen = set()
        for name in names:
            if not _NAME.match(name):
                fail(f"'{name}' is not a name ([a-z][a-z0-9_]*, at most 32 characters)", name)
            if name in seen:
                fail(f"'{name}' is named twice in one operation", name)
            seen.add(name)
        for name, slot in used:
            if kinds.get(name) != slot.kind:
                fail(f"'{name}' is not a live {slot.kind} here", name)
        for name, _ in introduced:
            if name in kinds:
                fail(f"'{name}' is introduced twice", name)
        args, keys = spec.defaults(), set()
        for word in rest[len(names):]:
            key, equals, value = word.partition("=")
            if not equals or key not in spec.args:
                known = ", ".join(spec.args) or "none"
                fail(f"unknown argument '{word}' for '{op}' (keys: {known})", word)
            if key in keys:
                fail(f"argument '{key}' given twice", word)
            keys.add(key)
            parsed = spec.args[key].value(value)
            if parsed is None:
                fail(f"{key}={value}: expected {spec.args[key].expected()}", word)
            args[key] = parsed
        for name, slot in used:
            if slot.mode == "end":
                kinds[name] = None
        for name, kind in introduced:
            kinds[name] = kind
        operations.append(Operation(op, names, args, number, len(operations) + 1, thread, spec,
                                    positional, mark))
    if "threads" in directives:
        threads = max(threads, int(directives["threads"]))
    if model is None:
        model, given = _model_of(directives, places, path)
    return Sequence(path, directives, operations, model, threads, given)


def load_sequence(path, model=None):
    """Reads and parses a sequence file (see parse_sequence)."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("ascii")  # the built-in codec: nothing to import in a fork
    except (OSError, UnicodeDecodeError) as e:
        raise SequenceError(f"{path}: cannot read the sequence file: {e}") from None
    return parse_sequence(text, path, model)


# ---------------------------------------------------------------------------------------------
# The target's side: subclass Target.


class Target:
    """Subclass it; implement the operations you support as methods of the same name, or
    register a handler per operation with handle().

    Built-in vocabulary (no model named):
        renderer: create(r, width, height)  draw(r, triangles, seed)  sync(r)
                  set_textures(r, count, size, seed)  read_back(r)  destroy(r)
        device:   ctx_create(c)  buf_create(c, b, bytes)  buf_destroy(b)  ctx_destroy(c)

    A handler is called with the operation's names (one per slot, a list for a KIND* slot, new
    names last), then every argument as a keyword (an int, or the word of a {a|b} argument;
    the model's default when the line leaves it out). An operation that nothing handles is
    `unsupported`. Leftovers are released kind by kind in the model's `release` order: through
    the handler handle_release() registered for the kind, else through the kind's only ending
    operation (with default arguments) when that operation has no other slot; else left alone.
    """

    name = "python-target"
    version = "0"
    fork_server = False  # set before startup(): whether this process serves forks
    # Whether the handlers call may_fail() before their runtime calls, so that a mark can fail
    # one (docs/failures.md). A target that does not answers `unsupported` to a marked file.
    honours_marks = False

    def configure(self, args):
        """The words after CMD before the sequence file (CMD ARGS... FILE); once per process."""
        if args:
            raise SystemExit(f"{self.name}: unknown arguments {' '.join(args)}")

    def startup(self):
        """Once per process, before any fork: imports, kernel sources. Never touch the device.
        `self.fork_server` says whether runs will be forked from this process."""

    def setup(self, sequence):
        """Once per run, before the first operation: open the device here. `sequence.policy`,
        `sequence.model`."""

    def leak_check(self):
        """After everything was released: a description of what is still held, or None."""
        return None

    def handle(self, op, handler):
        """Registers `handler` for the operation named `op` (before that operation runs: in
        __init__, startup() or setup()); it takes precedence over a method of that name.
        Returns `handler`."""
        self.__dict__.setdefault("_gpufuzz_handlers", {})[op] = handler
        return handler

    def handle_release(self, kind, handler):
        """Registers `handler(name)` as the release of a leftover of `kind`. Returns it."""
        self.__dict__.setdefault("_gpufuzz_releases", {})[kind] = handler
        return handler

    def run(self, operation):
        """An operation that no handler and no method takes: an Operation (op, names, args,
        positional, at, thread). Override it to dispatch yourself; by default Unsupported."""
        raise Unsupported()


# Names a method-per-operation target cannot use for an operation (Target's own): an operation
# of a model named so needs handle().
_RESERVED = frozenset(dir(Target))


def _handler(target, op):
    """What runs the operation named `op`: its registered handler, else the target's method of
    that name, else None."""
    handler = target.__dict__.get("_gpufuzz_handlers", {}).get(op)
    if handler is None and not op.startswith("_") and op not in _RESERVED:
        method = getattr(target, op, None)
        if callable(method):
            handler = method
    return handler


def _dispatch(target, operation):
    handler = _handler(target, operation.op)
    if handler is None:
        target.run(operation)
    else:
        handler(*operation.positional, **operation.args)


# The running operation's mark on each thread: [WORD, N, calls seen, fired].
_armed = {}


def may_fail(*words, call=""):
    """Call it in a handler before each runtime call that can fail with one of `words` ("oom",
    "host-oom", "lost"): raises Injected when the running operation's mark picks this call, the
    N-th such call of its word. `call` names the runtime call for the detail. Release calls are
    never marked: call it only before calls that make or use something."""
    state = _armed.get(_thread.get_ident())
    if state is None or state[3] or state[0] not in words:
        return
    state[2] += 1
    if state[2] == state[1]:
        state[3] = True
        raise Injected(state[0], call)


_interposers = []  # the preloaded interposer, looked up once: [library or None]


def _interposer():
    """The interposer the harness preloads (libgpufuzz-interpose.so, docs/failures.md), or None
    when it is absent or the target calls no runtime it covers (OpenCL, CUDA, Vulkan). It fails
    the marked call of a target that calls the runtime, without may_fail(). Asked once the target's module has
    imported its runtime."""
    if not _interposers:
        import ctypes  # noqa: PLC0415 - only a marked file needs it

        try:
            lib = ctypes.CDLL(None)
            lib.gpufuzz_interpose_arm.argtypes = [ctypes.c_char_p, ctypes.c_uint]
            lib.gpufuzz_interpose_disarm.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
            if not lib.gpufuzz_interpose_covers():
                lib = None  # the target calls no runtime the interposer covers
        except (OSError, AttributeError):
            lib = None
        _interposers.append(lib)
    return _interposers[0]


def _disarm_interposer(lib):
    """Disarms this thread's interposer: the name of the call it failed, or None."""
    import ctypes  # noqa: PLC0415

    call = ctypes.create_string_buffer(128)
    return call.value.decode() if lib.gpufuzz_interpose_disarm(call, len(call)) else None


def _run_op(target, o):
    """Dispatches `o` with its mark armed: the detail of its failure as marked, or None. A target
    that honours marks is armed through may_fail(); any other through the interposer."""
    key = _thread.get_ident()
    lib = _interposer() if o.mark and not target.honours_marks else None
    if o.mark and lib is None:
        _armed[key] = [o.mark[0], o.mark[1], 0, False]
    if lib is not None:
        lib.gpufuzz_interpose_arm(o.mark[0].encode(), o.mark[1])
    try:
        _dispatch(target, o)
    except Injected as e:
        if o.mark and _armed[key][3]:
            return str(e)
        raise
    except Exception as e:
        if lib is not None:
            call, lib = _disarm_interposer(lib), None
            if call:
                return f"{call}: {_describe(e)}"
        raise
    finally:
        _armed.pop(key, None)
        if lib is not None:
            _disarm_interposer(lib)
    return None


class _Unmade:
    """Names that failed operations never made; an operation using one is skipped, and its own
    new names are never made in turn (docs/failures.md)."""

    def __init__(self):
        self.names = set()

    def failed(self, o):
        self.names.update(o.names[len(o.names) - len(o.spec.introduces):] if o.spec else ())

    def skips(self, o):
        used = o.names[:len(o.names) - len(o.spec.introduces)] if o.spec else o.names
        if not any(n in self.names for n in used):
            return False
        self.failed(o)
        return True


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
    if isinstance(exc, (Failure, Unsupported)):
        return str(exc) or type(exc).__name__
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _dependencies(ops):
    """For each operation, the indexes of those it waits for (docs/sequences.md, Threads): its
    thread's previous operation and, for each of its names, the file's previous operation on
    that name."""
    last_of_thread, last_of_name, waits = {}, {}, []
    for i, o in enumerate(ops):
        before = {last_of_name[n] for n in o.names if n in last_of_name}
        if o.thread in last_of_thread:
            before.add(last_of_thread[o.thread])
        waits.append(sorted(before))
        last_of_thread[o.thread] = i
        for n in o.names:
            last_of_name[n] = i
    return waits


class _Threads:
    """The threads of a threaded sequence: made (waiting) before `start`, released together by
    run(), which runs thread 0 on the calling thread and returns the failure of the lowest
    ordinal, (ordinal, exception), or None."""

    def __init__(self, target, sequence, events, unmade):
        import threading  # noqa: PLC0415 - only a threaded sequence needs it

        self.target, self.events, self.ops = target, events, sequence.operations
        self.unmade = unmade
        self.waits = _dependencies(self.ops)
        self.done = [False] * len(self.ops)
        self.failures = []
        self.stopped = False
        self.cond = threading.Condition()
        self.go = threading.Event()
        self.lanes = {}
        for i, o in enumerate(self.ops):
            self.lanes.setdefault(o.thread, []).append(i)
        self.workers = [threading.Thread(target=self._lane, args=(self.lanes[t],), daemon=True,
                                         name=f"gpufuzz-thread-{t}")
                        for t in sorted(self.lanes) if t != 0]
        for w in self.workers:
            w.start()

    def cancel(self):
        with self.cond:
            self.stopped = True
        self.go.set()
        for w in self.workers:
            w.join()

    def run(self):
        self.go.set()
        self._lane(self.lanes.get(0, []))
        for w in self.workers:
            w.join()
        return min(self.failures, key=lambda f: f[0]) if self.failures else None

    def _lane(self, indexes):
        self.go.wait()
        for i in indexes:
            with self.cond:
                while not self.stopped and not all(self.done[w] for w in self.waits[i]):
                    self.cond.wait()
                if self.stopped:
                    return  # after a failure nothing new begins
            o = self.ops[i]
            with self.cond:
                skipped = self.unmade.skips(o)
            if skipped:
                self.events.write("skip", o.at)
            else:
                self.events.write("begin", o.at, o.op)
                try:
                    injected = _run_op(self.target, o)
                except BaseException as e:  # noqa: BLE001 - every failure is an outcome
                    with self.cond:
                        self.failures.append((o.at, e))
                        self.stopped = True
                        self.cond.notify_all()
                    return
                if injected is not None:
                    with self.cond:
                        self.unmade.failed(o)
                    self.events.write("fail", o.at, injected)
                else:
                    self.events.write("done", o.at)
            with self.cond:
                self.done[i] = True
                self.cond.notify_all()


def outcome_unsupported(target, events, marked):
    """A marked file for a target whose handlers cannot fail a call: never a wrong pass."""
    detail = (f"{target.name} does not honour marks: set honours_marks and call may_fail() "
              "before each runtime call")
    events.write("outcome", "unsupported", marked.at, marked.op, detail)
    print(f"{target.name}: unsupported: {detail}", file=sys.stderr, flush=True)
    return 1


def run_sequence(target, sequence, events=None):
    """Runs one parsed sequence; returns the exit status (0 pass, 1 otherwise)."""
    events = events or _events_from_environment()
    ops = sequence.operations
    # Without a model named, the older form of `unsupported`, which every harness reads.
    unsupported = "unsupported" if sequence.model_given else "error"
    unmade = _Unmade()
    marked = next((o for o in ops if o.mark), None)
    if marked and not target.honours_marks and _interposer() is None:
        events.write("start", len(ops))
        return outcome_unsupported(target, events, marked)
    threads = (_Threads(target, sequence, events, unmade) if sequence.threads > 1 and ops
               else None)
    events.write("start", len(ops))

    def outcome(cls, at, op, detail):
        if cls != "pass":
            sys.stdout.flush()
            print(f"{target.name}: {cls} at {at} ({op}): {detail}", file=sys.stderr, flush=True)
        events.write("outcome", cls, at, op, detail)
        return 0 if cls == "pass" else 1

    def failed(exc, at, op, prefix=""):
        if isinstance(exc, Unsupported):
            return outcome(unsupported, at, op, prefix + _describe(exc))
        if not isinstance(exc, Failure):
            import traceback  # noqa: PLC0415 - on failure only: a fork imports nothing it need not

            traceback.print_exception(exc)
        return outcome(exc.outcome if isinstance(exc, Failure) else "error", at, op,
                       prefix + _describe(exc))

    try:
        target.setup(sequence)
    except Exception as e:  # noqa: BLE001 - every failure is an outcome
        if threads:
            threads.cancel()
        return failed(e, "-", "-", "setup: ")
    if threads:
        failure = threads.run()
        if failure:
            return failed(failure[1], failure[0], ops[failure[0] - 1].op)
    else:
        for o in ops:
            if unmade.skips(o):
                events.write("skip", o.at)
                continue
            events.write("begin", o.at, o.op)
            try:
                injected = _run_op(target, o)
            except Exception as e:  # noqa: BLE001
                return failed(e, o.at, o.op)
            if injected is not None:
                unmade.failed(o)
                events.write("fail", o.at, injected)
                continue
            events.write("done", o.at)
    # Leftovers, in the model's release order (the built-in: renderers, bare buffers, contexts).
    events.write("begin", "end", "end")
    releases = target.__dict__.get("_gpufuzz_releases", {})
    for kind, name in sequence.leftovers(unmade.names):
        release = releases.get(kind)
        try:
            if release is not None:
                prefix = f"release {kind} {name}: "
                release(name)
                continue
            spec = sequence.model.release_operation(kind)
            if spec is None:
                continue  # left to the process's exit
            prefix = f"{spec.name} {name}: "
            _dispatch(target, Operation(spec.name, [name], spec.defaults(), None, "end", 0, spec))
        except Exception as e:  # noqa: BLE001
            return failed(e, "end", "end", prefix)
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
# Stacks on request (harness/protocol/CrashReport.h). For a stuck or late run the harness sends
# SIGURG. faulthandler writes every thread's Python traceback from its C signal handler: no Python
# code runs, so a thread stuck in a C call that holds the GIL does not stop it. The record is
# appended to FILE.part; then faulthandler chains to Python's own C handler, which writes one byte,
# the signal's number, to the wakeup descriptor, the same file: the harness's sign that the record
# is whole. The Python-level handler, run later if ever, does nothing.

_STACKS_SIGNAL = signal.SIGURG
_stacks_fd = None


def _stacks_requested(signum, frame):
    """The Python side of the stacks signal: the record was written before it runs."""


def _answer_stacks():
    """Answers the harness's stacks signal when GPUFUZZ_STACKS_FILE names a file; from the main
    thread of the process that runs the sequence, before anything of the target's runs."""
    global _stacks_fd
    path = os.environ.get(STACKS_FILE_VARIABLE)
    if not path or _stacks_fd is not None:
        return
    try:
        fd = os.open(path + ".part",
                     os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        signal.signal(_STACKS_SIGNAL, _stacks_requested)
        signal.set_wakeup_fd(fd, warn_on_full_buffer=False)
        faulthandler.register(_STACKS_SIGNAL, file=fd, all_threads=True, chain=True)
        # "faulthandler" says how this process answers: the harness waits for the end byte, not
        # for a renamed record.
        with open(path, "w") as marker:
            marker.write(f"pid {os.getpid()} faulthandler\n")
    except (OSError, ValueError, RuntimeError):
        # No answer at all, rather than half of one: the harness takes gdb's frames instead.
        try:
            faulthandler.unregister(_STACKS_SIGNAL)
            signal.set_wakeup_fd(-1)
            signal.signal(_STACKS_SIGNAL, signal.SIG_DFL)
        except (ValueError, RuntimeError):
            pass  # not the main thread: nothing was installed
        os.close(fd)
        return
    _stacks_fd = fd


def _warm_models():
    """Reads the built-in model and the one the environment names once, before any fork."""
    builtin_model()
    try:
        if os.environ.get(MODEL_FACTS_VARIABLE):
            load_model_facts(os.environ[MODEL_FACTS_VARIABLE])
        elif os.environ.get(MODEL_VARIABLE):
            load_model(os.environ[MODEL_VARIABLE])
    except ModelError:
        pass  # each run says so itself


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
        _answer_stacks()
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
    _warm_models()
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
    _answer_stacks()
    target.configure(argv[:-1])
    target.startup()
    _finish(_run_file(target, argv[-1]))
