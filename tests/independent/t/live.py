"""Writes live.txt: an alloc/free trace in the text form for hatf10.dtd, which conformance.sh
packs and re-encodes with `mtf compact --live` (live sets chosen by the encoder, format.md §13).
Most frees take a recent block; some free NULL or a small address never allocated (escapes), addresses
are reused after a free, and one address is allocated twice while live."""
import random
rnd = random.Random(13)
out = ['%mtf 1 dtd="hatf10.dtd" class=32 order=little', 'section number=1:heap']
live, freed = [], []
nxt = 0x10000
tail = 'vfield.data=""'
for i in range(400):
    x = rnd.random()
    if live and x < 0.42:
        k = min(len(live) - 1, int(rnd.expovariate(0.8)))
        a = live.pop(len(live) - 1 - k)
        freed.append(a)
        out.append('free address=%d %s' % (a, tail))
    elif x < 0.45:
        out.append('free address=%d %s' % (rnd.choice([0, 0, 8 * rnd.randrange(1, 24)]), tail))
    elif live and x < 0.52:
        old = live.pop()
        new = nxt; nxt += 64
        live.append(new)
        out.append('realloc address=%d address_2=%d %s' % (old, new, tail))
    else:
        sz = rnd.choice([16, 24, 32, 48, 64, 128])
        if freed and rnd.random() < 0.3:
            a = freed.pop()
        elif live and rnd.random() < 0.02:
            a = live[-1]                      # the same address twice in the set
        else:
            a = nxt; nxt += (sz + 15) // 16 * 16 + 16
        live.append(a)
        out.append('alloc size=%d address=%d %s' % (sz, a, tail))
open('live.txt', 'w').write('\n'.join(out) + '\n')
