import sys; sys.path.insert(0, '..')
from build import *
r = R()
g = [r.comment('a'), r.meta(1, 1, 8, 5), r.comment('lost')]
one = [r.section(1), r.comment('y'), r.rec(6, (1,1)), r.rec(6)]   # truncated last record
two = [r.comment('no section record')]
open('t7.mtf','wb').write(trace([(None,g),(1,one)], 't6.dtd'))
