import sys; sys.path.insert(0, '..')
from build import *
r = R(cls=2, order='big', tw=2)
g = [
  r.comment('tw2 be64'),
  r.rec(0x100, (2,1), (1,1),(0x203,2), (0xff,1),(0xfffe,2)),
  r.rec(0x100, (0,1)),
  r.rec(0x101, (2,1), (2,1),(7,1),(8,1), (1,1),(9,1)),
  r.rec(0x101, (1,1), (0,1)),
  r.rec(0x102, (2,1), (5,1),(1,1),(6,1), (7,1),(0,1)),
  r.rec(0x103, (3,1), (1,1),(2,1),(3,1)),
  r.rec(0x103, (0,1)),
  r.rec(0x104, (2,1), (1,1),(10,1), (2,1),(0xfb,1)),
  r.rec(0x105, (3,1), (1,1),(2,1),(0xff,1), (1,1)),
  r.rec(0x105, (0,1), (1,1)),
  r.rec(0x106, (0xffff,2), (0xff,1), (0xdeadbeef,4)),
  r.rec(0x106, (0x7fff,2), (0x80,1), (0,4)),
  r.rec(0x107, (1,1),(2,2),(3,1),(4,1),(5,1),(6,1)),
  r.rec(0x108, (2,1), (2,1), b'hi', (0,1)),
  r.rec(0x109, (2,1), (1,1), (2,1)),
]
open('t1.mtf','wb').write(trace([(None,g)], 't1.dtd', cls=2, order='big'))
g.append(r.rec(0x10a, (2,1), (3,1),(4,1), (2,1), (1,1),(5,1), (0,1)))
open('t1.mtf','wb').write(trace([(None,g)], 't1.dtd', cls=2, order='big'))
g += [r.meta(0x101, 2, 0, 2), r.meta(0x101, 3, 0, 2), r.meta(0x100, 2, 0, 2), r.meta(0x104, 3, 0, 2),
      r.meta(0x10a, 2, 0, 2), r.meta(0x10a, 4, 0, 2), r.meta(0x10a, 5, 0, 2), r.meta(0x108, 2, 0, 2),
      r.rec(0x101, (1,1), (1,2), (0x102,2))]
open('t1.mtf','wb').write(trace([(None,g)], 't1.dtd', cls=2, order='big'))
