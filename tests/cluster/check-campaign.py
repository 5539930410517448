#!/usr/bin/env python3
"""check-campaign.py: what a sharded campaign left must add up. Used by slurm-array-test.

  check-campaign.py shards SHARDS_DIR SEED COUNT [--only I] [--resumed I:SNAPSHOT]
      every shard folder 0..COUNT-1 (or only I) ran its residue of seed SEED's stream: its
      stats name the seed and shard, its sequences are the first next_sequence of the residue,
      each run once, and every finding's sequence seed is one of them. With --resumed, shard I was stopped
      once (SNAPSHOT: its stats.json and findings as they stood then) and run again: the second
      campaign went on at the snapshot's next_sequence and no finding of the snapshot was lost.
  check-campaign.py merged SHARDS_DIR COUNT MERGED_DIR
      MERGED_DIR holds the union of the shards' findings, hits summed, and its stats.json sums
      the shards' stats.
Prints each check; exit status 1 when one fails, 2 on bad use.
"""
import json
import os
import sys

MASK = (1 << 64) - 1
failures = 0


def check(what, condition, detail=""):
    global failures
    print(("ok   " if condition else "FAIL ") + what + ("" if condition else ": " + detail))
    if not condition:
        failures += 1


def splitmix64(x):
    # The seed stream of docs/scale-out.md (harness/SeedStream.cpp), again, as the test's oracle.
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def sequence_seed(seed, index):
    return splitmix64(seed ^ splitmix64(index))


def load(path):
    with open(path) as f:
        return json.load(f)


def findings(folder):
    """cause -> finding.json of every complete finding folder in `folder` (findings are one per
    cause: merge buckets by the `cause` file; folders without one by their signature)."""
    found = {}
    for name in sorted(os.listdir(folder)):
        d = os.path.join(folder, name)
        if os.path.isfile(os.path.join(d, "signature")):
            key = "cause" if os.path.isfile(os.path.join(d, "cause")) else "signature"
            with open(os.path.join(d, key)) as f:
                found[f.read()] = load(os.path.join(d, "finding.json"))
    return found


def counts(stats):
    keys = ["campaigns", "executions", "sequences", "failures", "unconfirmed", "harness_errors"]
    c = {k: stats[k] for k in keys}
    c.update({"by_class." + k: v for k, v in stats["by_class"].items()})
    return c


def check_shards(shards, seed, count, only, resumed):
    for i in only if only else range(count):
        folder = os.path.join(shards, str(i))
        s = load(os.path.join(folder, "stats.json"))
        name = f"shard {i}/{count}"
        check(f"{name}: stats of seed {seed}, shard {i}/{count}",
              s["seed"] == seed and s["shard"] == f"{i}/{count}", f"{s['seed']} {s['shard']}")
        check(f"{name}: finished", s["finished"] is True)
        nxt = s["next_sequence"]
        cum = s["cumulative"]
        check(f"{name}: ran sequences (next_sequence {nxt})", nxt >= 1)
        if i in resumed:
            snap = load(os.path.join(resumed[i], "stats.json"))
            at = snap["next_sequence"]
            check(f"{name}: two campaigns in its folder (stopped, then requeued)",
                  cum["campaigns"] == 2, str(cum["campaigns"]))
            # A sequence cut short by the stop counts nothing then; it is listed as unfinished
            # and the requeued campaign runs it first: every sequence counts once.
            cut = snap.get("unfinished", [])
            check(f"{name}: stopped mid-run, {snap['sequences']} sequence(s) run and"
                  f" {len(cut)} cut short (next_sequence {at})",
                  snap["sequences"] + len(cut) >= 1 and snap["pid"] != s["pid"]
                  and snap.get("stopped") is True and snap["finished"] is False,
                  f"pids {snap['pid']} {s['pid']}, stopped {snap.get('stopped')}")
            check(f"{name}: the requeued campaign ran the {len(cut)} cut short, then went on from"
                  f" {at} to {nxt}, each sequence once",
                  nxt > at and s["sequences"] + s["harness_errors"] == nxt - at + len(cut)
                  and s.get("unfinished") == [],
                  f"{s['sequences']} sequences, {s['harness_errors']} harness errors")
            ran = cum["sequences"] + cum["harness_errors"]
            check(f"{name}: the two campaigns ran the residue's first {nxt} sequences, each once",
                  ran == nxt, f"{ran} run")
            before = findings(resumed[i])
            after = findings(folder)
            lost = [f["id"] for sig, f in before.items()
                    if sig not in after or after[sig]["hits"] < f["hits"]]
            check(f"{name}: the {len(before)} finding(s) of the stopped campaign are all kept",
                  len(before) >= 1 and not lost, f"lost {lost}" if lost else "none found")
        else:
            check(f"{name}: its first {nxt} sequences of the residue, each run once",
                  cum["campaigns"] == 1 and s["sequences"] + s["harness_errors"] == nxt,
                  f"{s['sequences']} sequences, {s['harness_errors']} harness errors")
        residue = {sequence_seed(seed, i + k * count) for k in range(nxt)}
        found = findings(folder)
        stray = [f["id"] for f in found.values() if f["seed"] not in residue]
        check(f"{name}: its {len(found)} finding(s) come from its residue of the stream",
              not stray, f"not from shard {i}: {stray}")


def check_merged(shards, count, merged):
    folders = [os.path.join(shards, str(i)) for i in range(count)]
    per_shard = [findings(f) for f in folders]
    union = set().union(*per_shard)
    got = findings(merged)
    check(f"merged: the union of the shards' findings ({len(union)} signatures)",
          set(got) == union and len(union) >= 1,
          f"{len(got)} there, missing {len(union - set(got))}, extra {len(set(got) - union)}")
    for sig in sorted(union & set(got)):
        total = sum(p[sig]["hits"] for p in per_shard if sig in p)
        check(f"merged: {got[sig]['id']} has the shards' hits summed ({total})",
              got[sig]["hits"] == total, str(got[sig]["hits"]))
    m = load(os.path.join(merged, "stats.json"))
    stats = [load(os.path.join(f, "stats.json")) for f in folders]
    check("merged: stats.json merged from every shard",
          sorted(m.get("merged_from", [])) == sorted(os.path.realpath(f) for f in folders),
          str(m.get("merged_from")))
    want, want_cum = counts(stats[0]), counts(stats[0]["cumulative"])
    for s in stats[1:]:
        for k, v in counts(s).items():
            want[k] += v
        for k, v in counts(s["cumulative"]).items():
            want_cum[k] += v
    check("merged: counts are the shards' summed", counts(m) == want,
          f"{counts(m)} != {want}")
    check("merged: cumulative counts are the shards' summed",
          counts(m["cumulative"]) == want_cum, f"{counts(m['cumulative'])} != {want_cum}")
    check("merged: unique_findings counts the merged folders",
          m["unique_findings"] == len(got), str(m["unique_findings"]))
    check("merged: seed, backend and policy shared by the shards",
          m["seed"] == stats[0]["seed"] and m["backend"] == "sim" and
          m["policy"] == stats[0]["policy"], f"{m['seed']} {m['backend']} {m['policy']}")
    check("merged: start and update span the shards'",
          m["start_time"] == min(s["start_time"] for s in stats) and
          m["last_update"] >= max(s["last_update"] for s in stats))


def main(argv):
    if len(argv) >= 4 and argv[0] == "shards":
        resumed, only = {}, []
        rest = argv[4:]
        while rest:
            if rest[0] == "--only" and len(rest) >= 2:
                only.append(int(rest[1]))
            elif rest[0] == "--resumed" and len(rest) >= 2 and ":" in rest[1]:
                i, snap = rest[1].split(":", 1)
                resumed[int(i)] = snap
            else:
                return usage()
            rest = rest[2:]
        check_shards(argv[1], int(argv[2]), int(argv[3]), only, resumed)
    elif len(argv) == 4 and argv[0] == "merged":
        check_merged(argv[1], int(argv[2]), argv[3])
    else:
        return usage()
    return 1 if failures else 0


def usage():
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
