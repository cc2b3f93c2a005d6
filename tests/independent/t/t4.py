import sys; sys.path.insert(0, '..')
from build import *
r = R()
N = 20
chain = [r.section(2)] + [r.rec(4, (2*(i+1),1)) for i in range(N)] + [r.rec(5, (99,1))]
main = [r.section(1)] + [r.rec(4, (2*k,1)) for k in range(N+1)]
open('t4.mtf','wb').write(trace([(1,main),(2,chain)], 't4.dtd'))
