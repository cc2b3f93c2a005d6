import sys; sys.path.insert(0, '..')
from build import *
r = R()
g = [r.comment('x'), r.rec(4, (200,1)), r.rec(5, (2,1), b'hi', (2,1), (1,2), (2,2))]
one = [r.section(1), r.comment('y'), r.rec(4, (200,1)), r.rec(6, (200,1)), r.rec(5, (0,1), (0,1))]
open('t6.mtf','wb').write(trace([(None,g),(1,one)], 't6.dtd', nrecords=9))
