import sys; sys.path.insert(0, '..')
from build import *
r = R()
# format.md §9.2: section 1 begins with a `section` record numbered 2, and `section` records
# stand in the global region and after a section's first record. Each is reported; the regions
# are decoded on, in the scope of the section table's id (ra, one byte, in section 1).
g = [r.comment('global'), r.section(2)]
s1 = [r.section(2), r.rec(4, (7, 1)), r.section(1), r.rec(4, (8, 1))]
s2 = [r.section(2), r.rec(4, (1, 1), (2, 1))]
open('t18.mtf', 'wb').write(trace([(None, g), (1, s1), (2, s2)], 't18.dtd'))
