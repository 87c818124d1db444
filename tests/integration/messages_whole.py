#!/usr/bin/env python3
"""messages_whole.py KIND FILE...: every message in ghostvram's outputs is whole.

A message cut by a fixed-size buffer ends inside a word and leaves its brackets or its
backquoted command open: "... (the only GPU and the only entr", "(candidate: it holds 2 GPUs
with", "`sudo ghostvram reclaim --gpu 0`... kill -TERM 4194301 419431". A whole one closes every
'(' it opens and every '`', and does not end with a space or a dangling separator.

KIND: json (every string value with a space of every document; one document a line is read
too), text (every line), prom (every label value of every sample line). Prints each bad message with
its file and exits 1 if there is one; prints how many messages it read.
"""
import json
import re
import sys

SEP_END = (" ", ",", ";")


def problems(s):
    """Why s is not a whole message ([] when it is)."""
    out = []
    depth = 0
    for c in s:
        depth += c == "("
        depth -= c == ")"
        if depth < 0:
            break
    if depth != 0:
        out.append("unbalanced parentheses")
    if s.count("`") % 2:
        out.append("an open backquote")
    if s.endswith(SEP_END):
        out.append("ends with %r" % s[-1])
    return out


def sentences_json(v):
    if isinstance(v, str):
        if " " in v:
            yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from sentences_json(x)
    elif isinstance(v, list):
        for x in v:
            yield from sentences_json(x)


def read_json(path):
    """The document(s) of a .json output: one, or one a line; none, or a cut one, fails."""
    text = open(path, encoding="utf-8", errors="replace").read()
    try:
        return [json.loads(text)]
    except ValueError:
        pass
    docs = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip().startswith("{"):
            continue
        try:
            docs.append(json.loads(line))
        except ValueError as e:
            sys.exit("%s:%d: not a whole JSON document (%s)" % (path, n, e))
    if not docs:
        sys.exit("%s: no JSON document" % path)
    return docs


LABEL = re.compile(r'[a-zA-Z_]+="((?:[^"\\]|\\.)*)"')


def messages(kind, path):
    if kind == "json":
        for doc in read_json(path):
            yield from sentences_json(doc)
    elif kind == "text":
        for line in open(path, encoding="utf-8", errors="replace"):
            line = line.rstrip("\n")
            if line.strip():
                yield line.rstrip()
    elif kind == "prom":
        for line in open(path, encoding="utf-8", errors="replace"):
            if line.startswith("#"):
                continue
            for m in LABEL.finditer(line):
                yield m.group(1)
    else:
        sys.exit("messages_whole.py: unknown kind %r" % kind)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    kind, bad, n = sys.argv[1], 0, 0
    for path in sys.argv[2:]:
        for s in messages(kind, path):
            n += 1
            for p in problems(s):
                print("%s: %s: %r" % (path, p, s))
                bad += 1
    print("%d messages read, %d not whole" % (n, bad))
    sys.exit(1 if bad or not n else 0)


if __name__ == "__main__":
    main()
