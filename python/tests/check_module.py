#!/usr/bin/env python3
"""Checks the compiled module as it ships (ctest: python_module_install; not a pytest file).

1. It does not link libtorch: the module's ELF DT_NEEDED entries (read here from the file itself, no
   binutils) name no torch library, and importing synattn without torch maps none into the process. A torch
   upgrade then needs no rebuild (docs/python.md).
2. `cmake --install <build> --component python --prefix <tmp>` gives an importable package: a fresh
   /usr/bin/python3 with only that prefix on PYTHONPATH, run outside the build and source trees, imports
   synattn from the prefix and runs one forward and backward pass through synattn.torch.

    python3 python/tests/check_module.py --module build/release/python/synattn/_synattn...so \
        --build build/release --install-dir lib/python3.11/dist-packages
"""
import argparse
import os
import pathlib
import struct
import subprocess
import sys
import tempfile

TORCH_LIBRARIES = ("libtorch", "libc10", "libshm", "libcaffe2")


def needed_libraries(path):
    """The DT_NEEDED entries of an ELF shared object (32/64-bit, either byte order), from its section table."""
    data = pathlib.Path(path).read_bytes()
    if data[:4] != b"\x7fELF":
        raise ValueError(f"{path}: not an ELF file")
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        shoff, = struct.unpack_from(order + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
        section = lambda i: struct.unpack_from(order + "IIQQQQIIQQ", data, shoff + i * shentsize)  # noqa: E731
        entry, size = order + "qQ", 16
    else:
        shoff, = struct.unpack_from(order + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 0x2E)
        section = lambda i: struct.unpack_from(order + "IIIIIIIIII", data, shoff + i * shentsize)  # noqa: E731
        entry, size = order + "iI", 8
    out = []
    for i in range(shnum):
        sh = section(i)
        if sh[1] != 6:  # SHT_DYNAMIC
            continue
        offset, length, link = sh[4], sh[5], sh[6]
        strtab = section(link)[4]
        for at in range(offset, offset + length, size):
            tag, value = struct.unpack_from(entry, data, at)
            if tag == 0:  # DT_NULL
                break
            if tag == 1:  # DT_NEEDED
                end = data.index(b"\0", strtab + value)
                out.append(data[strtab + value:end].decode())
    return out


def check_links(module):
    needed = needed_libraries(module)
    # The reader itself is checked: every shared object on Linux needs libc, so an empty or libc-less list
    # means the parse went wrong, not that the module is clean.
    if not any(n.startswith("libc.so") for n in needed):
        sys.exit(f"check_module: could not read {module}'s DT_NEEDED entries (got {needed})")
    torch_libs = [n for n in needed if n.startswith(TORCH_LIBRARIES)]
    if torch_libs:
        sys.exit(f"check_module: {module} links {torch_libs}; the module must not link libtorch")
    # What is mapped after `import synattn` (not synattn.torch) in a fresh interpreter: no torch library, and
    # torch not imported.
    probe = ("import sys, synattn\n"
             "maps = open('/proc/self/maps').read()\n"
             f"bad = [l.split()[-1] for l in maps.splitlines() if '/' in l and l.split('/')[-1].startswith({TORCH_LIBRARIES!r})]\n"
             "assert 'torch' not in sys.modules, 'import synattn imported torch'\n"
             "assert not bad, f'import synattn mapped {sorted(set(bad))}'\n"
             "print(synattn._synattn.__file__)\n")
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(module).resolve().parent.parent))
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if r.returncode != 0:
        sys.exit(f"check_module: import synattn without torch failed:\n{r.stderr}")
    print(f"check_module: {pathlib.Path(module).name} needs {', '.join(needed)}; no torch library linked or loaded")


def check_install(cmake, build, install_dir):
    with tempfile.TemporaryDirectory(prefix="synattn-install-") as prefix:
        r = subprocess.run([cmake, "--install", build, "--component", "python", "--prefix", prefix],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"check_module: cmake --install --component python failed:\n{r.stdout}{r.stderr}")
        site = pathlib.Path(prefix) / install_dir
        files = sorted(p.name for p in (site / "synattn").iterdir()) if (site / "synattn").is_dir() else []
        if not any(f.startswith("_synattn") and f.endswith(".so") for f in files) or "torch.py" not in files:
            sys.exit(f"check_module: {site / 'synattn'} lacks the module or synattn/torch.py (holds {files})")
        probe = (
            "import pathlib, sys, torch, synattn, synattn.torch as st\n"
            f"assert pathlib.Path(synattn.__file__).resolve().is_relative_to(pathlib.Path({prefix!r}).resolve()), synattn.__file__\n"
            "b = st.bucket_batch([synattn.Tree([1, -1, 1]), synattn.Tree([-1, 0])], synattn.Bucketing.linear(4))\n"
            "layer = st.SyntaxBiasedAttention(8, 2, bucketing=synattn.Bucketing.linear(4), seed=3)\n"
            "x = torch.randn(2, 3, 8, requires_grad=True)\n"
            "out = layer(x, b.lengths, b.buckets)\n"
            "out.square().sum().backward()\n"
            "assert out.shape == (2, 3, 8) and torch.isfinite(out).all() and layer.Wq.grad.abs().sum() > 0\n"
            "print(synattn.__file__)\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = str(site)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=prefix)
        if r.returncode != 0:
            sys.exit(f"check_module: the installed package does not work:\n{r.stderr}")
        print(f"check_module: installed into {site} ({len(files)} files); imported from there, one forward and "
              "backward pass")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", required=True, help="the built _synattn shared object")
    ap.add_argument("--build", required=True, help="the build tree to install from")
    ap.add_argument("--install-dir", required=True, help="SYNATTN_PYTHON_INSTALL_DIR (relative to the prefix)")
    ap.add_argument("--cmake", default="cmake")
    args = ap.parse_args()
    check_links(args.module)
    check_install(args.cmake, args.build, args.install_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
