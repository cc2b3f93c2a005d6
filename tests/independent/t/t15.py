import sys; sys.path.insert(0, '..')
from build import *
r = R()
# Header byte 8 clear, t12.dtd: the DTD's live sets are read all the same (format.md §13), but
# metadata codes 8 and 9 are unknown codes: section 1 stops there, section 2 is read.
g = [r.rec(10, (0x100, 4)), r.rec(10, (0x200, 4)), r.rec(11, (1, 1))]   # 0x100
s1 = [r.section(1), r.rec(4, (16, 2), (0x1000, 4)), r.rec(6, (0, 1)),   # 0x1000
      r.meta(6, 1, 9, 2), r.rec(6, (0, 1))]
s2 = [r.section(2), r.rec(10, (0x300, 4)), r.rec(11, (1, 1))]           # escape 0
open('t15.mtf', 'wb').write(trace([(None, g), (1, s1), (2, s2)], 't12.dtd'))
