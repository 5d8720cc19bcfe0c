#!/usr/bin/env python3
"""bench/isolate.py - keep the host's other work off a benchmark's CPUs.

    bench/isolate.py --cpus LIST --save FILE [--spare PID...]
    bench/isolate.py --restore FILE

A production host gives the collector's drain threads cores of their own
(isolcpus, or a cpuset); a benchmark machine does not, and when its other
CPUs get busy the scheduler moves its own threads (kernel memory monitors,
RCU, unbound workers, daemons) onto the drain thread's CPU. --cpus takes
every thread that may run on one of LIST and on some CPU outside it off
LIST, as a cpuset would, and writes each thread's former CPUs to FILE
("tid cpu,cpu,..." a line); threads of the --spare processes are left
alone, and so are threads the kernel will not move (per-CPU kernel
threads). --restore gives them back. Threads started later are not moved.
Needs root to move other users' threads.
"""
import argparse
import os
import sys


def cpu_list(text):
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def threads():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                yield int(pid), int(tid)
        except OSError:
            continue


def isolate(cpus, save, spare):
    moved = 0
    with open(save, "w") as out:
        for pid, tid in threads():
            if pid in spare:
                continue
            try:
                allowed = os.sched_getaffinity(tid)
            except OSError:
                continue
            rest = allowed - cpus
            if rest == allowed or not rest:
                continue
            try:
                os.sched_setaffinity(tid, rest)
            except OSError:
                continue
            out.write("%d %s\n" % (tid, ",".join(map(str, sorted(allowed)))))
            moved += 1
    print("bench/isolate.py: %d threads moved off CPUs %s" % (moved, ",".join(map(str, sorted(cpus)))),
          file=sys.stderr)


def restore(save):
    with open(save) as f:
        for line in f:
            tid, _, allowed = line.partition(" ")
            try:
                os.sched_setaffinity(int(tid), cpu_list(allowed.strip()))
            except OSError:
                pass  # the thread has ended
    os.unlink(save)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpus", type=cpu_list)
    ap.add_argument("--save")
    ap.add_argument("--spare", type=int, nargs="*", default=[])
    ap.add_argument("--restore")
    a = ap.parse_args()
    if a.restore:
        restore(a.restore)
    elif a.cpus and a.save:
        isolate(a.cpus, a.save, set(a.spare) | {os.getpid()})
    else:
        ap.error("--cpus LIST --save FILE, or --restore FILE")


if __name__ == "__main__":
    main()
