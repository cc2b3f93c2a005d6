import sys; sys.path.insert(0, '..')
from build import *
r = R()
vals = [r.section(2), r.rec(4, (0x10,2)), r.rec(4, (0x20,2)), r.rec(4, (0x30,2)),
        r.rec(5), r.rec(5)]        # alias elements: their own idx stride cursor 0,1 -> values 0x10, 0x20
main = [r.section(1),
  r.rec(4, (1,1),(1,2), (2,1),(0xffff,2)),        # n=2 default
  r.meta(4, 2, 3, 100),                           # r1.n_items.b delta 100
  r.rec(4, (1,1),(1,2), (2,1),(1,2)),
  r.meta(4, 1, 0, 1),                             # refused: width on default (count n)
  r.meta(4, 1, 1),                                # r1.n none -> width lastwidth = 0!
  r.rec(4),                                       # n = 0
  r.meta(4, 1, 0, 1),                             # r1.n width 1
  r.rec(4, (1,1), (9,1),(0,2)),
  r.rec(5, (3,1)),                                # idx #0 #1 #2
  r.meta(5, 2, 7, 2, 0xffffffff),                  # r2.idx sectionStride vals -1 -> cursor 0
  r.rec(5, (2,1)),                                # #0, #-1 -> error
  r.rec(6, (3,1), b'PADPAD'),                     # o=@3 -> pad width (3+1)*2-2 = 6
  r.rec(6, (0,1)),                                # o=@0 -> pad width 0
  r.rec(7, (2,1), b'abcd'),
  r.meta(7, 1, 0, 0),                             # r4.len width 0 -> len=0
  r.rec(7),
  r.meta(7, 1, 4, 1),                             # r4.len default 1
  r.rec(7, b'xy'),
  r.rec(9),                                       # unknown tag: region stops
  r.rec(7, b'zz'),
]
open('t5.mtf','wb').write(trace([(1,main),(2,vals)], 't5.dtd'))
