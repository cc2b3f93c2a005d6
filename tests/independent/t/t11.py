import sys; sys.path.insert(0, '..')
from build import *
r = R()
# a: len reads no bytes (default 7); b: len is 2 bytes; metadata switches a.len to none, which
# restores its last non-zero width 2; then to default again (width 0, last width kept).
g = [r.rec(4, (1, 1)), r.rec(5, (300, 2)), r.meta(4, 1, 1), r.rec(4, (513, 2), (2, 1)),
     r.meta(4, 1, 4, 9), r.rec(4, (3, 1))]
open('t11.mtf', 'wb').write(trace([(None, g)], 't11.dtd', nrecords=6))
