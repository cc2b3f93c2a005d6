import sys; sys.path.insert(0, '..')
from build import *
r = R()
A = lambda v: (v, 4)
M64 = (1 << 64) - 1
# Extension live/1 (header byte 8 = 1). Sets are per scope and start empty; the live metadata
# state (interpretation live N = code 8, liveset N = code 9) too.
g = [r.rec(10, A(0x100)), r.rec(10, A(0x180)),           # global set 1: [100 180]
     r.rec(11, (0, 1)),                                  # 0x180; set 1: [100]
     r.rec(11, (5, 1)),                                  # escape: 5 - len 1 = 4
     r.rec(12, (5, 1)),
     r.meta(10, 1, 9, 2), r.rec(10, A(0x200))]           # galloc now fills set 2
s1 = [r.section(1),
      r.rec(11, (0, 1)),                                 # sets start empty: escape 0
      r.rec(10, A(0x300)), r.rec(11, (0, 1)),            # galloc fills set 1 again: 0x300
      r.rec(4, (16, 2), A(0x1000)), r.rec(4, (16, 2), A(0x2000)),
      r.rec(4, (16, 2), A(0x1000)),                      # inserted twice: [1000 2000 1000]
      r.rec(6, (2, 1)),                                  # oldest: 0x1000; [2000 1000]
      r.rec(6, (0, 1)),                                  # 0x1000; [2000]
      r.rec(6, (0x11, 1)),                               # escape 0x10; [2000]
      r.rec(9, (0, 1)),                                  # 0x2000 (fixed value ok); set 2: [2000]
      r.rec(9, (0, 1)),                                  # escape 0: not the fixed value; set 2: [2000 0]
      r.meta(6, 1, 8, 2), r.rec(6, (1, 1)),              # free reads set 2: 0x2000; set 2: [0]
      r.meta(4, 3, 8, 4),                                # tid: default -> live 4, width := last width 2
      r.rec(4, (32, 2), A(0x3000), (0x101, 2)),          # tid: escape 0x101
      r.meta(4, 2, 9, 0),                                # alloc.address enters no set
      r.rec(4, (8, 2), A(0x4000), (0, 2)),               # set 1 stays [3000]
      r.rec(7),                                          # 0x3000, out and back in
      r.rec(5, (0, 1), (64, 2), A(0x5000)),              # old 0x3000; set 1: [5000]
      r.meta(7, 1, 9, 0),
      r.rec(7), r.rec(7),                                # 0x5000, then escape 0
      r.rec(8, (M64, 8)),                                # set 16 empty: 2^64-1 (-1)
      r.meta(8, 1, 9, 16),
      r.rec(8, (M64, 8)),                                # -1; set 16: [-1]
      r.rec(8, (M64, 8)),                                # escape 2^64-2 (-2); [-1 -2]
      r.rec(8, (1, 8)),                                  # -1, moved to the newest: [-2 -1]
      r.rec(13, (2, 1)), r.rec(13, (5, 1)),              # set 3: [2 5]
      r.rec(14, A(0xa0), A(0xa1), A(0xa2), A(0xa3), A(0xa4)),   # count 5 from set 3
      r.rec(11, (3, 1)),                                 # 0xa1 out of [a0 a1 a2 a3 a4]
      r.rec(15, b'hi'),                                  # length 2 from set 3
      r.rec(14),                                         # set 3 still empty: count 0
      r.meta(6, 1, 8, 0), r.meta(6, 1, 8, 17),           # refused: live 0, live 17
      r.meta(6, 1, 9, 17), r.meta(6, 0, 9, 1),           # refused: liveset 17, the tag
      r.meta(15, 2, 8, 1),                               # refused: a byte string
      r.rec(6, (0, 1)),                                  # still set 2: 0
      r.meta(6, 1, 0, 2), r.rec(6, (0x102, 2)),          # a live field's width: escape 0x102
      r.meta(6, 1, 8, 16), r.rec(6, (1, 2))]             # set 16 [-2 -1]: position 1 is -2
s2 = [r.section(2), r.rec(11, (0, 1))]                   # a new scope: empty sets, escape 0
open('t12.mtf', 'wb').write(trace([(None, g), (1, s1), (2, s2)], 't12.dtd', ext=1))
