import sys; sys.path.insert(0, '..')
from build import *
r = R(cls=2, order='big', tw=2)
tab = [r.section(2),
  r.rec(0x20, (0,1)),                 # @0  ez n=0
  r.rec(0x20, (2,1), (5,1), (6,1)),   # @3  ez n=2 x=[5 6]
  r.rec(0x21, (7,1)),                 # @8  ed x=7 y=42
  r.comment('c'),                     # @11 comment (not an element)
  r.rec(0x22, (0,1)),                 # @15 ev empty vfield
  r.meta(0x21, 2, 0, 0),              # @18 refused: width 0 on default... (allowed: width 0)
  r.rec(0x21, (9,1)),                 # @32
]
cyc = [r.section(3),
  r.rec(0x20, (3,1)),                 # @0 -> @3
  r.rec(0x20, (0,1)),                 # @3 -> @0   (cycle)
  r.rec(0x20, (6,1)),                 # @6 -> @6   (self)
]
g = [
  r.rec(0x10, (0xfffe,2)),
  r.rec(0x11, (0x80,1), bytes(range(1,11))),
  r.rec(0x12, (2,1), (2,1), b'ab', (0,1)),
  r.rec(0x13, (0xffff,2), (0x7f,1)),
  r.meta(0x13, 1, 2, 0xffffffffffffff00),    # hx.h baseOffset 2^64-256
  r.rec(0x13, (0x10,2), (0x80,1)),
  r.meta(0x13, 2, 0, 2),                     # hx.s width 2 (signed display)
  r.rec(0x13, (0x10,2), (0xff80,2)),
  r.meta(0x13, 2, 3, 0x8000000000000000),    # hx.s delta 2^63
  r.rec(0x13, (0x10,2), (0xffff,2)),
  r.meta(0x13, 1, 6, 0xfffffffffffffff0, 0xffffffffffffffff),  # hx.h stride -16 -1
  r.rec(0x13, (1,2)),
  r.rec(0x14, (10,1), b'\x7f\xc2\x85\xe2\x80\x8b\xef\xbb\xbf\r'),
  r.rec(0x14, (5,1), b'\xe2\x82\xc3\xa9!'),
  r.meta(0x13, 1, 0, 3),                     # refused: width on stride
]
sec = [r.section(1),
  r.rec(0x20, (0xff,1)),
  r.rec(0x15, (0,1), (0,1)),
  r.rec(0x15, (3,1), (3,1)),
  r.rec(0x15, (8,1), (6,1)),
  r.rec(0x15, (11,1), (0,1)),
  r.rec(0x15, (15,1), (0,1)),
  r.rec(0x15, (18,1), (0,1)),
  r.rec(0x15, (32,1), (0,1)),
]
open('t3.mtf','wb').write(trace([(None,g),(1,sec),(2,tab),(3,cyc)], 't3.dtd', cls=2, order='big', intwidth=8))
