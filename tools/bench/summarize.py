#!/usr/bin/env python3
"""tools/bench/summarize.py: turn tools/bench/bench.sh's raw runs into its table.

    summarize.py RUNS.tsv COUNTS.tsv

RUNS.tsv: "workload variant round wall_s cpu_s bytes" per run, where variant is
native, memtrace, mt-sampled, mt-bpf, bpftrace (counting probes), heaptrack (a recording) or memtrace-report,
mt-bpf-report, heaptrack-report (reading one).  COUNTS.tsv: "workload allocations frees" from memtrace's JSON
report.  Every figure printed is a median over the rounds; "spread" is the
wall time's (max - min) / median, a rough noise gauge.  Per-event figures
divide by allocations + frees: ns/event is (t_variant - t_native) / events.
"""

import statistics
import sys


def load(path):
    with open(path) as f:
        return [line.split() for line in f if line.strip() and not line.startswith("#")]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: summarize.py RUNS.tsv COUNTS.tsv")
    runs = {}
    order = []
    for wl, variant, _rnd, wall, cpu, size in load(sys.argv[1]):
        if wl not in order:
            order.append(wl)
        runs.setdefault((wl, variant), []).append((float(wall), float(cpu), int(size)))
    counts = {wl: (int(a), int(f)) for wl, a, f in load(sys.argv[2])}

    def med(wl, variant, i):
        rows = runs.get((wl, variant))
        return statistics.median(r[i] for r in rows) if rows else None

    head = ("variant", "wall s", "x nat", "spread", "cpu s", "x nat",
            "ns/ev wall", "ns/ev cpu", "bytes", "B/event", "report s")
    fmt = "%-10s %8s %6s %7s %8s %6s %10s %10s %9s %8s %9s"
    for wl in order:
        allocs, frees = counts.get(wl, (0, 0))
        events = allocs + frees
        print()
        n = len(runs.get((wl, "native"), []))
        print("%s: %s allocations + %s frees = %s events, %d round%s"
              % (wl, "{:,}".format(allocs), "{:,}".format(frees), "{:,}".format(events),
                 n, "" if n == 1 else "s"))
        print(fmt % head)
        nat_wall, nat_cpu = med(wl, "native", 0), med(wl, "native", 1)
        for variant in ("native", "memtrace", "mt-sampled", "mt-bpf", "mt-probes", "bpftrace",
                        "heaptrack"):
            rows = runs.get((wl, variant))
            if not rows:
                continue
            wall, cpu = med(wl, variant, 0), med(wl, variant, 1)
            walls = [r[0] for r in rows]
            spread = "%.0f%%" % (100 * (max(walls) - min(walls)) / wall) if wall else "-"
            cells = [variant, "%.3f" % wall, "%.2f" % (wall / nat_wall), spread,
                     "%.3f" % cpu, "%.2f" % (cpu / nat_cpu) if nat_cpu else "-"]
            if variant == "native":
                cells += ["-"] * 5
            elif variant in ("bpftrace", "mt-probes"):  # records nothing
                cells += ["%.0f" % ((wall - nat_wall) * 1e9 / events) if events else "-",
                          "%.0f" % ((cpu - nat_cpu) * 1e9 / events) if events else "-",
                          "-", "-", "-"]
            else:
                size = med(wl, variant, 2)
                rep = med(wl, variant + "-report", 0)
                cells += ["%.0f" % ((wall - nat_wall) * 1e9 / events) if events else "-",
                          "%.0f" % ((cpu - nat_cpu) * 1e9 / events) if events else "-",
                          "%d" % size, "%.3f" % (size / events) if events else "-",
                          "%.3f" % rep if rep is not None else "-"]
            print(fmt % tuple(cells))
        bt, mb = med(wl, "bpftrace", 0), med(wl, "mt-bpf", 0)
        btc, mbc = med(wl, "bpftrace", 1), med(wl, "mt-bpf", 1)
        if bt and mb:
            print("mt-bpf / bpftrace counting the same three probes: %.2fx the wall time, "
                  "%.2fx the time over native, %.2fx the CPU time over native"
                  % (mb / bt, (mb - nat_wall) / (bt - nat_wall) if bt > nat_wall else float("nan"),
                     (mbc - nat_cpu) / (btc - nat_cpu) if btc > nat_cpu else float("nan")))
        pr, prc = med(wl, "mt-probes", 0), med(wl, "mt-probes", 1)
        if pr and mb and pr > nat_wall:
            print("mt-bpf over the same probes with programs that return at once (mt-probes): "
                  "%.2fx the time over native, %.2fx the CPU time over native"
                  % ((mb - nat_wall) / (pr - nat_wall),
                     (mbc - nat_cpu) / (prc - nat_cpu) if prc > nat_cpu else float("nan")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
