#!/usr/bin/env python3
"""Independent Meta-TF 1.0 trace reader, written from docs/format.md and docs/text-format.md only.
It also reads extension live/1 (live sets, format.md §13).

Usage: mtfread.py [--dtd DTD] TRACE      (DTD defaults to the repository's dtds/<header name>)
Prints the trace in the text form of docs/text-format.md.
"""
import collections
import os
import sys

M64 = (1 << 64) - 1
MAX_DEPTH = 64          # §16: levels of an expression (§3.4)
MAX_SLOTS = 1 << 16     # §4.4, §16: slots of one record type, however its fields are grouped


class DtdError(Exception):
    pass


class DtdNameError(Exception):
    """The header's DTD name may not be looked up (format.md §10)."""
    pass


class TraceError(Exception):
    pass


# ---------------------------------------------------------------- lexer (§3.1)

PUNCT = set('{}(),;:.=*+-')


def lex(text):
    toks = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in ' \t\r\n':
            i += 1
        elif text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j + 1
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            if j < 0:
                raise DtdError('unterminated comment')
            i = j + 2
        elif c.isascii() and (c.isalpha() or c == '_'):
            j = i + 1
            while j < n and text[j].isascii() and (text[j].isalnum() or text[j] == '_'):
                j += 1
            toks.append(('id', text[i:j]))
            i = j
        elif c.isdigit():
            if text.startswith(('0x', '0X'), i) and i + 2 < n and text[i + 2] in '0123456789abcdefABCDEF':
                j = i + 2
                while j < n and text[j] in '0123456789abcdefABCDEF':
                    j += 1
                v = int(text[i + 2:j], 16)
            else:
                j = i
                while j < n and text[j].isdigit():
                    j += 1
                v = int(text[i:j])
            if v > M64:
                raise DtdError('bad integer')
            toks.append(('int', v))
            i = j
        elif c in PUNCT:
            toks.append(('p', c))
            i += 1
        else:
            raise DtdError('syntax: unexpected %r' % c)
    toks.append(('eof', None))
    return toks


# ---------------------------------------------------------------- parser (§3.2)

INTERP_KW = ('none', 'default', 'baseOffset', 'delta', 'stride', 'sectionOffset', 'sectionStride',
             'live')

# extension live/1 (format.md §13): 16 live sets per scope, numbered 1..16, at most 2^20 values each
LIVE_SETS = 16
LIVE_CAP = 1 << 20
EXT_LIVE = 0x01


class Parser:
    def __init__(self, text):
        self.t = lex(text)
        self.i = 0
        self.includes = []

    def peek(self, k=0):
        return self.t[self.i + k]

    def next(self):
        tok = self.t[self.i]
        self.i += 1
        return tok

    def isp(self, c, k=0):
        return self.peek(k) == ('p', c)

    def expect_p(self, c):
        tok = self.next()
        if tok != ('p', c):
            raise DtdError('syntax: expected %r, got %r' % (c, tok))

    def ident(self):
        tok = self.next()
        if tok[0] != 'id':
            raise DtdError('syntax: expected identifier, got %r' % (tok,))
        return tok[1]

    def dtd(self):
        props, records, sections = [], [], []
        while self.peek()[0] != 'eof':
            if self.peek() == ('id', 'section'):
                sections.append(self.section_def())
            elif self.peek() == ('id', 'include') and self.peek(1)[0] == 'id':
                # §3.5: `include NAME;` takes in a built-in fragment
                self.next()
                self.includes.append(self.ident())
                self.expect_p(';')
            else:
                kind, item = self.item()
                (props if kind == 'prop' else records).append(item)
        return props, records, sections

    def section_def(self):
        self.next()
        name = self.ident()
        tok = self.next()
        if tok[0] != 'int':
            raise DtdError('syntax: section id')
        self.expect_p('{')
        props, records = [], []
        while not self.isp('}'):
            kind, item = self.item()
            (props if kind == 'prop' else records).append(item)
        self.expect_p('}')
        if self.isp(';'):
            self.next()
        return (name, tok[1], props, records)

    def item(self):
        # record_def: ident ':' ; property_def: path '.' ...
        if self.peek()[0] == 'id' and self.isp(':', 1):
            return 'rec', self.record_def()
        return 'prop', self.property_def()

    def record_def(self):
        name = self.ident()
        self.expect_p(':')
        fields = self.field_list()
        body = []
        if self.isp('{'):
            self.next()
            while not self.isp('}'):
                body.append(self.property_def())
            self.next()
        if self.isp(';'):
            self.next()
        return (name, fields, body)

    def field_list(self):
        self.expect_p('(')
        items = [self.field_item()]
        while self.isp(','):
            self.next()
            items.append(self.field_item())
        self.expect_p(')')
        return items

    def field_item(self):
        name = None
        if self.peek()[0] == 'id' and self.isp(':', 1):
            name = self.ident()
            self.next()
        return (name, self.field_type())

    def field_type(self):
        if self.isp('('):
            return ('list', self.field_list())
        ident = self.ident()
        if self.isp('*'):
            self.next()
            return ('repeat', ident, self.field_type())
        return ('ident', ident)

    def property_def(self):
        path = [self.ident()]
        while self.isp('.'):
            self.next()
            path.append(self.ident())
        if len(path) < 2:
            raise DtdError('syntax: property path needs a property name')
        prop = path.pop()
        self.expect_p('=')
        if prop == 'interpretation':
            val = ('interp', self.interp())
        else:
            # ident or expr
            if self.peek()[0] == 'id' and (self.isp(';', 1)):
                val = ('ident', self.ident())
            else:
                val = ('expr', self.expr())
        self.expect_p(';')
        return (tuple(path), prop, val)

    def arg(self):
        neg = False
        if self.isp('-'):
            self.next()
            neg = True
        tok = self.next()
        if tok[0] != 'int':
            raise DtdError('syntax: expected integer argument')
        return ((-tok[1]) & M64) if neg else tok[1]

    def secref(self):
        tok = self.next()
        if tok[0] not in ('int', 'id'):
            raise DtdError('syntax: section reference')
        return tok[1]

    def interp(self):
        kw = self.ident()
        if kw == 'none':
            return ('none',)
        if kw in ('default', 'baseOffset', 'delta'):
            return (kw, self.arg())
        if kw == 'stride':
            return (kw, self.arg(), self.arg())
        if kw == 'sectionOffset':
            return (kw, self.secref())
        if kw == 'sectionStride':
            return (kw, self.secref(), self.arg())
        if kw == 'live':
            # §13: `"live" , integer`, the set number 1..16 (no sign)
            tok = self.next()
            if tok[0] != 'int':
                raise DtdError('syntax: expected a live set number')
            if not 1 <= tok[1] <= LIVE_SETS:
                raise DtdError('bad_interpretation: live %d (sets are 1..16)' % tok[1])
            return (kw, tok[1])
        raise DtdError('syntax: unknown interpretation %s' % kw)

    def expr(self):
        # §3.4: each operator is a level above its operands, each pair of parentheses a level
        # above what it holds; more than 64 levels is an error (§16).
        e, depth = self.expr_levels()
        return e

    def levels(self, depth):
        if depth > MAX_DEPTH:
            raise DtdError('limit: expression nested deeper than %d levels' % MAX_DEPTH)
        return depth

    def expr_levels(self):
        e, d = self.term()
        while self.isp('+') or self.isp('-'):
            op = self.next()[1]
            r, dr = self.term()
            e, d = (op, e, r), self.levels(1 + max(d, dr))
        return e, d

    def term(self):
        e, d = self.atom()
        while self.isp('*'):
            self.next()
            r, dr = self.atom()
            e, d = ('*', e, r), self.levels(1 + max(d, dr))
        return e, d

    def atom(self):
        tok = self.peek()
        if tok[0] == 'int':
            self.next()
            return ('int', tok[1]), 0
        if self.isp('('):
            self.next()
            e, d = self.expr_levels()
            self.expect_p(')')
            return e, self.levels(d + 1)
        path = [self.ident()]
        while self.isp('.'):
            self.next()
            path.append(self.ident())
        if len(path) < 2 or path[-1] not in ('value', 'width'):
            raise DtdError('syntax: expected PATH.value or PATH.width')
        return ('ref', path[-1], tuple(path[:-1])), 0


def expr_uses_value(e):
    if e[0] == 'int':
        return False
    if e[0] == 'ref':
        return e[1] == 'value'
    return expr_uses_value(e[1]) or expr_uses_value(e[2])


# ---------------------------------------------------------------- prelude (§5)

PRELUDE = """
vfield : (length, data) {
    length.width = 1;
    length.interpretation = none;
    data.width = length.value;
    data.interpretation = none;
}
comment : (tag, vfield) {
    tag.value = 1;
    vfield.data.display = text;
}
section_ : (tag, number) {
    tag.value = 2;
    number.width = 1;
    number.interpretation = none;
}
metadata : (tag, record, field, property, value) {
    tag.value = 3;
    record.width = tag.width;
    record.interpretation = none;
    field.width = 1;
    field.interpretation = none;
    property.width = 1;
    property.interpretation = none;
    value.width = 0;
    value.interpretation = none;
}
"""

# §3.5: the built-in fragments, taken in by `include NAME;` and resolved like the prelude.
FRAGMENTS = {'import': """
bytes32 : (len, data) {
    len.width = 4;  len.interpretation = none;
    data.width = len.value;  data.interpretation = none;  data.display = text;
}
import_origin : (tag, version, container, files, format : bytes32, mapping : bytes32) {
    tag.value = 250;
    version.width = 1;   version.interpretation = none;
    container.width = 1; container.interpretation = none;
    files.width = 4;     files.interpretation = none;
}
import_part : (tag, kind, part, eol, method, name : bytes32) {
    tag.value = 251;
    kind.width = 1;   kind.interpretation = none;
    part.width = 1;   part.interpretation = none;
    eol.width = 1;    eol.interpretation = none;
    method.width = 1; method.interpretation = none;
}
import_raw : (tag, line : bytes32) { tag.value = 252; }
import_noeol : (tag) { tag.value = 253; }
import_chunk : (tag, data : bytes32) { tag.value = 254; }
import_archive : (tag, comment : bytes32) { tag.value = 247; }
import_entry : (tag, time, attrs, madeby, extra : bytes32, central : bytes32, comment : bytes32) {
    tag.value = 248;
    time.width = 4;   time.interpretation = none;
    attrs.width = 4;  attrs.interpretation = none;
    madeby.width = 2; madeby.interpretation = none;
}
import_routed : (tag, target, count) {
    tag.value = 249;
    target.width = 1;  target.interpretation = none;
    count.width = 4;   count.interpretation = none;
}
"""}

# (`section` is a keyword of the grammar, so the prelude's record is parsed under a placeholder
# name and renamed; docs/format.md §5 writes it as `section : (tag, number)`.)


# ---------------------------------------------------------------- resolved model (§4)

class Scalar:
    def __init__(self, name, typename, parent, contexts, fullpath, relpath):
        self.name = name
        self.typename = typename
        self.parent = parent          # naming Level
        self.contexts = contexts      # [(body dict, prefix tuple, level)] outermost first
        self.fullpath = fullpath      # display path from the record root
        self.relpath = relpath        # display path relative to the innermost repeat item
        self.slot = None
        self.width_expr = None        # (expr, base level)
        self.interp = None
        self.value_expr = None
        self.display = None
        self.is_bytes = False
        self.decl_width = None
        self.liveset = 0              # §13: the live set the decoded value enters (0: none)

    def key(self):
        return '.'.join(self.relpath)


class Level:
    def __init__(self, name, parent):
        self.name = name
        self.parent = parent
        self.children = {}
        self.counts = {}

    def add(self, name, node, explicit):
        if not explicit and name in self.counts:
            self.counts[name] += 1
            name = '%s_%d' % (name, self.counts[name])
        else:
            self.counts.setdefault(name, 1)
        if name in self.children:
            raise DtdError('duplicate field %s' % name)
        self.children[name] = node
        return name


class Repeat:
    def __init__(self, count, items, name, scalar_item, relpath, flatkey=None):
        self.flatkey = flatkey
        self.count = count
        self.items = items            # layout list
        self.name = name
        self.scalar_item = scalar_item
        self.relpath = relpath

    def key(self):
        return '.'.join(self.flatkey if self.scalar_item else self.relpath)


class RecordType:
    def __init__(self, name, scope, fields, body, is_prelude):
        self.name = name
        self.scope = scope            # None = global, else section id
        self.fields = fields
        self.body = body
        self.is_prelude = is_prelude
        self.taggable = False
        self.layout = None
        self.slots = None
        self.tag = None


class Section:
    def __init__(self, name, sid):
        self.name = name
        self.id = sid
        self.defaults = {}
        self.records = {}


class Dtd:
    def __init__(self, text):
        pprops, precs, psecs = Parser(PRELUDE).dtd()
        user = Parser(text)
        props, recs, secs = user.dtd()
        for inc in user.includes:
            if inc not in FRAGMENTS:
                raise DtdError('include: no built-in fragment %s' % inc)
            if user.includes.count(inc) > 1:
                raise DtdError('include: fragment %s included twice' % inc)
            precs = precs + Parser(FRAGMENTS[inc]).dtd()[1]
        self.global_defaults = {}
        for path, prop, val in props:
            if len(path) != 1:
                raise DtdError('bad_property: path %s outside a record body' % '.'.join(path))
            if path[0] == 'tag' and prop != 'width':
                raise DtdError('bad_property: tag.%s outside a record body' % prop)
            if (path[0], prop) in self.global_defaults:
                raise DtdError('bad_property: %s.%s set twice' % (path[0], prop))
            self.global_defaults[(path[0], prop)] = val
        tw = self.global_defaults.get(('tag', 'width'))
        if tw is None:
            self.tag_width = 1
        else:
            if tw[0] != 'expr' or expr_uses_value(tw[1]):
                raise DtdError('bad_width: tag.width')
            self.tag_width = self.const_eval(tw[1])
            if not 1 <= self.tag_width <= 8:
                raise DtdError('bad_width: tag width')
        self.prelude = {}
        for name, fields, body in precs:
            if name == 'section_':
                name = 'section'
            self.prelude[name] = RecordType(name, None, fields, self.body_dict(body), True)
        self.global_records = dict(self.prelude)
        for name, fields, body in recs:
            if name in self.global_records or name == 'section':
                raise DtdError('duplicate/reserved record %s' % name)
            self.global_records[name] = RecordType(name, None, fields, self.body_dict(body), False)
        self.sections = {}
        self.section_by_name = {}
        for name, sid, sprops, srecs in secs:
            if not 1 <= sid <= 255:
                raise DtdError('section_id_range')
            if sid in self.sections or name in self.section_by_name or name in self.prelude or name == 'section':
                raise DtdError('duplicate_section / reserved name %s' % name)
            s = Section(name, sid)
            for path, prop, val in sprops:
                if len(path) != 1:
                    raise DtdError('bad_property')
                if path[0] == 'tag':
                    raise DtdError('tag_width_twice/bad_property: tag property in a section')
                s.defaults[(path[0], prop)] = val
            for rname, fields, body in srecs:
                if rname in self.global_records or rname in s.records:
                    raise DtdError('duplicate/reserved record %s' % rname)
                s.records[rname] = RecordType(rname, sid, fields, self.body_dict(body), False)
            self.sections[sid] = s
            self.section_by_name[name] = s
        # resolve every taggable type in each scope
        self.by_tag = {None: {}}
        for sid in self.sections:
            self.by_tag[sid] = {}
        for rt in self.global_records.values():
            self.resolve(rt)
        for s in self.sections.values():
            for rt in s.records.values():
                self.resolve(rt)
        for scope in list(self.by_tag):
            if scope is None:
                types = self.global_records.values()
            else:
                types = list(self.global_records.values()) + list(self.sections[scope].records.values())
            for rt in types:
                if rt.taggable:
                    if rt.tag in self.by_tag[scope]:
                        raise DtdError('duplicate_tag %d' % rt.tag)
                    self.by_tag[scope][rt.tag] = rt
            if scope is not None:
                pass

    # -------------------------------------------------------------- helpers
    @staticmethod
    def body_dict(body):
        d = {}
        for path, prop, val in body:
            if (path, prop) in d:
                raise DtdError('bad_property: set twice')
            d[(path, prop)] = val
        return d

    def const_eval(self, e):
        if e[0] == 'int':
            return e[1]
        if e[0] == 'ref':
            raise DtdError('non-constant')
        a, b = self.const_eval(e[1]), self.const_eval(e[2])
        return self.arith(e[0], a, b)

    @staticmethod
    def arith(op, a, b):
        r = a + b if op == '+' else a - b if op == '-' else a * b
        if r < 0 or r > M64:
            raise DtdError('bad_width: arithmetic overflow or negative')
        return r

    def sec_id(self, ref):
        if isinstance(ref, int):
            if ref not in self.sections:
                raise DtdError('bad_interpretation: undeclared section %d' % ref)
            return ref
        if ref not in self.section_by_name:
            raise DtdError('bad_interpretation: undeclared section %s' % ref)
        return self.section_by_name[ref].id

    def visible(self, rt):
        if rt.is_prelude:
            return self.prelude
        if rt.scope is None:
            return self.global_records
        d = dict(self.global_records)
        d.update(self.sections[rt.scope].records)
        return d

    # -------------------------------------------------------------- expansion (§4.2, §4.4)
    def resolve(self, rt):
        if not rt.fields or rt.fields[0][1] != ('ident', 'tag'):
            # nested-only type: check it anyway by building when used
            return
        rt.taggable = True
        visible = self.visible(rt)
        root = Level(rt.name, None)
        slots = []
        self.scalars = []
        ctx = [(rt.body, (), root)]
        layout = self.expand_list(rt.fields, root, ctx, visible, (), [rt.name], rt, top=True)
        rt.layout = layout
        rt.root = root
        for s in self.scalars:
            s.slot = len(slots)
            slots.append(s)
        if len(slots) > MAX_SLOTS:
            raise DtdError('limit: record type %s has more than %d slots' % (rt.name, MAX_SLOTS))
        rt.slots = slots
        for s in slots:
            self.resolve_props(s, rt)
        for s in slots:
            self.resolve_width(s, set())
        for s in slots:
            if s.liveset_expr is not None:
                n = self.const_eval_w(*s.liveset_expr)
                if n > LIVE_SETS:
                    raise DtdError('bad_property: liveset = %d (sets are 0..16)' % n)
                s.liveset = n
        tagf = slots[0]
        if tagf.value_expr is None:
            raise DtdError('missing_tag_value in %s' % rt.name)
        rt.tag = self.const_eval(tagf.value_expr[0])
        if rt.tag >> (8 * self.tag_width):
            raise DtdError('bad_property: tag value wider than tag.width')
        if not rt.is_prelude and rt.tag in (1, 2, 3):
            raise DtdError('reserved_name: tag %d' % rt.tag)

    def expand_list(self, items, level, ctx, visible, relpath, stack, rt, top=False):
        out = []
        for idx, (ename, ftype) in enumerate(items):
            out.extend(self.expand_item(ename, ftype, level, ctx, visible, relpath, stack, rt,
                                        top and idx == 0))
        return out

    def item_name(self, ftype):
        if ftype[0] == 'ident':
            return ftype[1]
        if ftype[0] == 'repeat':
            # format.md §4.2: a repeat's item name is its own item's name; a repeat of a
            # composite (named `C_items`) gives none
            return self.item_name(ftype[2])
        return None

    def new_scalar(self, name, typename, level, ctx, relpath, explicit):
        name = level.add(name, None, explicit)
        full = ctx[0][1] + (name,)
        s = Scalar(name, typename, level, [(b, p + (name,), l) for (b, p, l) in ctx], full,
                   relpath + (name,))
        level.children[name] = s
        self.scalars.append(s)
        return s

    def expand_item(self, ename, ftype, level, ctx, visible, relpath, stack, rt, is_first):
        kind = ftype[0]
        if kind == 'ident':
            tname = ftype[1]
            if tname == 'tag' and not is_first:
                raise DtdError('tag_not_first')
            if tname in visible:
                sub = visible[tname]
                if tname in stack:
                    raise DtdError('recursive_type %s' % tname)
                if sub.fields and sub.fields[0][1] == ('ident', 'tag'):
                    raise DtdError('tag_not_first: nested type %s contains tag' % tname)
                name = ename or tname
                name = level.add(name, None, ename is not None)
                lv = Level(name, level)
                level.children[name] = lv
                nctx = [(b, p + (name,), l) for (b, p, l) in ctx] + [(sub.body, (), lv)]
                return self.expand_list(sub.fields, lv, nctx, self.visible(sub), relpath + (name,),
                                        stack + [tname], rt)
            s = self.new_scalar(ename or tname, tname, level, ctx, relpath, ename is not None)
            return [s]
        if kind == 'list':
            if ename is None:
                return self.expand_list(ftype[1], level, ctx, visible, relpath, stack, rt)
            name = level.add(ename, None, True)
            lv = Level(name, level)
            level.children[name] = lv
            nctx = [(b, p + (name,), l) for (b, p, l) in ctx]
            return self.expand_list(ftype[1], lv, nctx, visible, relpath + (name,), stack, rt)
        # repeat
        cname, item = ftype[1], ftype[2]
        if cname in visible:
            raise DtdError('bad_count: %s names a record type' % cname)
        count = self.new_scalar(cname, cname, level, ctx, relpath, False)
        # `C_items` after the count field's name with its suffix (`n*(a), n*(b)` -> `n_2_items`)
        rname = ename or self.item_name(item) or (count.name + '_items')
        if item[0] == 'ident' and item[1] not in visible:
            # repeated scalar: the single field takes the repeat's name
            rname2 = level.add(rname, None, ename is not None)
            s = Scalar(rname2, item[1], level, [(b, p + (rname2,), l) for (b, p, l) in ctx],
                       ctx[0][1] + (rname2,), ())
            level.children[rname2] = s
            self.scalars.append(s)
            return [count, Repeat(count, [s], rname2, True, relpath + (rname2,), relpath + (rname2,))]
        rname2 = level.add(rname, None, ename is not None)
        lv = Level(rname2, level)
        level.children[rname2] = lv
        nctx = [(b, p + (rname2,), l) for (b, p, l) in ctx]
        if item[0] == 'ident':
            # repeated nested record: the repeat level is the record instance
            sub = visible[item[1]]
            if item[1] in stack:
                raise DtdError('recursive_type')
            nctx = nctx + [(sub.body, (), lv)]
            inner = self.expand_list(sub.fields, lv, nctx, self.visible(sub), (), stack + [item[1]], rt)
        elif item[0] == 'list':
            inner = self.expand_list(item[1], lv, nctx, visible, (), stack, rt)
        else:
            inner = self.expand_item(None, item, lv, nctx, visible, (), stack, rt, False)
        single = len(inner) == 1 and isinstance(inner[0], Scalar)
        # mtf (and text-format.md's `[v v ...]` row): an item of a single field is a flat list,
        # keyed by that field's display name (`n_items.a=[1 2]`)
        return [count, Repeat(count, inner, rname2, single, relpath + (rname2,),
                              relpath + (rname2,) + inner[0].relpath if single else None)]

    # -------------------------------------------------------------- properties (§4.3)
    def lookup(self, s, rt, prop):
        v, lvl, _ = self.lookup_ranked(s, rt, prop)
        return v, lvl

    def lookup_ranked(self, s, rt, prop):
        # rank: where the property was found, in §4.3's order (0 = most specific)
        for rank, (body, path, lvl) in enumerate(s.contexts):
            v = body.get((path, prop))
            if v is not None:
                return v, lvl, rank
        n = len(s.contexts)
        if rt.scope is not None:
            v = self.sections[rt.scope].defaults.get((s.typename, prop))
            if v is not None:
                return v, s.parent, n
        v = self.global_defaults.get((s.typename, prop))
        if v is not None:
            return v, s.parent, n + 1
        return None, None, None

    def resolve_props(self, s, rt):
        if s.slot == 0:
            v, _ = self.lookup(s, rt, 'value')
            if v is None or v[0] != 'expr':
                raise DtdError('missing_tag_value %s' % rt.name)
            s.value_expr = (v[1], None)
            s.interp = ('none',)
            s.width_expr = (('int', self.tag_width), None)
            s.display = None
            s.liveset_expr = None
            if self.lookup(s, rt, 'liveset')[0] is not None:
                raise DtdError('bad_property: tag.liveset')
            return
        v, _, irank = self.lookup_ranked(s, rt, 'interpretation')
        if v is None:
            raise DtdError('missing_interpretation %s.%s' % (rt.name, '.'.join(s.fullpath)))
        interp = v[1]
        if interp[0] in ('sectionOffset', 'sectionStride'):
            interp = (interp[0], self.sec_id(interp[1])) + interp[2:]
        s.interp = interp
        w, lvl, wrank = self.lookup_ranked(s, rt, 'width')
        if interp[0] in ('default', 'stride', 'sectionStride'):
            # format.md §4.3: the field reads no bytes; a non-zero width is an error when set at
            # the interpretation's level or a more specific one, else its last non-zero width.
            last = 0
            if w is not None:
                if w[0] != 'expr' or expr_uses_value(w[1]):
                    raise DtdError('width_on_zero_width %s' % '.'.join(s.fullpath))
                last = self.const_eval_w(w[1], lvl)
                if last != 0 and (wrank <= irank or last > 8):
                    raise DtdError('width_on_zero_width %s' % '.'.join(s.fullpath))
            s.width_expr = (('int', last), None)
        else:
            if w is None:
                raise DtdError('missing_width %s.%s' % (rt.name, '.'.join(s.fullpath)))
            if w[0] != 'expr':
                raise DtdError('bad_property: width')
            s.width_expr = (w[1], lvl)
        v, lvl = self.lookup(s, rt, 'value')
        if v is not None:
            if v[0] != 'expr' or expr_uses_value(v[1]):
                raise DtdError('non_constant_value')
            s.value_expr = (v[1], lvl)
        d, _ = self.lookup(s, rt, 'display')
        s.display = d[1] if d is not None and d[0] == 'ident' else None
        v, lvl = self.lookup(s, rt, 'liveset')
        if v is not None:
            # §13: a constant expression 0..16
            if v[0] != 'expr' or expr_uses_value(v[1]):
                raise DtdError('bad_property: liveset must be a constant')
            s.liveset_expr = (v[1], lvl)
        else:
            s.liveset_expr = None

    def find(self, base, path):
        node = base
        for comp in path:
            if not isinstance(node, Level) or comp not in node.children:
                raise DtdError('unknown_type: %s' % '.'.join(path))
            node = node.children[comp]
        if not isinstance(node, Scalar):
            raise DtdError('unknown_type: %s is not a scalar' % '.'.join(path))
        return node

    def const_eval_w(self, e, base, seen=frozenset()):
        if e[0] == 'int':
            return e[1]
        if e[0] == 'ref':
            if e[1] == 'value':
                raise DtdError('non-constant')
            tgt = self.find(base, e[2])
            return self.resolve_width(tgt, seen)
        return self.arith(e[0], self.const_eval_w(e[1], base, seen), self.const_eval_w(e[2], base, seen))

    def resolve_width(self, s, seen):
        if s.decl_width is not None:
            return s.decl_width
        if id(s) in seen:
            raise DtdError('cyclic_width')
        e, base = s.width_expr
        if expr_uses_value(e):
            s.is_bytes = True
            s.decl_width = -1
            # check the references now
            self.check_value_refs(e, base, s)
            if s.interp[0] != 'none':
                raise DtdError('bad_interpretation on byte string')
            return -1
        w = self.const_eval_w(e, base, seen | {id(s)})
        if w == -1:
            raise DtdError('bad_width: .width of variable-width field')
        s.decl_width = w
        if w > 8:
            s.is_bytes = True
            if s.interp[0] != 'none':
                raise DtdError('bad_interpretation on byte string')
        return w

    def check_value_refs(self, e, base, s):
        if e[0] == 'int':
            return
        if e[0] == 'ref':
            tgt = self.find(base, e[2])
            if e[1] == 'value' and (tgt.slot is None or s.slot is None or tgt.slot >= s.slot):
                raise DtdError('forward_reference')
            return
        self.check_value_refs(e[1], base, s)
        self.check_value_refs(e[2], base, s)


# ---------------------------------------------------------------- values

class IntVal:
    __slots__ = ('v', 'display')

    def __init__(self, v, display):
        self.v = v
        self.display = display


class BytesVal:
    __slots__ = ('b', 'display')

    def __init__(self, b, display):
        self.b = b
        self.display = display


class RefVal:
    __slots__ = ('kind', 'sec', 'key', 'number')

    def __init__(self, kind, sec, key):
        self.kind = kind      # '@' or '#'
        self.sec = sec
        self.key = key        # offset or index
        self.number = key


def sign(v, w):
    if w == 0:
        return 0
    if v >> (8 * w - 1):
        return (v - (1 << (8 * w))) & M64
    return v


def utf8_pieces(b):
    """Yield str pieces for valid UTF-8 runs and ints for bytes that are not valid UTF-8."""
    i = 0
    while i < len(b):
        try:
            yield from b[i:].decode('utf-8')
            return
        except UnicodeDecodeError as e:
            if e.start:
                yield from b[i:i + e.start].decode('utf-8')
            for k in range(e.start, e.end):
                yield b[i + k]
            i += e.end


def fmt_bytes_text(b):
    out = []
    for ch in utf8_pieces(b):
        if isinstance(ch, int):
            out.append('\\x%02x' % ch)
            continue
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == '\\':
            out.append('\\\\')
        elif ch == '\n':
            out.append('\\n')
        elif ch == '\r':
            out.append('\\r')
        elif ch == '\t':
            out.append('\\t')
        elif o < 0x20 or o == 0x7f:
            out.append('\\x%02x' % o)
        else:
            out.append(ch)
    return '"' + ''.join(out) + '"'


# ---------------------------------------------------------------- trace (§2, §6–§8)

PROPS = {0: 'width', 1: 'none', 2: 'baseOffset', 3: 'delta', 4: 'default', 5: 'sectionOffset',
         6: 'stride', 7: 'sectionStride', 8: 'live', 9: 'liveset'}
NWORDS = {0: 1, 1: 0, 2: 1, 3: 1, 4: 1, 5: 1, 6: 2, 7: 2}
# §13: with header bit 0 (live/1) set, codes 8 (interpretation = live) and 9 (liveset) exist
NWORDS_LIVE = dict(NWORDS)
NWORDS_LIVE.update({8: 1, 9: 1})


class Trace:
    def __init__(self, data, dtd_path=None):
        self.data = data
        if len(data) < 16 or data[:4] != b'\x7fMTF':
            raise TraceError('bad magic')
        self.cls = data[4]
        if self.cls not in (1, 2):
            raise TraceError('bad class')
        bo = data[5]
        if bo not in (1, 2):
            raise TraceError('bad byte order')
        self.order = 'little' if bo == 1 else 'big'
        dl = data[6]
        iw = data[7]
        if iw not in (0, 8):
            raise TraceError('bad intwidth')
        W = 4 if iw == 0 else 8
        # byte 8: extensions; bit 0 is live/1 (§13), any other bit is unknown and refused
        self.ext = data[8]
        if self.ext & ~EXT_LIVE:
            raise TraceError('header byte 8 (extensions) is 0x%02x: unknown extension bits' % self.ext)
        if any(data[9:16]):
            raise TraceError('reserved bytes not zero')
        self.nwords = NWORDS_LIVE if self.ext & EXT_LIVE else NWORDS
        self.W = W
        rd = lambda off: self.uint(off, W)
        nsec, start, nrec = rd(16), rd(16 + W), rd(16 + 2 * W)
        p = 16 + 3 * W
        self.dtdname = data[p:p + dl].decode('utf-8', errors='replace')
        p += dl
        if nsec * 3 * W > len(data) - p:
            raise TraceError('nsections too large')
        self.sections = []
        for k in range(nsec):
            self.sections.append((rd(p), rd(p + W), rd(p + 2 * W)))
            p += 3 * W
        if start != p:
            raise TraceError('start %d != end of section table %d' % (start, p))
        self.start, self.nrecords = start, nrec
        if dtd_path is None:
            name = self.dtdname.replace('\\', '/').rsplit('/', 1)[-1]
            # §10 safety rule: only the last component, non-empty, not starting with '.', no
            # NUL, ending in '.dtd' in any case; otherwise only an explicit --dtd is used.
            if not name or name.startswith('.') or '\0' in name or not name.lower().endswith('.dtd'):
                raise DtdNameError('the DTD name %r is refused (format.md §10): give the DTD with --dtd' % self.dtdname)
            dtd_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'dtds', name)
        with open(dtd_path, encoding='utf-8') as f:
            self.dtd = Dtd(f.read())
        self.word = 4 if self.cls == 1 else 8
        # regions
        self.regions = []
        first = self.sections[0][1] if self.sections else len(data)
        self.regions.append((None, start, first))
        prev_end = first
        seen = set()
        for num, st, sz in self.sections:
            if st != prev_end:
                raise TraceError('sections not contiguous')
            if num in seen or num not in self.dtd.sections:
                raise TraceError('bad section number %d' % num)
            seen.add(num)
            self.regions.append((num, st, st + sz))
            prev_end = st + sz
        if prev_end != len(data):
            raise TraceError('sections do not cover the file')
        self.region_of = {num: (st, end) for num, st, end in self.regions if num is not None}
        self.tables = {}
        self.meta_tables = set()  # sections metadata records make tables (§8)
        self.errors = []

    def uint(self, off, w):
        if off + w > len(self.data):
            raise TraceError('read past end of file')
        return int.from_bytes(self.data[off:off + w], self.order)

    # -------------------------------------------------------------- state (§6.3)
    def fresh_state(self, scope):
        return {}

    def slot_state(self, state, rt):
        st = state.get(rt.name)
        if st is None:
            st = []
            for s in rt.slots:
                w = s.decl_width if not s.is_bytes else None
                it = s.interp
                prev = it[1] if it[0] in ('delta', 'stride') else 0
                # a zero-width interpretation starts at width 0, its declared width kept as the
                # last non-zero width (format.md §4.3, §6.3)
                w0 = 0 if it[0] in ('default', 'stride', 'sectionStride') else w
                # [width, lastwidth, interp, prev, cursor, liveset]
                st.append([w0, w, it, prev, 0, s.liveset])
            state[rt.name] = st
        return st

    # -------------------------------------------------------------- decoding
    def decode_region(self, scope, start, end, emit):
        """Decode one region; emit(kind, rt, payload, offset) for every record."""
        # the live metadata state of this scope, by record type name; under the key None the
        # scope's live sets (§13: empty when the scope begins, newest value last)
        state = {None: [None] + [collections.deque(maxlen=LIVE_CAP) for _ in range(LIVE_SETS)]}
        pos = start
        first = True
        while pos < end:
            rec_start = pos
            tw = self.dtd.tag_width
            if pos + tw > end:
                raise TraceError('record past end of region')
            tag = self.uint(pos, tw)
            rt = self.dtd.by_tag[scope].get(tag)
            if rt is None:
                raise TraceError('unknown tag %d at %d' % (tag, pos))
            if scope is not None and first and rt.name != 'section':
                raise TraceError('section does not begin with section record')
            opens = first and scope is not None
            if rt.name == 'section' and not opens:
                # §9.2: reported; the record's extent is known, so the region goes on
                self.errors.append('section record out of place at %d' % pos)
            first = False
            if rt.name == 'metadata':
                pos = self.decode_metadata(scope, state, pos, end, emit)
                continue
            fields, pos = self.decode_record(rt, state, pos, end)
            if rt.name == 'section' and opens and fields[0][1][1].v != scope:
                # §9.2: an error that leaves the record's extent known; the region is still
                # decoded in the scope of the id the section table gives
                self.errors.append('section %d begins with a section record numbered %d'
                                   % (scope, fields[0][1][1].v))
            emit(rt, fields, rec_start, pos)
        return pos

    def decode_metadata(self, scope, state, pos, end, emit):
        tw = self.dtd.tag_width
        p = pos + tw
        if p + tw + 2 > end:
            raise TraceError('metadata past end of region')
        rtag = self.uint(p, tw)
        slot = self.data[p + tw]
        prop = self.data[p + tw + 1]
        p += tw + 2
        if prop not in self.nwords:
            # codes 8 and 9 are unknown unless the header declares live/1 (§13)
            raise TraceError('unknown metadata property code %d' % prop)
        nw = self.nwords[prop]
        if p + nw * self.word > end:
            raise TraceError('metadata past end of region')
        words = [self.uint(p + k * self.word, self.word) for k in range(nw)]
        p += nw * self.word
        err = None
        rt = self.dtd.by_tag[scope].get(rtag)
        if rt is None:
            err = 'record tag %d not in scope' % rtag
        elif rt.name in ('section', 'metadata'):
            err = 'metadata on %s' % rt.name
        elif slot >= len(rt.slots):
            err = 'no slot %d' % slot
        elif slot == 0 or rt.slots[slot].is_bytes:
            err = 'slot is tag or byte string'
        args = list(words)
        if prop in (6, 7):
            args[1] = sign(args[1], self.word)
        if err is None:
            st = self.slot_state(state, rt)[slot]
            if prop == 0:
                if words[0] > 8:
                    err = 'width > 8'
                elif words[0] != 0 and st[2][0] in ('default', 'stride', 'sectionStride'):
                    err = 'width on zero-width interpretation'
            elif prop in (5, 7):
                if words[0] not in self.dtd.sections:
                    err = 'undeclared section %d' % words[0]
            elif prop == 8:
                if not 1 <= words[0] <= LIVE_SETS:
                    err = 'live set %d outside 1..16' % words[0]
            elif prop == 9:
                if words[0] > LIVE_SETS:
                    err = 'live set %d outside 0..16' % words[0]
        if err is not None:
            self.errors.append('refused metadata at byte %d: %s' % (pos, err))
            emit(None, ('bad', rtag, slot, prop, words, err), pos, p)
            return p
        if prop == 0:
            st[0] = words[0]
            if words[0] != 0:
                st[1] = words[0]
        elif prop == 1:
            st[2] = ('none',)
            st[0] = st[1]
        elif prop == 2:
            st[2] = ('baseOffset', words[0])
            st[0] = st[1]
        elif prop == 3:
            st[2] = ('delta', words[0])
            st[0] = st[1]
            st[3] = words[0]
        elif prop == 4:
            st[2] = ('default', words[0])
            st[0] = 0
        elif prop == 5:
            st[2] = ('sectionOffset', words[0])
            st[0] = st[1]
            self.meta_tables.add(words[0])
        elif prop == 6:
            st[2] = ('stride', words[0], args[1])
            st[0] = 0
            st[3] = words[0]
        elif prop == 7:
            st[2] = ('sectionStride', words[0], args[1])
            st[0] = 0
            st[4] = 0
            self.meta_tables.add(words[0])
        elif prop == 8:
            # a switch to live keeps the field's width like none: width := lastwidth
            st[2] = ('live', words[0])
            st[0] = st[1]
        elif prop == 9:
            st[5] = words[0]
        emit(None, ('ok', rt, rt.slots[slot], prop, args), pos, p)
        return p

    def decode_record(self, rt, state, pos, end):
        st = self.slot_state(state, rt)
        values = {}   # id(scalar) -> most recent numeric value (for .value)
        self._last = None
        self._sets = state[None]
        out, pos = self.decode_layout(rt.layout, rt, st, values, pos, end)
        return (out, self._last), pos

    def decode_layout(self, layout, rt, st, values, pos, end):
        out = []
        for node in layout:
            if isinstance(node, Repeat):
                c = values[id(node.count)]
                if c > 65536 and c > end - pos:
                    raise TraceError('repeat count %d too large' % c)
                items = []
                for _ in range(c):
                    sub, pos = self.decode_layout(node.items, rt, st, values, pos, end)
                    items.append(sub)
                    if pos > end:
                        raise TraceError('past end')
                out.append((node, items))
            else:
                v, pos = self.decode_scalar(node, rt, st, values, pos, end)
                out.append((node, v))
        return out, pos

    def eval_width(self, e, base, values):
        if e[0] == 'int':
            return e[1]
        if e[0] == 'ref':
            tgt = self.dtd.find(base, e[2])
            if e[1] == 'width':
                return tgt.decl_width
            # format.md §3.4: a repeated field that has not occurred in this record reads 0
            return values.get(id(tgt), 0)
        a = self.eval_width(e[1], base, values)
        b = self.eval_width(e[2], base, values)
        r = a + b if e[0] == '+' else a - b if e[0] == '-' else a * b
        if r < 0 or r > M64:
            raise TraceError('width arithmetic overflow')
        return r

    def decode_scalar(self, s, rt, st, values, pos, end):
        if s.is_bytes:
            w = self.eval_width(s.width_expr[0], s.width_expr[1], values)
            if pos + w > end:
                raise TraceError('byte string past end of region')
            v = BytesVal(self.data[pos:pos + w], s.display)
            self._last = v
            return v, pos + w
        ss = st[s.slot]
        w = ss[0]
        if pos + w > end:
            raise TraceError('field past end of region')
        u = self.uint(pos, w) if w else 0
        i = sign(u, w)
        it = ss[2]
        k = it[0]
        if k == 'none':
            val = i if s.display == 'signed' else u
            v = IntVal(val, s.display)
            num = val
        elif k == 'default':
            num = it[1]
            v = IntVal(num, s.display)
        elif k == 'baseOffset':
            num = (it[1] + i) & M64
            v = IntVal(num, s.display)
        elif k == 'delta':
            num = (ss[3] + i) & M64
            ss[3] = num
            v = IntVal(num, s.display)
        elif k == 'stride':
            num = (ss[3] + it[2]) & M64
            ss[3] = num
            v = IntVal(num, s.display)
        elif k == 'sectionOffset':
            num = u
            v = RefVal('@', it[1], u)
        elif k == 'sectionStride':
            idx = ss[4]
            if idx >= (1 << 63):
                idx -= 1 << 64
            num = ss[4]
            v = RefVal('#', it[1], idx)
            ss[4] = (ss[4] + it[2]) & M64
        elif k == 'live':
            # §13: u < len takes the value at position u (counted from the newest) out of the
            # set; u >= len is an escape for the value u - len, the set unchanged
            live = self._sets[it[1]]
            n = len(live)
            if u < n:
                idx = n - 1 - u
                num = live[idx]
                del live[idx]
            else:
                num = u - n
            v = IntVal(num, s.display)
        if ss[5]:
            # then the value (for a reference, the number the field carries) enters the slot's set
            self._sets[ss[5]].append(num)
        if s.value_expr is not None:
            fixed = self.dtd.const_eval(s.value_expr[0])
            if fixed != num:
                self.errors.append('field %s.%s is %d, not its fixed value %d' % (rt.name, '.'.join(s.fullpath), num, fixed))
        values[id(s)] = num
        self._last = v
        return v, pos + w

    # -------------------------------------------------------------- tables (§8)
    def table(self, sec):
        t = self.tables.get(sec)
        if t is not None:
            return t
        if sec not in self.region_of:
            raise TraceError('reference to section %d not in the trace' % sec)
        st, end = self.region_of[sec]
        content = st + self.dtd.tag_width + 1
        elems = []

        reached = [content]

        def emit(rt, payload, off, endp):
            reached[0] = endp
            if rt is None or rt.name in ('section', 'comment'):
                return
            elems.append((off - content, payload[1]))
        self.tables[sec] = {'list': [], 'byoff': {}, 'damaged': None}  # guard against recursion
        saved = self.errors
        self.errors = []
        damaged = None
        try:
            self.decode_region(sec, st, end, emit)
        except TraceError as e:
            # format.md §8: the region stopped at damage; the elements before it stay usable,
            # a reference to anything after it is an error
            damaged = reached[0] - content   # content offset where decoding stopped
        finally:
            self.errors = saved
        t = {'list': [e[1] for e in elems], 'byoff': {e[0]: e[1] for e in elems},
             'damaged': damaged}
        self.tables[sec] = t
        return t

    def deref(self, r):
        t = self.table(r.sec)
        if r.kind == '@':
            if r.key not in t['byoff'] and t['damaged'] is not None and r.key >= t['damaged']:
                raise TraceError('section %d is damaged before offset %d' % (r.sec, r.key))
            if r.key not in t['byoff']:
                raise TraceError('sectionOffset %d is not at an element of section %d' % (r.key, r.sec))
            return t['byoff'][r.key]
        if r.key >= len(t['list']) and t['damaged'] is not None:
            raise TraceError('section %d is damaged before element %d' % (r.sec, r.key))
        if not 0 <= r.key < len(t['list']):
            raise TraceError('sectionStride index %d outside section %d' % (r.key, r.sec))
        return t['list'][r.key]

    # -------------------------------------------------------------- formatting
    def fmt(self, v, depth=0):
        if isinstance(v, IntVal):
            if v.display == 'hex':
                return hex(v.v)
            if v.display == 'signed':
                return str(v.v - (1 << 64) if v.v >> 63 else v.v)
            return str(v.v)
        if isinstance(v, BytesVal):
            if v.display == 'text':
                return fmt_bytes_text(v.b)
            return 'x"' + v.b.hex() + '"'
        if isinstance(v, RefVal):
            head = '%s%d' % (v.kind, v.key)
            # follow a chain of references, at most 16 element look-ups in all (mtf's reading of
            # §8); a reference still left after that is shown as it is, without an error
            tgt = v
            try:
                for _ in range(16):
                    if not isinstance(tgt, RefVal):
                        break
                    tgt = self.deref(tgt)
            except TraceError as e:
                self.errors.append(str(e))
                return head + ':?'
            if isinstance(tgt, RefVal):
                return head + ':%s%d' % (tgt.kind, tgt.key)
            return head + ':' + self.fmt(tgt, depth + 1)
        return '?'

    def fmt_fields(self, out):
        parts = []
        for node, v in out:
            if isinstance(node, Repeat):
                if node.scalar_item:
                    inner = ' '.join(self.fmt(it[0][1]) for it in v)
                else:
                    inner = ' '.join('{' + ' '.join(self.fmt_fields(it)) + '}' for it in v)
                parts.append('%s=[%s]' % (node.key(), inner))
            elif node.slot == 0:
                continue   # the tag is implied by the record name
            else:
                parts.append('%s=%s' % (node.key(), self.fmt(v)))
        return parts

    def fmt_metadata(self, payload):
        if payload[0] == 'bad':
            _, rtag, slot, prop, words, err = payload
            # one `value=` per stored word, none when the code has no word (as mtf does)
            val = ''.join(' value=%d' % w for w in words)
            return 'metadata record=%d field=%d property=%d%s' % (rtag, slot, prop, val)
        _, rt, s, prop, args = payload
        name = PROPS[prop]
        a = []
        if prop == 0 or prop in (2, 3, 4):
            a = [str(args[0])]
        elif prop == 5:
            a = [self.dtd.sections[args[0]].name]
        elif prop == 6:
            a = [str(args[0]), str(args[1] - (1 << 64) if args[1] >> 63 else args[1])]
        elif prop == 7:
            a = [self.dtd.sections[args[0]].name, str(args[1] - (1 << 64) if args[1] >> 63 else args[1])]
        elif prop in (8, 9):
            a = [str(args[0])]
        return ' '.join(['metadata', '%s.%s' % (rt.name, '.'.join(s.fullpath)), name] + a)

    def table_sections(self):
        """The sections that are tables (format.md §8): read through a reference by a slot's
        DTD interpretation, or by a field a metadata record of the trace switches to one; the
        global region never. Decodes the whole trace."""
        self.meta_tables = set()
        self.dump(lambda l: None)
        out = set(self.meta_tables)
        for scope in self.dtd.by_tag.values():
            for rt in scope.values():
                for sl in rt.slots:
                    it = sl.interp
                    if it and it[0] in ('sectionOffset', 'sectionStride'):
                        out.add(it[1])
        out.discard(0)
        return sorted(out)

    def dump(self, w):
        self.errors = []
        w('%%mtf 1 dtd=%s class=%d order=%s' % (fmt_bytes_text(self.dtdname.encode()),
                                               32 if self.cls == 1 else 64, self.order))
        self.count = 0
        complete = True
        for scope, st, end in self.regions:
            lines = []

            def emit(rt, payload, off, endp):
                self.count += 1
                if rt is None:
                    lines.append(self.fmt_metadata(payload))
                elif rt.name == 'section':
                    num = payload[0][1][1].v
                    sec = self.dtd.sections.get(num)
                    lines.append('section number=%d%s' % (num, ':' + sec.name if sec else ''))
                else:
                    lines.append(' '.join([rt.name] + self.fmt_fields(payload[0])))
                for l in lines:
                    w(l)
                del lines[:]
            try:
                self.decode_region(scope, st, end, lambda *a: (emit(*a), None))
            except TraceError as e:
                self.errors.append(str(e))
                complete = False
        if complete and self.count != self.nrecords:
            self.errors.append('header says %d records, the trace holds %d' % (self.nrecords, self.count))
        return self.errors


# ---------------------------------------------------------------- heap figures (§14, stats.md)
#
# `--heap`: the figures of docs/stats.md per namespace of ids, from the analysis/1 declarations
# read as format.md §14 states them: roles act on a field's first occurrence; a record's actions
# apply undefines, then references, then defines, each in field order; undefines and defines of
# one namespace and key pair in field order (a define of the null id pairs with none), each pair
# a move, the undefines left over frees, emitted before the defines' events; `definesNext`
# defines first + n (nothing when that is null). Statistics: a move with a byte count is a free
# and an allocation; temporary = freed with no allocation or free of the namespace between,
# following the block through moves; a free of an id not alive is no event. Only what the spec
# cases need: no lookups (`NS.G.value`), no sites, no redefinitions (reported unsupported).

class Unsupported(Exception):
    pass


class Heap:
    FIGS = ('allocations', 'frees', 'moves', 'bytes_allocated', 'bytes_freed', 'temporary',
            'leaked_blocks')

    def __init__(self, trace):
        self.t = trace
        self.dtd = trace.dtd
        self.spaces = {}      # name -> namespace properties
        self.order = []
        self.live = {}        # (ns, key, id) -> [block, ...] (several only in a shared namespace)
        self.next_id = {}
        self.figs = {}
        self.cand = {}        # ns -> the block that is a temporary candidate
        self.plans = {}
        self.rguards = {}   # id(field) -> (guard field, value, negated): guards of roles

    def ns_prop(self, ns, prop, default):
        v = self.dtd.global_defaults.get((ns, prop))
        if v is None:
            return default
        if v[0] == 'ident':
            return v[1]
        return self.dtd.const_eval(v[1])

    def space(self, ns):
        if ns not in self.spaces:
            self.spaces[ns] = {
                'kind': self.ns_prop(ns, 'kind', 'ids'),
                'null': self.ns_prop(ns, 'null', None),
                'first': self.ns_prop(ns, 'first', 0),
                'key': self.ns_prop(ns, 'key', None),
                'shared': self.ns_prop(ns, 'shared', 'no') == 'yes',
            }
            self.order.append(ns)
            self.figs[ns] = dict.fromkeys(self.FIGS, 0)
            self.next_id[ns] = self.spaces[ns]['first']
        return self.spaces[ns]

    @staticmethod
    def scalars(layout, out):
        for node in layout:
            if isinstance(node, Repeat):
                Heap.scalars(node.items, out)
            else:
                out.append(node)
        return out

    def plan(self, rt):
        p = self.plans.get(rt.name)
        if p is not None:
            return p
        acts, counts = [], []
        group = {'undefines': 0, 'refers': 1, 'defines': 2, 'definesNext': 2}
        scal = self.scalars(rt.layout, [])
        for s in scal:
            if s.slot == 0:
                continue
            for role in ('undefines', 'refers', 'defines', 'definesNext'):
                v, _ = self.dtd.lookup(s, rt, role)
                if v is not None and v[0] == 'ident':
                    acts.append((group[role], s.slot, role, v[1], s))
            b, lvl = self.dtd.lookup(s, rt, 'bytes')
            w, wl = self.dtd.lookup(s, rt, 'when')
            if b is None and w is not None:
                # §14.1 guards: on a field without a byte count, `when`/`is` or `when`/`isNot`
                # guard its roles; a field that is not present holds no value (`is` fails,
                # `isNot` holds).
                i, _ = self.dtd.lookup(s, rt, 'is')
                n, _ = self.dtd.lookup(s, rt, 'isNot')
                c = i if i is not None else n
                self.rguards[id(s)] = (self.dtd.find(wl, (w[1],)), self.dtd.const_eval(c[1]),
                                       i is None)
            if b is not None:
                w, _ = self.dtd.lookup(s, rt, 'when')
                i, _ = self.dtd.lookup(s, rt, 'is')
                guard = None
                if w is not None:
                    guard = (self.dtd.find(lvl, (w[1],)), self.dtd.const_eval(i[1]))
                counts.append((b[1], lvl, guard))
        acts.sort(key=lambda a: (a[0], a[1]))
        # a byte count without a guard applies when no guarded one does
        counts.sort(key=lambda c: c[2] is None)
        p = (acts, counts, scal)
        self.plans[rt.name] = p
        return p

    def first_values(self, layout, out):
        for node, v in layout:
            if isinstance(node, Repeat):
                for item in v:
                    self.first_values(item, out)
            elif id(node) not in out:
                if isinstance(v, RefVal):
                    e = self.t.deref(v)
                    v = e.v if isinstance(e, IntVal) else v.number
                elif isinstance(v, IntVal):
                    v = v.v
                else:
                    v = None
                out[id(node)] = v
        return out

    def eval(self, e, lvl, vals):
        if e[0] == 'int':
            return e[1]
        if e[0] == 'ref':
            if e[1] != 'value' or len(e[2]) != 1 and e[2][0] in self.spaces:
                raise Unsupported('byte count %r' % (e,))
            try:
                tgt = self.dtd.find(lvl, e[2])
            except DtdError:
                raise Unsupported('byte count %r' % (e,))
            v = vals.get(id(tgt))
            return 0 if v is None else v
        a, b = self.eval(e[1], lvl, vals), self.eval(e[2], lvl, vals)
        r = a + b if e[0] == '+' else a - b if e[0] == '-' else a * b
        if r < 0 or r > M64:
            return None
        return r

    def key_of(self, sp, scal, vals):
        if sp['key'] is None:
            return 0
        for s in scal:
            if s.name == sp['key'] or s.typename == sp['key']:
                v = vals.get(id(s))
                return 0 if v is None else v
        return 0

    # statistics of one namespace (docs/stats.md)
    def alloc(self, ns, k, size):
        b = {'size': size}
        self.live.setdefault(k, []).append(b)
        f = self.figs[ns]
        f['allocations'] += 1
        f['bytes_allocated'] += size
        self.cand[ns] = b
        return b

    def free(self, ns, b):
        f = self.figs[ns]
        f['frees'] += 1
        f['bytes_freed'] += b['size']
        if self.cand.get(ns) is b:
            f['temporary'] += 1
        self.cand[ns] = None

    def take(self, k):
        v = self.live.get(k)
        if not v:
            return None
        b = v.pop()
        if not v:
            del self.live[k]
        return b

    def guard_holds(self, s, vals):
        g = self.rguards.get(id(s))
        if g is None:
            return True
        v = vals.get(id(g[0]))
        return (v is None or v != g[1]) if g[2] else (v is not None and v == g[1])

    def record(self, rt, payload):
        acts, counts, scal = self.plan(rt)
        if not acts:
            return
        vals = self.first_values(payload[0], {})
        freed = []    # [ns, key, id, block, paired]
        paired = False
        nexts = {}
        for grp, slot, role, ns, s in acts:
            sp = self.space(ns)
            v = vals.get(id(s))
            if v is None or not self.guard_holds(s, vals):
                continue
            k = self.key_of(sp, scal, vals)
            if grp == 2 and not paired:
                paired = True
                n = {}
                for g2, _, r2, ns2, s2 in acts:
                    if g2 != 2 or vals.get(id(s2)) is None or not self.guard_holds(s2, vals):
                        continue
                    sp2 = self.space(ns2)
                    if r2 == 'definesNext':
                        i2 = self.next_id[ns2] + n.get(ns2, 0)
                        n[ns2] = n.get(ns2, 0) + 1
                    else:
                        i2 = vals[id(s2)]
                    if sp2['kind'] != 'ids' or i2 == sp2['null']:
                        continue
                    k2 = self.key_of(sp2, scal, vals)
                    for fr in freed:
                        if fr[4] is None and fr[0] == ns2 and fr[1] == k2:
                            fr[4] = id(s2)
                            break
                for fr in freed:
                    if fr[4] is None:
                        self.free(fr[0], fr[3])
            if role == 'undefines':
                if v == sp['null'] or sp['kind'] != 'ids':
                    continue
                b = self.take((ns, k, v))
                if b is not None:
                    freed.append([ns, k, v, b, None])
            elif role in ('defines', 'definesNext'):
                if role == 'definesNext':
                    v = self.next_id[ns]
                    self.next_id[ns] = v + 1
                if v == sp['null'] or sp['kind'] != 'ids':
                    continue
                if (ns, k, v) in self.live and not sp['shared']:
                    raise Unsupported('a define of a live id')
                size = None
                for e, lvl, guard in counts:
                    if guard is None or vals.get(id(guard[0])) == guard[1]:
                        size = self.eval(e, lvl, vals)
                        break
                moved = [fr for fr in freed if fr[4] == id(s)]
                if moved:
                    old = moved[0][3]
                    if size is None:
                        # a move: the same block under its new id
                        self.figs[ns]['moves'] += 1
                        self.live.setdefault((ns, k, v), []).append(old)
                    else:
                        self.free(ns, old)
                        self.alloc(ns, (ns, k, v), size)
                else:
                    self.alloc(ns, (ns, k, v), size or 0)
        if not paired:
            for fr in freed:
                self.free(fr[0], fr[3])

    def run(self):
        self.t.errors = []
        # every namespace of ids the DTD's records name, used by the trace or not
        types = list(self.dtd.global_records.values())
        for sec in self.dtd.sections.values():
            types += list(sec.records.values())
        for rt in types:
            if rt.layout is not None and not rt.is_prelude:
                for a in self.plan(rt)[0]:
                    self.space(a[3])
        for scope, st, end in self.t.regions:
            def emit(rt, payload, off, endp):
                if rt is not None and rt.name not in ('section', 'comment'):
                    self.record(rt, payload)
            self.t.decode_region(scope, st, end, emit)
        for (ns, _, _), v in self.live.items():
            self.figs[ns]['leaked_blocks'] += len(v)
        return sorted('%s %s' % (ns, ' '.join('%s=%d' % (f, self.figs[ns][f]) for f in self.FIGS))
                      for ns in self.order if self.spaces[ns]['kind'] == 'ids')


def fnv1a(b):
    h = 0xCBF29CE484222325
    for x in b:
        h = ((h ^ x) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def read_tables_file(path):
    """A tables file beside a seek index (format.md §15.6): the section ids it gives as tables,
    after its checks (magic, version, reserved bytes, size, checksum, the binding to the index
    file whose path it extends, bit 0 clear)."""
    with open(path, 'rb') as f:
        b = f.read()
    if b[:4] != b'\x7fMTT':
        raise TraceError('%s: no tables magic' % path)
    if len(b) < 5 or b[4] != 1:
        raise TraceError('%s: not version 1' % path)
    if len(b) != 64 or b[5:8] != b'\0\0\0':
        raise TraceError('%s: wrong size or reserved bytes' % path)
    le = lambda at: int.from_bytes(b[at:at + 8], 'little')
    if fnv1a(b[:56]) != le(56):
        raise TraceError('%s: checksum mismatch' % path)
    index = path[:-len('.tables')]
    with open(index, 'rb') as f:
        isum = int.from_bytes(f.read()[-8:], 'little')
    if le(8) != isum:
        raise TraceError('%s: made for another index' % path)
    ids = [s for s in range(256) if b[24 + s // 8] >> (s % 8) & 1]
    if 0 in ids:
        raise TraceError('%s: the global region as a table' % path)
    return ids


def main(argv):
    dtd = None
    args = argv[1:]
    heap = args[:1] == ['--heap']
    if heap:
        args = args[1:]
    # --tables [--file INDEX.tables]: the sections that are tables (§8), one line; with a
    # tables file, also whether it says the same (status 1 when not).
    tables = args[:1] == ['--tables']
    tables_file = None
    if tables:
        args = args[1:]
        if args[:1] == ['--file']:
            tables_file = args[1]
            args = args[2:]
    if args[:1] == ['--dtd']:
        dtd = args[1]
        args = args[2:]
    with open(args[0], 'rb') as f:
        data = f.read()
    try:
        t = Trace(data, dtd)
    except DtdNameError as e:
        print('error: %s' % e, file=sys.stderr)
        return 3
    except DtdError as e:
        print('DTD error: %s' % e, file=sys.stderr)
        return 3
    except TraceError as e:
        print('trace error: %s' % e, file=sys.stderr)
        return 1
    if tables:
        ids = t.table_sections()
        print('tables: %s' % ' '.join(map(str, ids)))
        if tables_file is not None:
            try:
                stored = read_tables_file(tables_file)
            except TraceError as e:
                print('error: %s' % e, file=sys.stderr)
                return 1
            print('file: %s' % ' '.join(map(str, stored)))
            return 0 if stored == ids else 1
        return 0
    if heap:
        try:
            for line in Heap(t).run():
                print(line)
        except Unsupported as e:
            print('unsupported: %s' % e, file=sys.stderr)
            return 4
        except TraceError as e:
            print('trace error: %s' % e, file=sys.stderr)
            return 1
        return 0
    errs = t.dump(lambda l: print(l))
    for e in errs:
        print('error: %s' % e, file=sys.stderr)
    return 1 if errs else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
