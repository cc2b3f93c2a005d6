import sys; sys.path.insert(0, '..')
from build import *
r = R()
B = lambda *vs: b''.join(bytes([v]) for v in vs)
g = [
    # counts: c is the byte offset (2 -> 2 items, although element @2 is -7), ci the cursor
    r.rec(5, B(2, 1, 2)),                 # q c=@2 a=[1 2] ci=#0 (0 items)
    r.rec(5, B(0, 3, 4)),                 # q c=@0 a=[] ci=#2 a=[3 4]
    r.rec(5, B(4, 1, 2, 3, 4, 6, 7, 8, 9)),  # q c=@4 (4 items) ci=#4 (4 items)
    # signed display beyond `none`: the interpreted 64-bit value shown as a signed number
    r.rec(6, B(0xfe, 0xff, 0x05)),        # dl=-2 bo=-1 df=-3 st=0 uns=5
    r.rec(6, B(0xfd, 0x03, 0xf0)),        # dl=-5 bo=3 df=-3 st=-1 uns=-11 shown unsigned
    # references into dmg, whose region stops at an unknown tag after two elements
    r.rec(4, B(0)),                       # o=@0:5 i=#0:5
    r.rec(4, B(2)),                       # o=@2:6 i=#1:6
    r.rec(4, B(4)),                       # o=@4 at the damage, i=#2 past it: both errors
    r.rec(4, B(3)),                       # o=@3 not at an element, i=#3
    r.rec(4, B(5)),                       # o=@5 after the damage
]
tab = [r.section(1)] + [r.rec(9, (v, 1)) for v in (0xff, 0xf9, 3, 4, 5)]
dmg = [r.section(2), r.rec(10, (5, 1)), r.rec(10, (6, 1)), B(0x77), r.rec(10, (7, 1))]
open('t10.mtf', 'wb').write(trace([(None, g), (1, tab), (2, dmg)], 't10.dtd'))
