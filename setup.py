"""Thin driver: builds dlpt._C with CMake (see CMakeLists.txt) inside setuptools' build_ext.

Build with the torch you will profile with, without build isolation:
    pip install --no-build-isolation -e .

The CMake build directory is build/cmake-<python>-torch<version>-<environment>, the same for every
build from this checkout in one Python environment: setuptools hands each `pip install -e .` a
fresh temporary build_temp (and build_lib), so a build directory there compiled the whole
extension again on every install (minutes on 2 cores). Here a second install with nothing
changed only re-runs CMake's configure and finds nothing to build.
"""
import glob
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


def cmake_build_dir() -> str:
    """Stable per (interpreter, torch version, environment): a new torch or another venv gets its
    own directory, so a build is reused only against the torch it was compiled for."""
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = "none"  # CMake then says torch is missing, with what to do
    env = hashlib.sha1(os.path.abspath(sys.prefix).encode()).hexdigest()[:10]
    name = f"cmake-{sys.implementation.cache_tag}-torch{torch_version}-{env}"
    return os.environ.get("DLPT_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build", name)


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        cmake = shutil.which("cmake")
        if cmake is None:
            sys.exit("dlpt: building needs CMake >= 3.18: `pip install cmake` (or your system's package).")
        if shutil.which(os.environ.get("CXX", "c++")) is None and shutil.which("g++") is None:
            sys.exit("dlpt: building needs a C++ compiler (g++ or clang++): e.g. `apt-get install g++`.")
        build_dir = cmake_build_dir()
        # CMake links into a directory of its own that never moves (setuptools' output directory
        # is a new temporary one for each editable install, which would relink every time); the
        # library is copied to where setuptools wants it.
        out_dir = os.path.join(build_dir, "out")
        os.makedirs(out_dir, exist_ok=True)
        cfg = ["-DPython_EXECUTABLE=" + sys.executable, "-DDLPT_OUTPUT_DIR=" + out_dir,
               "-DCMAKE_BUILD_TYPE=" + os.environ.get("DLPT_BUILD_TYPE", "Release")]
        if shutil.which("ninja") and not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            cfg += ["-G", "Ninja"]  # only when configuring anew: a generator cannot change later
        print(f"dlpt: CMake build directory {build_dir} (reused by later builds)", flush=True)
        subprocess.run([cmake, "-S", ROOT, "-B", build_dir, *cfg], check=True)
        subprocess.run([cmake, "--build", build_dir, "--parallel", str(os.cpu_count() or 2)], check=True)
        built = sorted(glob.glob(os.path.join(out_dir, "_C*.so")), key=os.path.getmtime)
        if not built:
            sys.exit(f"dlpt: CMake built no _C*.so in {out_dir}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # Through a new file and a rename: a running Python that loaded the old library keeps its
        # mapping intact (copying over it in place would change the code under it).
        partial = target + ".partial"
        shutil.copy2(built[-1], partial)
        os.replace(partial, target)


setup(ext_modules=[CMakeExtension("dlpt._C")], cmdclass={"build_ext": CMakeBuild})
