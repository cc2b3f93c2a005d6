import sys; sys.path.insert(0, '..')
from build import *
r = R()
# Header byte 8 = 1 (live/1) on a Meta-TF 1.0 trace that uses no live set (t11.dtd): a writer
# must not set the bit (format.md §13), but nothing tells a reader to refuse it; mtf reads it.
g = [r.rec(4, (1, 1)), r.rec(5, (300, 2)), r.meta(4, 1, 1), r.rec(4, (513, 2), (2, 1))]
open('t16.mtf', 'wb').write(trace([(None, g)], 't11.dtd', ext=1))
