#!/usr/bin/env python3
"""An independent recogniser for GBNF grammars, the oracle of
tests/grammar_test.cpp: its own GBNF reader and an Earley recogniser over
code points, sharing no code or design with src/grammar (which runs a stack
machine over bytes).

Usage: grammar_recogniser.py GRAMMAR.gbnf < inputs
Each input line is hex-encoded bytes; each output line is 1 if the bytes
are valid UTF-8 and a sentence of the grammar's rule "root", else 0.
"""
import sys


class Reader:
    """GBNF text -> {rule: [alternative]}, alternative = [symbol];
    symbol = ('t', set-test function) or ('n', rule name)."""

    def __init__(self, text):
        self.s, self.i, self.rules, self.fresh = text, 0, {}, 0

    def peek(self, k=0):
        return self.s[self.i + k] if self.i + k < len(self.s) else ''

    def blank(self, newlines):
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in ' \t' or (newlines and c in '\r\n'):
                self.i += 1
            elif c == '#':
                while self.i < len(self.s) and self.s[self.i] != '\n':
                    self.i += 1
            else:
                return

    def word(self):
        j = self.i
        while self.i < len(self.s) and (self.s[self.i].isascii() and (self.s[self.i].isalnum() or self.s[self.i] in '-_')):
            self.i += 1
        if j == self.i:
            raise SyntaxError('name expected at %d' % j)
        return self.s[j:self.i]

    def char(self):
        c = self.s[self.i]
        self.i += 1
        if c != '\\':
            return ord(c)
        e = self.s[self.i]
        self.i += 1
        simple = {'n': 10, 'r': 13, 't': 9, '0': 0}
        if e in simple:
            return simple[e]
        width = {'x': 2, 'u': 4, 'U': 8}.get(e)
        if width:
            v = int(self.s[self.i:self.i + width], 16)
            self.i += width
            return v
        return ord(e)

    def new_rule(self, alternatives):
        self.fresh += 1
        name = ' gen%d' % self.fresh  # a space: never a GBNF name
        self.rules[name] = alternatives
        return name

    def parse(self):
        self.blank(True)
        while self.i < len(self.s):
            name = self.word()
            self.blank(False)
            assert self.s.startswith('::=', self.i)
            self.i += 3
            self.blank(True)
            self.rules[name] = self.alternatives(False)
            self.blank(True)
        return self.rules

    def alternatives(self, nested):
        out = [self.sequence(nested)]
        while self.peek() == '|':
            self.i += 1
            self.blank(True)
            out.append(self.sequence(nested))
        return out

    def sequence(self, nested):
        seq = []
        while True:
            c = self.peek()
            if c == '"':
                self.i += 1
                chars = []
                while self.peek() != '"':
                    chars.append(self.char())
                self.i += 1
                part = [('t', (lambda v: (lambda x: x == v))(v)) for v in chars]
            elif c == '[':
                self.i += 1
                negate = self.peek() == '^'
                if negate:
                    self.i += 1
                spans = []
                while self.peek() != ']':
                    lo = self.char()
                    hi = lo
                    if self.peek() == '-' and self.peek(1) != ']':
                        self.i += 1
                        hi = self.char()
                    spans.append((lo, hi))
                self.i += 1
                test = (lambda sp, ng: (lambda x: any(a <= x <= b for a, b in sp) != ng))(spans, negate)
                part = [('t', test)]
            elif c == '.':
                self.i += 1
                part = [('t', lambda x: True)]
            elif c == '(':
                self.i += 1
                self.blank(True)
                alts = self.alternatives(True)
                assert self.peek() == ')'
                self.i += 1
                part = [('n', self.new_rule(alts))]
            elif c and (c.isascii() and (c.isalnum() or c in '-_')):
                part = [('n', self.word())]
            else:
                return seq
            self.blank(nested)
            part = self.repetition(part)
            seq.extend(part)
            self.blank(nested)

    def repetition(self, part):
        c = self.peek()
        if c not in '*+?{' or not c:
            return part
        self.i += 1
        if c == '{':
            close = self.s.index('}', self.i)
            body = self.s[self.i:close].replace(' ', '')
            self.i = close + 1
            if ',' in body:
                lo, hi = body.split(',')
                lo = int(lo) if lo else 0
                hi = int(hi) if hi else None
            else:
                lo = hi = int(body)
        else:
            lo, hi = {'*': (0, None), '+': (1, None), '?': (0, 1)}[c]
        unit = part
        # x{lo,hi}: lo copies, then either x* or (hi - lo) optional copies
        out = unit * lo
        if hi is None:
            star = self.new_rule([[]])
            self.rules[star] = [[], unit + [('n', star)]]
            out = out + [('n', star)]
        else:
            for _ in range(hi - lo):
                out = out + [('n', self.new_rule([[], unit]))]
        return out


def recognise(rules, text):
    """Earley: items (rule, alternative, dot, origin)."""
    n = len(text)
    chart = [set() for _ in range(n + 1)]
    nullable = set()
    changed = True
    while changed:  # nullable rules, for the completer's Aycock-Horspool fix
        changed = False
        for r, alts in rules.items():
            if r not in nullable and any(all(s[0] == 'n' and s[1] in nullable for s in a) for a in alts):
                nullable.add(r)
                changed = True
    for k, alt in enumerate(rules['root']):
        chart[0].add(('root', k, 0, 0))
    for i in range(n + 1):
        work = list(chart[i])
        while work:
            r, k, dot, origin = work.pop()
            alt = rules[r][k]
            if dot < len(alt):
                kind, what = alt[dot]
                if kind == 'n':
                    for k2 in range(len(rules[what])):
                        item = (what, k2, 0, i)
                        if item not in chart[i]:
                            chart[i].add(item)
                            work.append(item)
                    if what in nullable:
                        item = (r, k, dot + 1, origin)
                        if item not in chart[i]:
                            chart[i].add(item)
                            work.append(item)
                elif i < n and what(text[i]):
                    chart[i + 1].add((r, k, dot + 1, origin))
            else:
                for (r2, k2, d2, o2) in list(chart[origin]):
                    alt2 = rules[r2][k2]
                    if d2 < len(alt2) and alt2[d2] == ('n', r):
                        item = (r2, k2, d2 + 1, o2)
                        if item not in chart[i]:
                            chart[i].add(item)
                            work.append(item)
    return any(r == 'root' and dot == len(rules[r][k]) and origin == 0 for (r, k, dot, origin) in chart[n])


def main():
    rules = Reader(open(sys.argv[1], encoding='utf-8').read()).parse()
    for line in sys.stdin:
        data = bytes.fromhex(line.strip())
        try:
            text = [ord(c) for c in data.decode('utf-8')]
        except UnicodeDecodeError:
            print(0)
            continue
        if any(0xD800 <= c <= 0xDFFF for c in text):
            print(0)
            continue
        print(1 if recognise(rules, text) else 0)


main()
