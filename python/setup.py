"""Builds synattn's compiled core for `pip install --no-build-isolation --no-deps ./python`.

Everything comes from the repository (this folder's parent: include/, models/) and Debian packages (Eigen,
nlohmann-json, pybind11); nothing is downloaded. The four translation units compile the layer and the parser
themselves (no synattn::compiled here), two at a time (SYNATTN_BUILD_JOBS), for this machine's CPU
(SYNATTN_ARCH, default native; set it to e.g. x86-64-v2 for a portable build). The shipped models are copied
into the package, where synattn finds them wherever it is installed.
"""
import os
import shutil

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = ["en_ewt.parser.safetensors", "en_ewt.tokenizer.safetensors"]

ParallelCompile("SYNATTN_BUILD_JOBS", default=2).install()

arch = os.environ.get("SYNATTN_ARCH", "native")
flags = ["-O3", "-fopenmp", "-Wall", "-Wextra", "-Wno-maybe-uninitialized"] + ([f"-march={arch}"] if arch else [])


class build_py_with_models(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "synattn", "models")
        os.makedirs(target, exist_ok=True)
        for m in MODELS:
            shutil.copyfile(os.path.join(ROOT, "models", m), os.path.join(target, m))


ext = Pybind11Extension(
    "synattn._synattn",
    sorted(os.path.join("src", f) for f in os.listdir(os.path.join(HERE, "src")) if f.endswith(".cpp")),
    include_dirs=[os.path.join(ROOT, "include"), "/usr/include/eigen3"],
    define_macros=[("SYNATTN_WITH_CHECKPOINT", None), ("NDEBUG", None),
                   ("SYNATTN_MODEL_DIR", '"' + os.path.join(ROOT, "models") + '"')],
    extra_compile_args=flags,
    extra_link_args=["-fopenmp"],
    cxx_std=17,
)

setup(ext_modules=[ext], cmdclass={"build_ext": build_ext, "build_py": build_py_with_models})
