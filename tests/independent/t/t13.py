import sys; sys.path.insert(0, '..')
from build import *
r = R(cls=2, order='big')
# Class 2: the words of metadata codes 8 and 9 are 8 bytes, big-endian.
strs = [r.rec(7, r.comment('alpha')[1:]), r.rec(7, r.comment('be')[1:]), r.rec(7, r.comment('c')[1:])]
ev = [r.section(1),
      r.rec(4, (0, 1)),                 # s=@0, x=#0: set 2 [0 0]
      r.rec(4, (7, 1)),                 # s=@7, x=#1: set 2 [0 0 7 1]
      r.rec(5, (0, 1)), r.rec(5, (0, 1)),   # 1, then 7; set 2 [0 0]
      r.meta(6, 1, 9, 2),               # put.q enters set 2
      r.rec(6, (-16, 8)),               # 0xff0; set 2 [0 0 0xff0]
      r.rec(5, (0, 1)),                 # 0xff0
      r.meta(5, 1, 8, (1 << 32) + 2),   # refused: the whole 8-byte word counts
      r.meta(6, 1, 9, 1 << 32),         # refused
      r.rec(5, (5, 1)),                 # still live 2: escape 5 - 2 = 3
      r.rec(4, (11, 1)), r.rec(4, (0, 1)), r.rec(4, (7, 1)), r.rec(4, (11, 1))]
vals = [r.section(3),
        r.rec(8, (7, 1)),               # escape 7; [7]
        r.rec(8, (0, 1)),               # 7, out and back in; [7]
        r.rec(8, (5, 1)),               # escape 4; [7 4]
        r.meta(8, 1, 9, 0),
        r.rec(8, (1, 1)),               # 7; [4]
        r.rec(8, (0, 1)),               # 4; []
        r.rec(8, (0, 1))]               # escape 0
open('t13.mtf', 'wb').write(trace([(1, ev), (2, [r.section(2)] + strs), (3, vals)], 't13.dtd',
                                  cls=2, order='big', ext=1))
