import sys; sys.path.insert(0, '..')
from build import *
r = R()
# Header byte 8 (extensions) = 0x03: bit 1 is no extension a reader knows, so the trace is
# refused at the header (format.md §13), although it is t12.dtd's and uses live/1.
g = [r.rec(10, (0x100, 4)), r.rec(11, (0, 1))]
open('t14.mtf', 'wb').write(trace([(None, g)], 't12.dtd', ext=3))
