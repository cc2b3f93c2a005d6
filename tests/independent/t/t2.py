import sys; sys.path.insert(0, '..')
from build import *
r = R(cls=1, order='little')
g = [
  r.rec(4, (1,4), (2,1), (5,2), (0xfffd,2)),          # ev v=1 dflt=9 d=[5 2]
  r.meta(4, 1, 4, 7),                                # ev.v default 7
  r.rec(4, (0,1)),                                   # v=7
  r.meta(4, 1, 1),                                   # ev.v none -> width 4
  r.rec(4, (0x11223344,4), (0,1)),
  r.meta(4, 2, 1),                                   # ev.dflt none -> width lastwidth=0
  r.rec(4, (5,4), (0,1)),
  r.meta(4, 2, 0, 2),                                # ev.dflt width 2
  r.rec(4, (5,4), (0x1234,2), (0,1)),
  r.meta(4, 2, 4, 3),                                # ev.dflt default 3
  r.meta(4, 2, 0, 1),                                # refused: width on default
  r.meta(4, 2, 1),                                   # none -> width 2 again
  r.rec(4, (5,4), (0x4321,2), (0,1)),
  r.meta(4, 1, 0, 0),                                # ev.v width 0
  r.meta(4, 1, 2, 1000),                             # baseOffset 1000 -> width 4 (lastwidth)
  r.rec(4, (0xfffffffe,4), (1,2), (0,1)),            # v = 998
  r.meta(4, 4, 3, 0xfffffff0),                       # ev.d delta 4294967280
  r.rec(4, (0,4), (0,2), (2,1), (1,2), (1,2)),
  r.meta(4, 0, 1),                                   # refused: tag slot
  r.meta(4, 9, 1),                                   # refused: no slot
  r.meta(4, 1, 0, 9),                                # refused: width 9
  r.meta(99, 1, 1),                                  # refused: unknown record tag
  r.meta(4, 1, 5, 9),                                # refused: section 9 undeclared
  r.meta(4, 1, 7, 9, 1),                             # refused: sectionStride 9
  r.meta(2, 1, 1),                                   # refused: section record
  r.meta(1, 2, 1),                                   # refused: comment.vfield.data is a byte string
  r.meta(5, 1, 6, 10, 0xfffffffe),                   # glob.x stride 10 -2
  r.rec(5), r.rec(5),
  r.meta(1, 1, 0, 2),                                # comment.vfield.length width 2
  r.tag(1) + r.i(3,2) + b'abc',
]
strs = [r.section(3)]
offs = []
def add(lst, rec, content_start):
    offs.append(sum(len(x) for x in lst) - content_start)
    lst.append(rec)
add(strs, r.rec(6, (5,1), b'hello'), 2)
add(strs, r.rec(6, bytes([12]) + b'a"b\\c\n\x01\xff\xc3\xa9\t\x00'), 2)
strs.append(r.comment('not an element'))
add(strs, r.rec(7, (0xbeef,2)), 2)
print('string offsets', offs)
ptrs = [r.section(2),
  r.rec(6, (1,1), (offs[0],2)),
  r.rec(6, (2,1), (offs[1],2)),
  r.meta(6, 1, 4, 77),                               # ptr.x default 77 (metadata in a table section)
  r.rec(6, (offs[2],2)),
]
main = [r.section(1),
  r.rec(6, (0,1), (offs[1],2), (1,1)),              # p=@0 -> ptr0 -> "hello"
  r.rec(6, (4,1), (offs[2],2), (2,1)),              # p=@4 -> ptr1
  r.rec(6, (8,1), (offs[0],2), (3,1)),              # p=@8 -> ptr2 (x default, 2 bytes) -> num
  r.meta(6, 3, 7, 3, 2),                             # use.x sectionStride strings 2
  r.meta(6, 1, 7, 2, 1),                             # use.p sectionStride ptrs 1
  r.rec(6, (offs[0],2)),
  r.rec(6, (offs[0],2)),
  r.meta(6, 3, 7, 3, 0xffffffff),                    # use.x sectionStride strings -1 (reset cursor)
  r.rec(6, (offs[0],2)),
  r.rec(7),
  r.rec(4, (1,4), (0,1)),                            # ev with DTD defaults again
  r.meta(1, 1, 0, 2),
  r.tag(1) + r.i(2,2) + b'zz',
]
open('t2.mtf','wb').write(trace([(None,g),(3,strs),(2,ptrs),(1,main)], 't2.dtd'))
