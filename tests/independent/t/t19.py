import sys; sys.path.insert(0, '..')
from build import *
r = R()
B = lambda *vs: b''.join(bytes([v]) for v in vs)
g = [
    r.rec(4, B(2), b'ab'),     # v: d.width = 0 + ... + n.value (64 levels) = 2
    r.rec(5, B(1), b'x'),      # w: 64 pairs of parentheses around n.value = 1
    r.rec(6, B(3), b'xyz'),    # u: 1*...*n.value + 0 (64 levels) = 3
    r.rec(4, B(0)),            # v with n = 0: d is empty
]
open('t19.mtf', 'wb').write(trace([(None, g)], 't19.dtd'))
