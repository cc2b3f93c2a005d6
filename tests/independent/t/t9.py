import sys; sys.path.insert(0, '..')
from build import *
r = R()
B = lambda *vs: b''.join(bytes([v]) for v in vs)
g = [
    r.rec(4, B(2, 1, 2), b'xy'),          # v n=2 a=[1 2] d = 2 bytes (the last a)
    r.rec(4, B(0)),                       # v n=0: a never occurred, d is 0 bytes
    r.rec(4, B(1, 3), b'abc'),
    # w: item 1 has a=[3] d 3 bytes; item 2 has no a, but item 1's a is the most recent: 3 bytes
    r.rec(5, B(2, 1, 3), b'pqr', B(0), b'stu'),
    r.rec(5, B(1, 0)),                    # w: a never occurred in this record: d is 0 bytes
    # s: y=1, vfield length 6 but only 3 bytes left in the region; f (fixed 6, is 5) and x unread
    r.rec(6, B(1, 6), b'abc'),
]
one = [r.section(1), r.rec(7, (9, 1)), r.rec(4, B(0))]
open('t9.mtf', 'wb').write(trace([(None, g), (1, one)], 't9.dtd'))
