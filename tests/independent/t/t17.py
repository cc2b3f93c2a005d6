import sys; sys.path.insert(0, '..')
from build import *
r = R()
# 2 + 16 * 65,536 insertions into set 1 (a zero-width repeat holds at most 65,536 items, §6.4):
# the set keeps the newest 2^20, so 1 and 2 are gone and position 2^20 is an escape.
N = 1 << 20
g = [r.rec(4, (1, 1)), r.rec(4, (2, 1))] + [r.rec(5, (65536, 3))] * 16
g += [r.rec(6, (N, 3)),            # len 2^20: escape 0 (2 if the set had kept every value)
      r.rec(6, (N - 1, 3)),        # the oldest left: 7
      r.rec(6, (N + 4, 3))]        # len 2^20 - 1: escape 5
open('t17.mtf', 'wb').write(trace([(None, g)], 't17.dtd', ext=1))
