"""Thin driver: builds dlpt._C with CMake (see CMakeLists.txt) inside setuptools' build_ext.

Build with the torch you will profile with, without build isolation:
    pip install --no-build-isolation -e .
"""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        cmake = shutil.which("cmake")
        if cmake is None:
            sys.exit("dlpt: building needs CMake >= 3.18: `pip install cmake` (or your system's package).")
        if shutil.which(os.environ.get("CXX", "c++")) is None and shutil.which("g++") is None:
            sys.exit("dlpt: building needs a C++ compiler (g++ or clang++): e.g. `apt-get install g++`.")
        out_dir = os.path.abspath(os.path.dirname(self.get_ext_fullpath(ext.name)))
        build_dir = os.path.abspath(self.build_temp)
        os.makedirs(build_dir, exist_ok=True)
        root = os.path.dirname(os.path.abspath(__file__))
        cfg = ["-DPython_EXECUTABLE=" + sys.executable, "-DDLPT_OUTPUT_DIR=" + out_dir,
               "-DCMAKE_BUILD_TYPE=" + os.environ.get("DLPT_BUILD_TYPE", "Release")]
        if shutil.which("ninja"):
            cfg += ["-G", "Ninja"]
        subprocess.run([cmake, "-S", root, "-B", build_dir, *cfg], check=True)
        subprocess.run([cmake, "--build", build_dir, "--parallel", str(os.cpu_count() or 2)], check=True)


setup(ext_modules=[CMakeExtension("dlpt._C")], cmdclass={"build_ext": CMakeBuild})
