import sys; sys.path.insert(0, '..')
from build import *
r = R()
B = lambda *vs: b''.join(bytes([v]) for v in vs)
recs = [
    # r1 n=1 n_items=[{n=2 n_items=[{a=1 b=2} {a=3 b=4}]}]
    r.rec(4, B(1, 2, 1, 2, 3, 4)),
    # r2 m=2 p=[{k=1 pc=[9]} {k=0 pc=[]}]
    r.rec(5, B(2, 1, 9, 0)),
    # r3 g.k=2 items {b=5 k=1 [{6 7}]} {b=8 k=0}
    r.rec(6, B(2, 5, 1, 6, 7, 8, 0)),
    # r4 k=2 [7 8]  k_2=1 [9]  k_3=2 [1 2]  n=2 [3 4]
    r.rec(7, B(2, 7, 8, 1, 9, 2, 1, 2, 2, 3, 4)),
    # r5 n=2 [1 2], n_2=1 [3], n_3=1 {m=1 [{5 6}]}, n_4=2 {m=1 [7]} {m=0}, a=8, n_5=2 [9 10]
    r.rec(8, B(2, 1, 2, 1, 3, 1, 1, 5, 6, 2, 1, 7, 0, 8, 2, 9, 10)),
    # r6 n=2 {k=1 [5]} {k=0}; n_2=1 {g.k=1 {b=1 k=1 {a=2 b=3}}}
    r.rec(9, B(2, 1, 5, 0, 1, 1, 1, 1, 2, 3)),
    # r7 n=2 {m=1 [4] x=5} {m=0 x=6}; n_2=1 {n=2 [{b=7} {b=8}]}
    r.rec(10, B(2, 1, 4, 5, 0, 6, 1, 2, 7, 8)),
    # empty everything
    r.rec(4, B(0)), r.rec(5, B(0)), r.rec(6, B(0)), r.rec(9, B(0, 0)), r.rec(10, B(0, 0)),
]
open('t8.mtf', 'wb').write(trace([(None, recs)], 't8.dtd'))
