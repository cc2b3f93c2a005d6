"""Hand assembly helpers for Meta-TF traces."""
import struct

def trace(regions, dtdname, cls=1, order='little', intwidth=0, nrecords=None, ext=0):
    """regions: list of (secid or None, [record bytes...]); the global region first (if any).
    ext: header byte 8, the extensions (bit 0: live/1, format.md §13)."""
    W = 4 if intwidth == 0 else 8
    secs = [(sid, recs) for sid, recs in regions if sid is not None]
    glob = [recs for sid, recs in regions if sid is None]
    glob = glob[0] if glob else []
    name = dtdname.encode()
    start = 16 + 3 * W + len(name) + len(secs) * 3 * W
    nrec = sum(len(r) for _, r in regions)
    if nrecords is not None:
        nrec = nrecords
    u = lambda v, w: v.to_bytes(w, order)
    body = b''.join(glob)
    table = b''
    pos = start + len(body)
    for sid, recs in secs:
        data = b''.join(recs)
        table += u(sid, W) + u(pos, W) + u(len(data), W)
        body += data
        pos += len(data)
    hdr = b'\x7fMTF' + bytes([cls, 1 if order == 'little' else 2, len(name), intwidth, ext]) + bytes(7)
    hdr += u(len(secs), W) + u(start, W) + u(nrec, W) + name + table
    assert len(hdr) == start
    return hdr + body

class R:
    def __init__(self, cls=1, order='little', tw=1):
        self.cls, self.order, self.tw = cls, order, tw
        self.word = 4 if cls == 1 else 8
    def i(self, v, w):
        return (v & ((1 << (8 * w)) - 1)).to_bytes(w, self.order)
    def tag(self, t):
        return self.i(t, self.tw)
    def rec(self, tag, *parts):
        """parts: (value, width) tuples or raw bytes."""
        out = self.tag(tag)
        for p in parts:
            out += p if isinstance(p, (bytes, bytearray)) else self.i(*p)
        return out
    def section(self, n):
        return self.tag(2) + bytes([n])
    def comment(self, text):
        b = text if isinstance(text, bytes) else text.encode()
        return self.tag(1) + bytes([len(b)]) + b
    def meta(self, rtag, slot, prop, *words):
        return self.tag(3) + self.tag(rtag) + bytes([slot, prop]) + b''.join(self.i(w, self.word) for w in words)
