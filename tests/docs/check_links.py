#!/usr/bin/env python3
"""Every relative link of the documentation resolves: the file exists and, for
a link into a markdown file with #anchor, a heading of that file has that
anchor (GitHub's rule: lower case, punctuation dropped, spaces as hyphens).

    python3 tests/docs/check_links.py <checkout>

Prints "links ok: N links" or one line per broken link and exits 1."""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
files = ["README.md", "examples/README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
files += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))


def prose(text):
    """The text outside fenced code blocks, line by line."""
    fenced = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def anchors(path):
    out = set()
    for line in prose(open(path, encoding="utf-8").read()):
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            base, k = slug, 1
            while slug in out:
                slug, k = f"{base}-{k}", k + 1
            out.add(slug)
    return out


broken, count = [], 0
for name in files:
    path = os.path.join(root, name)
    if not os.path.exists(path):
        continue
    for line in prose(open(path, encoding="utf-8").read()):
        line = re.sub(r"`[^`]*`", lambda m: "" if "](" not in m.group(0) else m.group(0), line)
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target):
                continue
            count += 1
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                broken.append(f"{name}: {target}: no file {os.path.relpath(dest, root)}")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                broken.append(f"{name}: {target}: no heading with anchor #{anchor}")

for b in broken:
    print(b)
if broken:
    sys.exit(1)
print(f"links ok: {count} links in {len(files)} files")
