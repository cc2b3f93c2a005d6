#!/usr/bin/env python3
"""A malloc-lab `.rep` trace in the manner of CS:APP's random and realloc traces, for
docs/replay.md: deterministic (seeded), 3rd-edition header.

    python3 benches/malloclab-synth.py [OPS] [SEED] > synth.rep

Allocations of 1..4096 bytes (a quarter of them 1..64), each freed later in random order, with
every 8th live block grown by realloc; at the end everything is freed.
"""
import random
import sys

ops_wanted = int(sys.argv[1]) if len(sys.argv) > 1 else 40000
rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 18)
lines, live, next_id = [], [], 0
while len(lines) < ops_wanted - len(live):
    r = rng.random()
    if not live or r < 0.5:
        size = rng.randint(1, 64) if rng.random() < 0.25 else rng.randint(1, 4096)
        lines.append(f"a {next_id} {size}")
        live.append((next_id, size))
        next_id += 1
    elif r < 0.56:
        i = rng.randrange(len(live))
        bid, size = live[i]
        size = size + rng.randint(1, 2 * size)
        live[i] = (bid, size)
        lines.append(f"r {bid} {size}")
    else:
        bid, _ = live.pop(rng.randrange(len(live)))
        lines.append(f"f {bid}")
for bid, _ in live:
    lines.append(f"f {bid}")
print(1)
print(next_id)
print(len(lines))
print(1)
print("\n".join(lines))
