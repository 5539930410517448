"""teardown_results.py: reads the JSON of gpufuzz-bench-teardown (Google Benchmark) into results
keyed by backend, subject (a policy, `bare` or `seam`) and parameter point. Shared by
tools/plot-bench and tools/bench-summary; standard library only. A file that is not the benchmark's
JSON raises ValueError saying what is wrong."""

import json
import os
import re
from dataclasses import dataclass

NAME = re.compile(r"^teardown/([^/]+)/([^/]+)/textures:(\d+)/size:(\d+)/draws:(\d+)(/|$)")
POLICIES = ["shipped", "context-first", "no-destroy-sync", "no-texture-wait"]


@dataclass(frozen=True, order=True)
class Point:
    textures: int
    size: int
    draws: int

    def describe(self):
        if self.textures == 0:
            return f"no textures, {self.draws} draws queued"
        return f"{self.textures} x {self.size}² textures, {self.draws} draws queued"


@dataclass
class Result:
    """With repetitions, each figure is the median of the repetitions' figures."""

    p50: float | None  # microseconds
    p99: float | None
    mean: float | None
    iterations: int  # in all repetitions
    error: str | None


class Run:
    """One JSON file: its context (host, date, workloads) and its results."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or not isinstance(data.get("benchmarks", []), list):
            raise ValueError("not Google Benchmark JSON (an object with a list `benchmarks`)")
        self.path = path
        base = os.path.basename(path)
        self.tag = re.sub(r"^teardown-", "", re.sub(r"\.json$", "", base))
        self.context = data.get("context", {})
        self.results = {}
        self.order = []
        self.repetitions = 1
        rows = {}
        for n, b in enumerate(data.get("benchmarks", [])):
            if not isinstance(b, dict):
                raise ValueError(f"benchmarks[{n}] is not an object")
            # Repetitions (--benchmark_repetitions) give one row each; their aggregates are
            # recomputed below from those rows.
            if b.get("run_type", "iteration") != "iteration":
                continue
            m = NAME.match(b.get("run_name", b.get("name", "")))
            if not m:
                continue
            backend, subject = m.group(1), m.group(2)
            point = Point(int(m.group(3)), int(m.group(4)), int(m.group(5)))
            for field in ("p50_us", "p99_us", "mean_us", "iterations"):
                v = b.get(field)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise ValueError(f"benchmarks[{n}] ({b.get('name')}): {field} is not a number")
            rows.setdefault((backend, subject, point), []).append(b)
            if backend not in self.order:
                self.order.append(backend)
        if not rows:
            raise ValueError("no teardown/BACKEND/SUBJECT/textures:N/size:N/draws:N benchmarks "
                             "(is it gpufuzz-bench-teardown's output?)")
        for key, reps in rows.items():
            self.repetitions = max(self.repetitions, len(reps))
            errors = [b.get("error_message", "") for b in reps if b.get("error_occurred")]
            self.results[key] = Result(
                median(b.get("p50_us") for b in reps),
                median(b.get("p99_us") for b in reps),
                median(b.get("mean_us") for b in reps),
                sum(int(b.get("iterations", 0)) for b in reps),
                errors[0] if errors else None,
            )

    def backends(self):
        return list(self.order)

    def label(self, backend):
        """`sim`, or `cuda on nvidia-h200` when the file's tag names the host."""
        return backend if self.tag == backend else f"{backend} on {self.tag}"

    def workload(self, backend):
        return self.context.get(f"workload_{backend}", "")

    def get(self, backend, subject, point):
        return self.results.get((backend, subject, point))

    def points(self, backend, subject):
        return sorted(p for (b, s, p) in self.results if b == backend and s == subject)

    def subjects(self, backend):
        return {s for (b, s, _) in self.results if b == backend}


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def format_us(us):
    """A latency in microseconds, in the unit that reads best."""
    if us is None:
        return "–"
    if us < 10:
        return f"{us:.2f} µs"
    if us < 1000:
        return f"{us:.1f} µs"
    if us < 1e6:
        return f"{us / 1000:.2f} ms"
    return f"{us / 1e6:.2f} s"


def ratio(a, b):
    if a is None or b is None or a.p50 is None or b.p50 is None or b.p50 <= 0:
        return None
    return a.p50 / b.p50
