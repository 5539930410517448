"""The cmdlists example targets (examples/targets/cmdlists-py, examples/targets/cmdlists-cpp), run
by hand as the harness runs them (GPUFUZZ_MODEL, GPUFUZZ_MODEL_FACTS, GPUFUZZ_EVENTS_FD): the
planted bug
(EXAMPLE_PLANTED_BUG=1) hangs the expected minimal sequence at its image_destroy, and without any
one of its operations it passes; the near misses pass, and the shapes around it still hang; with
the bug off every valid sequence passes (random ones of the model, threads among them), and the
two targets agree on every sequence, bug on or off. gpufuzz writes the model's facts.

    python3 tests/targets/test_cmdlists_examples.py [BIN_DIR]    (BIN_DIR: where cmdlists-target
                                                                  and gpufuzz are; without it,
                                                                  Python only, gpufuzz from
                                                                  build/bin)
"""

import concurrent.futures
import os
import random
import select
import signal
import subprocess
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL = os.path.join(ROOT, "examples/targets/common/cmdlists.model")
PY_TARGET = [sys.executable, os.path.join(ROOT, "examples/targets/cmdlists-py/target.py")]
sys.path.insert(0, os.path.join(ROOT, "clients/python"))
import gpufuzz_target as gpufuzz  # noqa: E402

BIN_DIR = None
FACTS = None  # the model's facts, written by gpufuzz into a folder of the run's own
QUIET = 1.5  # seconds without an event after a `begin`: a hang

MINIMAL = ["queue_create q0", "fence_create f0", "image_create i0", "list_create q0 l0",
           "list_draw l0 i0", "submit l0 q0 f0", "image_destroy i0"]


def targets():
    out = [("python", PY_TARGET)]
    if BIN_DIR:
        out.append(("c++", [os.path.join(BIN_DIR, "cmdlists-target")]))
    return out


def run(command, path, bug):
    """Runs a target on a sequence file: ("pass"|"hang"|class, at), or ("refused", None)."""
    r, w = os.pipe()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUFUZZ_", "EXAMPLE_"))}
    env.update(GPUFUZZ_EVENTS_FD=str(w), GPUFUZZ_MODEL=MODEL, GPUFUZZ_MODEL_FACTS=FACTS,
               EXAMPLE_PLANTED_BUG="1" if bug else "0")
    proc = subprocess.Popen(command + [path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, pass_fds=(w,),
                            start_new_session=True)
    os.close(w)
    buffered, lines, started = b"", [], False
    deadline = time.monotonic() + 30
    try:
        while True:
            wait = min(QUIET if started else 30, max(0.0, deadline - time.monotonic()))
            ready, _, _ = select.select([r], [], [], wait)
            if not ready:
                if lines and lines[-1].startswith("begin "):
                    return "hang", lines[-1].split()[1]
                raise AssertionError(f"{command} {path}: no progress: {lines}")
            data = os.read(r, 65536)
            if not data:
                break
            buffered += data
            *done, buffered = buffered.split(b"\n")
            lines += [d.decode() for d in done]
            started = True
            deadline = time.monotonic() + 30
    finally:
        os.close(r)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        err = proc.communicate(timeout=30)[1].decode()
    if proc.returncode == 2 and not lines:
        return "refused", err
    last = lines[-1].split() if lines else []
    if not last or last[0] != "outcome":
        raise AssertionError(f"{command} {path}: no outcome: {lines} {err}")
    return last[1], last[2]


class Fixture(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="gpufuzz-cmdlists-")
        self.count = 0

    def tearDown(self):
        self.dir.cleanup()

    def seq(self, ops):
        self.count += 1
        path = os.path.join(self.dir.name, f"s{self.count}.seq")
        with open(path, "w") as f:
            f.write(f"# gpufuzz sequence\n# model: {MODEL}\n" + "\n".join(ops) + "\n")
        return path

    def outcome(self, ops, bug):
        """The outcome on every target (they must agree)."""
        return self.outcomes([(ops, bug)])[0]

    def outcomes(self, cases):
        """The outcome of each (ops, bug) on every target (they must agree), in order. The runs
        go side by side, a few sequences at a time: a hang costs each only the same quiet time,
        spent waiting."""
        paths = [(self.seq(ops), bug) for ops, bug in cases]
        with concurrent.futures.ThreadPoolExecutor(max_workers=4 * len(targets())) as pool:
            futures = [{name: pool.submit(run, command, path, bug) for name, command in targets()}
                       for path, bug in paths]
            results = [{name: f.result() for name, f in each.items()} for each in futures]
        for (ops, _), each in zip(cases, results):
            self.assertEqual(len(set(each.values())), 1, f"{ops}: {each}")
        return [next(iter(each.values())) for each in results]


class PlantedBug(Fixture):
    def test_the_minimal_sequence_hangs_at_its_image_destroy(self):
        self.assertEqual(self.outcome(MINIMAL, bug=True), ("hang", "7"))
        self.assertEqual(self.outcome(MINIMAL, bug=False), ("pass", "-"))

    def test_without_any_one_of_its_operations_it_does_not_hang(self):
        model = gpufuzz.load_model_facts(FACTS)
        for i in range(len(MINIMAL)):
            without = MINIMAL[:i] + MINIMAL[i + 1:]
            try:
                gpufuzz.parse_sequence("\n".join(without), "without.seq", model)
            except gpufuzz.SequenceError:
                continue  # not a sequence of the model: the generator never writes it
            with self.subTest(without=MINIMAL[i]):
                self.assertEqual(self.outcome(without, bug=True), ("pass", "-"))

    def test_a_wait_before_the_destroy_avoids_it(self):
        before, destroy = MINIMAL[:-1], MINIMAL[-1:]
        for waited in (["fence_wait f0"], ["queue_wait_idle q0"], ["queue_destroy q0"],
                       # a later submission on the queue runs after this one
                       ["fence_create f1", "list_create q0 l1", "submit l1 q0 f1",
                        "fence_wait f1"],
                       # another queue's submission that waits for f0 needs it first
                       ["queue_create q1", "fence_create f1", "list_create q1 l1",
                        "submit l1 q1 f1 f0", "fence_wait f1"]):
            with self.subTest(waited=waited):
                self.assertEqual(self.outcome(before + waited + destroy, bug=True), ("pass", "-"))

    def test_what_still_has_the_image_in_flight_hangs(self):
        before, destroy = MINIMAL[:-1], MINIMAL[-1:]
        cases = [before + between + destroy
                 for between in (["list_reset l0"], ["list_destroy l0"], ["fence_destroy f0"],
                                 ["queue_create q1", "fence_create f1", "list_create q1 l1",
                                  "submit l1 q1 f1", "fence_wait f1"])]  # another queue waited
        # Submitted on a second queue whose list belongs to the first; a wait-list; a barrier.
        cases.append(["queue_create q0", "queue_create q1", "fence_create f0", "fence_create f1",
                      "image_create i0 format=r32f", "list_create q0 l0",
                      "list_barrier l0 stage=compute", "list_draw l0 i0 vertices=9",
                      "submit l0 q1 f0 f1 priority=high", "image_destroy i0"])
        for ops, got in zip(cases, self.outcomes([(ops, True) for ops in cases])):
            with self.subTest(ops=ops):
                self.assertEqual(got, ("hang", str(len(ops))))

    def test_an_image_only_recorded_is_no_hang(self):
        ops = ["queue_create q0", "image_create i0", "list_create q0 l0", "list_draw l0 i0",
               "image_destroy i0", "fence_create f0", "submit l0 q0 f0", "fence_wait f0"]
        self.assertEqual(self.outcome(ops, bug=True), ("pass", "-"))

    def test_the_release_does_not_hang_it(self):
        # Leftovers: fences, command lists, queues (which wait for their work), then images.
        self.assertEqual(self.outcome(MINIMAL[:-1], bug=True), ("pass", "-"))


def generate(model, rng, length, threads):
    """A valid sequence of `model`: [line], as gpufuzz's generator could write it."""
    alive = {kind: [] for kind in model.resources}
    made = dict.fromkeys(model.resources, 0)
    specs = list(model.operations.values())
    weights = [s.weight for s in specs]
    lines, attempts = [], 0
    while len(lines) < length and attempts < length * 20:
        attempts += 1
        spec = rng.choices(specs, weights)[0]
        names, ended = [], []
        for slot in spec.slots:
            free = [n for n in alive[slot.kind] if n not in names]
            if slot.mode == "list":
                names += rng.sample(free, rng.randint(0, min(4, len(free))))
                continue
            if not free:
                break
            names.append(rng.choice(free))
            if slot.mode == "end":
                ended.append((slot.kind, names[-1]))
        else:
            for kind in spec.introduces:
                names.append(f"{model.resources[kind].prefix}{made[kind]}")
                made[kind] += 1
                alive[kind].append(names[-1])
            for kind, name in ended:
                alive[kind].remove(name)
            args = []
            for key, a in spec.args.items():
                if rng.random() < 0.4:
                    value = rng.choice(a.words) if a.words else rng.randint(a.low,
                                                                            min(a.high, a.low + 99))
                    args.append(f"{key}={value}")
            thread = f"@{rng.randrange(threads)} " if threads > 1 else ""
            lines.append(thread + " ".join([spec.name] + names + args))
    return lines


class RandomSequences(Fixture):
    def test_without_the_bug_every_valid_sequence_passes_and_the_targets_agree(self):
        model = gpufuzz.load_model_facts(FACTS)
        rng = random.Random(20261)
        sequences = [generate(model, rng, rng.randint(5, 40), 1) for _ in range(40)]
        got = self.outcomes([(ops, bug) for ops in sequences for bug in (False, True)])
        hangs = 0
        for n, ops in enumerate(sequences):
            with self.subTest(n=n, ops=ops):
                self.assertEqual(got[2 * n], ("pass", "-"))
                hangs += got[2 * n + 1][0] == "hang"
        self.assertGreater(hangs, 0, "the planted bug never met in 40 random sequences")

    def test_threads_pass_without_the_bug(self):
        model = gpufuzz.load_model_facts(FACTS)
        rng = random.Random(7)
        sequences = [generate(model, rng, rng.randint(5, 30), 3) for _ in range(15)]
        for n, (ops, got) in enumerate(zip(sequences,
                                           self.outcomes([(ops, False) for ops in sequences]))):
            with self.subTest(n=n, ops=ops):
                self.assertEqual(got, ("pass", "-"))


def write_facts(folder):
    """Writes the model's facts into `folder` with gpufuzz, as the harness does; their path."""
    program = os.path.join(BIN_DIR or os.path.join(ROOT, "build/bin"), "gpufuzz")
    if not os.access(program, os.X_OK):
        sys.exit(f"no {program}: give the folder of the built programs")
    path = os.path.join(folder, "cmdlists.facts")
    with open(path, "w") as f:
        subprocess.run([program, "model", "normalize", MODEL], stdout=f, check=True)
    return path


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        BIN_DIR = sys.argv.pop(1)
        if not os.access(os.path.join(BIN_DIR, "cmdlists-target"), os.X_OK):
            sys.exit(f"no cmdlists-target in {BIN_DIR}")
    facts_folder = tempfile.mkdtemp(prefix="gpufuzz-cmdlists-facts-")
    try:
        FACTS = write_facts(facts_folder)
        unittest.main()
    finally:
        shutil.rmtree(facts_folder)
