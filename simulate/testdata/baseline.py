#!/usr/bin/env python3
"""Plain-Python baseline of kvcfg simulate's speed (docs/simulate.md#performance).

It replays a JSONL trace through the same SGLang bookkeeping as kvcfg's simulator with the radix cache
disabled (BenchmarkSimulateSGLangNoRadix's server: a 60,000-token pool, page 1, 256 running requests,
chunked prefill 8192, max prefill 16384, 0.02 s per step), written as a plain Python loop:

* arrivals join a FIFO queue; a prompt of max_req_len - 5 tokens or more is refused, max_new_tokens is
  clipped to max_req_len - prompt - 1 (max_req_len = pool - 1);
* prefill first: the PrefillAdder walk (reservation of min(M - out, 4096) x new_token_ratio per running
  request, admission iff extend + min(M - out, 4096) + 1 < available - total offset, the input and chunk
  budgets, the chunked continuation, the batch_is_full latch), one KV slot per new token from a free list;
* else decode: one slot per running request, new_token_ratio decay, retraction (fewest outputs, longest
  prompt first) with the ratio (outputs + 20 x survivors) / (max_new_tokens + 1), finished requests free
  their slots.

It prints the request-steps (one request in one step) per second. Its counts (steps, request_steps,
completed, retractions) equal the Go simulator's on the same trace, which is the check that the two do
the same bookkeeping:

    KVCFG_BENCH_TRACE=/tmp/bench.jsonl go test ./simulate -run TestWriteBenchTrace
    python3 simulate/testdata/baseline.py /tmp/bench.jsonl
    go test ./simulate -run '^$' -bench SimulateSGLangNoRadix -benchtime 20x
"""
import json
import sys
import time
from collections import deque

INIT_RATIO, MIN_FACTOR, DECAY_STEPS, RETRACT_STEPS, CLIP = 0.7, 0.14, 600, 20, 4096
NO_TOKEN, OTHER, CONTINUE = 1, 2, 0


class Req:
    __slots__ = ("arrival", "p", "m", "out", "locs", "done")

    def __init__(self, arrival, p, m):
        self.arrival, self.p, self.m, self.out, self.locs, self.done = arrival, p, m, 0, [], False


class Sim:
    def __init__(self, pool, max_running, chunk, max_prefill=16384):
        self.pool, self.max_running, self.chunk, self.max_prefill = pool, max_running, chunk, max_prefill
        self.free = list(range(1, pool + 1))
        self.waitq, self.run, self.chunked, self.latch = deque(), [], None, False
        self.init_ratio = INIT_RATIO
        self.min_ratio = self.init_ratio * MIN_FACTOR
        self.decay = (self.init_ratio - self.min_ratio) / DECAY_STEPS
        self.ratio = self.init_ratio
        self.unservable = self.completed = self.retractions = self.output_tokens = 0

    def arrive(self, arrival, p, m):
        max_len = self.pool - 1
        if p >= max_len - 5:
            self.unservable += 1
            return
        self.waitq.append(Req(arrival, p, min(m, max_len - p - 1)))

    def busy(self):
        return bool(self.waitq or self.run or self.chunked)

    def finish(self, r):
        self.free.extend(r.locs)
        r.locs = []
        r.done = True
        self.completed += 1
        self.output_tokens += r.m

    def step(self):
        """One iteration: the number of requests in its batch (0: idle)."""
        n = self.prefill()
        return n if n else self.decode()

    def prefill(self):
        if (self.latch or not self.waitq) and self.chunked is None:
            return 0
        if len(self.run) >= self.max_running and self.chunked is None:
            self.latch = True
            return 0
        avail = len(self.free)
        ad = [0.0, 0.0, self.max_prefill, self.chunk]  # total offset, current offset, input, chunk budgets
        for r in self.run:
            if not r.done:
                ad[0] += min(r.m - r.out, CLIP) * self.ratio
        batch, extends, new_chunked = [], [], None
        cont = self.chunked
        if cont is not None:
            budget = min(ad[3], int(avail - ad[0]))
            if budget <= 0:
                budget = ad[3]
            left = cont.p + cont.out - len(cont.locs)
            ext = min(left, budget)
            self.reserve(ad, ext, min(cont.m, CLIP) if ext == left else 0)
            batch.append(cont)
            extends.append(ext)
            self.chunked = None
        idle_server = cont is None and not any(not r.done for r in self.run)
        admitted = 0
        for r in self.waitq:
            if len(batch) >= self.max_running - len(self.run):
                self.latch = True
                break
            fill = r.p + r.out
            res, ok = NO_TOKEN, False
            if fill + min(max(r.m - r.out, 0), CLIP) + 1 < avail - ad[0]:
                ext, reserved = fill, min(r.m, CLIP)
                if fill > ad[3]:
                    ext, reserved, new_chunked = ad[3], 0, r
                if ext > 0:
                    ok = True
                    self.reserve(ad, ext, reserved)
                    res = NO_TOKEN if avail - ad[0] <= 0 or avail - ad[1] <= 0 else OTHER if ad[2] <= 0 or ad[3] <= 0 else CONTINUE
                else:
                    res = OTHER
            if ok:
                admitted += 1
                batch.append(r)
                extends.append(ext)
            if res == NO_TOKEN:
                self.latch = True
                if not ok and admitted == 0 and idle_server:
                    self.waitq.popleft()
                    self.unservable += 1
                    self.latch = False
                    return -1  # idle step
                break
            if res == OTHER:
                break
        for _ in range(admitted):
            self.waitq.popleft()
        if not batch:
            return 0
        free = self.free
        for r, ext in zip(batch, extends):
            r.locs.extend(free[len(free) - ext:])
            del free[len(free) - ext:]
        shrank = False
        for r in batch:
            if r is new_chunked or len(r.locs) < r.p + r.out:
                self.chunked = r
                continue
            r.out += 1
            if r.out >= r.m:
                self.finish(r)
                shrank = True
                continue
            self.run.append(r)
        if shrank:
            self.latch = False
        return len(batch)

    @staticmethod
    def reserve(ad, ext, reserved):
        ad[0] += ext + 1 + reserved
        ad[1] += ext + 1
        ad[2] -= ext
        ad[3] -= ext

    def decode(self):
        run = [r for r in self.run if not r.done]
        if len(run) < len(self.run):
            self.latch = False
        self.run = run
        if not run:
            self.ratio = self.init_ratio
            return 0
        if len(self.free) >= len(run):
            self.ratio = max(self.ratio - self.decay, self.min_ratio)
        else:
            self.retract()
            run = self.run
            if not run:
                return 0
        free = self.free
        for r in run:
            r.locs.append(free.pop())
            r.out += 1
            if r.out >= r.m:
                self.finish(r)
        return len(run)

    def retract(self):
        run = self.run
        order = sorted(range(len(run)), key=lambda i: (-run[i].out, run[i].p))
        victims, first = [], True
        while first or len(self.free) < len(order):
            if len(order) == 1:
                if len(self.free) < 1:
                    r = run[order.pop()]
                    self.free.extend(r.locs)
                    r.locs, r.done = [], True
                    self.unservable += 1
                break
            first = False
            v = run[order.pop()]
            self.free.extend(v.locs)
            v.locs, v.done = [], True
            victims.append(v)
        self.run = [r for r in run if not r.done]
        for v in victims:
            v.done = False
            self.waitq.append(v)
        self.retractions += len(victims)
        self.latch = False
        out = sum(r.out for r in self.run)
        m = sum(r.m for r in self.run)
        self.ratio = min(1.0, (out + RETRACT_STEPS * len(self.run)) / (m + 1))


def replay(trace, sim, step_s=0.02):
    now, i, steps, req_steps, idles = 0.0, 0, 0, 0, 0
    while True:
        while i < len(trace) and trace[i][0] <= now:
            sim.arrive(*trace[i])
            i += 1
        if not sim.busy():
            if i == len(trace):
                return steps, req_steps
            now = trace[i][0]
            continue
        n = sim.step()
        if n <= 0:
            idles += 1
            if idles > 3 and n == 0:
                raise RuntimeError("no progress")
            continue
        idles = 0
        steps += 1
        req_steps += n
        now += step_s


def main():
    with open(sys.argv[1]) as f:
        trace = [(d["arrival_s"], d["prompt_tokens"], d["output_tokens"]) for d in map(json.loads, f) if d]
    best = None
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
        sim = Sim(pool=60000, max_running=256, chunk=8192)
        t0 = time.perf_counter()
        steps, req_steps = replay(trace, sim)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    print(json.dumps({"steps": steps, "request_steps": req_steps, "completed": sim.completed,
                      "unservable": sim.unservable, "retractions": sim.retractions,
                      "output_tokens": sim.output_tokens, "best_s": round(best, 4),
                      "request_steps_per_s": round(req_steps / best), "ns_per_request_step": round(best / req_steps * 1e9, 1)}))


if __name__ == "__main__":
    main()
