#!/usr/bin/env python3
"""CONTRIBUTING.md's layout map names every header of include/synattn/ and
every source of src/, each under its own folder.

The map is the first ``` block of CONTRIBUTING.md's "Layout" section: one
entry per folder ("  nn/   linear, embedding, ..."; continuation lines are
indented further). A file is named when its stem is a word of its folder's
entry, or is such a word followed by a suffix the entry also names ("gemm
(+ _avx2)" names gemm_avx2.hpp; "attention_rows (+ _algorithm.inc)" names
attention_rows_algorithm.inc). include/synattn/*.hpp belong to the first
entry (include/synattn/). The reverse holds too: a header an entry of
include/synattn/ names (each comma-separated name, glosses in parentheses
aside) exists in that folder, and a file any entry names with its extension
("compiled.cpp", "toolchains/aarch64-linux-gnu.cmake") exists under that
entry's folder, so a deleted file cannot stay on the map. Exits 1 naming
every file the map misses, every folder it lacks, every header an entry
names that lives in another folder and every named file that does not exist.

  python3 tests/docs/check_layout.py <checkout> [<CONTRIBUTING.md>]

checks another copy of the map against the checkout (an older one, say).
"""
import os
import re
import sys


def layout_entries(text):
    section = text.split("## Layout", 1)[1]
    block = section.split("```", 2)[1]
    entries = {}
    current = None
    for line in block.splitlines():
        m = re.match(r"^(\S+/)\s+(.*)$", line) or re.match(r"^  (\S+/)\s+(.*)$", line)
        if m and (line.startswith("  ") and not line.startswith("   ") or not line.startswith(" ")):
            current = m.group(1)
            entries[current] = m.group(2)
        elif current is not None:
            entries[current] += " " + line.strip()
    return entries


def named(stem, entry):
    words = set(re.findall(r"[A-Za-z0-9_.]+", entry))
    if stem in words:
        return True
    for w in words:
        if stem.startswith(w + "_") and ("_" + stem[len(w) + 1:]) in entry:
            return True
    return False


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    contributing = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "CONTRIBUTING.md")
    with open(contributing, encoding="utf-8") as f:
        entries = layout_entries(f.read())
    problems = []
    base = os.path.join(root, "include", "synattn")
    for dirpath, _, files in os.walk(base):
        rel = os.path.relpath(dirpath, base)
        key = "include/synattn/" if rel == "." else rel + "/"
        for name in sorted(files):
            if not name.endswith((".hpp", ".inc")):
                continue
            stem = name[:-4] if name.endswith(".hpp") else name  # .inc files are named whole
            if key not in entries:
                problems.append(f"{key}: no entry in the layout map (for {name})")
                break
            if not named(stem, entries[key]) and not named(name, entries[key]):
                problems.append(f"{key}{name}: not named in the layout map's '{key}' entry")
    # The reverse: an entry naming a header that lives in another folder
    # (the map once placed conllu under tree/, where there is none).
    where = {}
    for dirpath, _, files in os.walk(base):
        rel = os.path.relpath(dirpath, base)
        key = "include/synattn/" if rel == "." else rel + "/"
        for name in files:
            if name.endswith(".hpp"):
                where.setdefault(name[:-4], set()).add(key)
    for key, entry in entries.items():
        if key not in where.get("synattn", set()) and not os.path.isdir(os.path.join(base, key)) and key != "include/synattn/":
            continue
        # The names: the entry without its parenthesised glosses and the
        # lead-in before a colon ("the dependency parser: char_cnn, ...").
        bare = entry
        while re.search(r"\([^()]*\)", bare):
            bare = re.sub(r"\([^()]*\)", " ", bare)
        bare = bare.split(":", 1)[1] if ":" in bare.split(",", 1)[0] else bare
        for word in set(re.findall(r"[A-Za-z0-9_]+", bare)):
            homes = where.get(word)
            if homes and key not in homes:
                problems.append(f"{key}: names {word}, which is in {', '.join(sorted(homes))}, not here")
    # Every header an include/ entry names exists there: the entry's names are
    # its comma- or slash-separated items once glosses and lead-ins are gone
    # ("forward_pass / backward_pass", "gemm (+ gemm_support)" -> gemm).
    for key, entry in entries.items():
        folder = base if key == "include/synattn/" else os.path.join(base, key)
        if key.startswith(("tests/", "src/")) or not os.path.isdir(folder):
            continue
        present = {n.rsplit(".", 1)[0] for n in os.listdir(folder) if n.endswith((".hpp", ".inc"))}
        present |= {n for n in os.listdir(folder) if n.endswith((".hpp", ".inc"))}
        bare = entry
        while re.search(r"\([^()]*\)", bare):
            bare = re.sub(r"\([^()]*\)", " ", bare)
        for item in re.split(r"[,/]", bare):
            item = item.split(":")[-1].strip()
            # "packet (+ _avx2, ...)" names a family of headers, packet_*.hpp.
            family = any(h.startswith(item + "_") for h in present)
            if re.fullmatch(r"[A-Za-z0-9_.]+", item) and item not in present and not family:
                problems.append(f"{key}: names {item}, which is not a header in {key}")
    # Every file named with its extension exists under its entry's folder.
    tops = {}
    for key, entry in entries.items():
        folder = os.path.join(root, key)
        if not os.path.isdir(folder):
            continue
        for name in set(re.findall(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:hpp|cpp|inc|py|sh|cmake|safetensors|toml|md)\b", entry)):
            if os.path.exists(os.path.join(folder, name)):
                continue
            if "/" not in name:
                if folder not in tops:
                    tops[folder] = {f for _, _, fs in os.walk(folder) for f in fs}
                if name in tops[folder]:
                    continue
            problems.append(f"{key}: names {name}, which does not exist under {key}")
    src = os.path.join(root, "src")
    for name in sorted(os.listdir(src)) if os.path.isdir(src) else []:
        if name.endswith(".cpp") and name not in entries.get("src/", ""):
            problems.append(f"src/{name}: not named in the layout map's 'src/' entry")
    for p in problems:
        print("check_layout: CONTRIBUTING.md: " + p)
    if problems:
        return 1
    print(f"check_layout: every header and source is in CONTRIBUTING.md's layout map")
    return 0


if __name__ == "__main__":
    sys.exit(main())
