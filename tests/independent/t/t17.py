import sys; sys.path.insert(0, '..')
from build import *
r = R()
# 2 + 64 * 16,384 insertions into set 1 (items of no bytes: a record holds at most 64 occurrences
# per byte, §6.4, hence the 255 bytes of padding in each `fill`): the set keeps the newest 2^20,
# so 1 and 2 are gone and position 2^20 is an escape.
N = 1 << 20
pad = bytes([255]) + bytes(255)
g = [r.rec(4, (1, 1)), r.rec(4, (2, 1))] + [r.rec(5, pad, (16384, 3))] * 64
g += [r.rec(6, (N, 3)),            # len 2^20: escape 0 (2 if the set had kept every value)
      r.rec(6, (N - 1, 3)),        # the oldest left: 7
      r.rec(6, (N + 4, 3))]        # len 2^20 - 1: escape 5
open('t17.mtf', 'wb').write(trace([(None, g)], 't17.dtd', ext=1))
