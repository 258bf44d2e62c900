#!/usr/bin/python3
"""cuda_libraries.py — which cuDNN, cuBLAS and CUDA runtime a process loads, and their versions, for
scripts/bench/gpu.sh (a library's own answer, never its file name: a wheel's libcudnn.so.9 has no
version in its name).

  cuda_libraries.py --ld-library-path DIRS PROGRAM
        the CUDA libraries PROGRAM links as `ldd` resolves them with LD_LIBRARY_PATH=DIRS (what
        PROGRAM loads when run so), each then loaded here by its path and asked for its version
  cuda_libraries.py --torch
        the ones PyTorch loads, after one convolution and one matrix product on the GPU
  cuda_libraries.py --torch-cudnn-dir
        only the folder of the cuDNN PyTorch loads (gpu.sh --cudnn pytorch puts it first for Cortado)

Output: one line per library, "LIBRARY side=S name=cudnn version=9.14.0 path=/usr/local/cuda/lib64/
libcudnn.so.9" (version "?" where it cannot be asked), for the log and for gpu.sh to read. Exit
status 1 when a library cannot be found or loaded.
"""
import argparse
import ctypes
import os
import subprocess
import sys

# name, file-name prefix, how to ask the version: (function, kind). Loaded in this order, so each
# one's dependencies (cuBLAS needs cuBLASLt) are in the process before it.
LIBRARIES = (
    ("cudart", "libcudart.so", ("cudaRuntimeGetVersion", "runtime")),
    ("cublasLt", "libcublasLt.so", ("cublasLtGetProperty", "property")),
    ("cublas", "libcublas.so", ("cublasGetProperty", "property")),
    ("cudnn", "libcudnn.so", ("cudnnGetProperty", "property")),
)


def version_of(path, function, kind):
    """The library's own version, "major.minor.patch" ("?" when it cannot say)."""
    try:
        lib = ctypes.CDLL(path)
        if kind == "runtime":  # cudaRuntimeGetVersion(int*): 1000 * major + 10 * minor
            value = ctypes.c_int(0)
            if getattr(lib, function)(ctypes.byref(value)) != 0:
                return "?"
            return f"{value.value // 1000}.{value.value % 1000 // 10}"
        parts = []
        for prop in range(3):  # libraryPropertyType: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            value = ctypes.c_int(0)
            if getattr(lib, function)(prop, ctypes.byref(value)) != 0:
                return "?"
            parts.append(str(value.value))
        return ".".join(parts)
    except (OSError, AttributeError):
        return "?"


def report(side, found):
    """Prints the LIBRARY lines of `found` (name -> path); False when one is missing."""
    ok = True
    for name, _, (function, kind) in LIBRARIES:
        path = found.get(name)
        if path is None:
            print(f"LIBRARY side={side} name={name} version=- path=-")
            continue
        if not os.path.exists(path):
            print(f"LIBRARY side={side} name={name} version=? path={path} (not found)")
            ok = False
            continue
        print(f"LIBRARY side={side} name={name} version={version_of(path, function, kind)} path={path}")
    return ok


def from_ldd(program, ld_library_path):
    """name -> path of the CUDA libraries `ldd PROGRAM` resolves ("not found" kept as such)."""
    env = dict(os.environ, LD_LIBRARY_PATH=ld_library_path)
    out = subprocess.run(["ldd", program], env=env, capture_output=True, text=True, check=False).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] != "=>":
            continue
        for name, prefix, _ in LIBRARIES:
            if parts[0].startswith(prefix + "."):
                found[name] = parts[2] if parts[2] != "not" else f"{parts[0]} not found"
    return found


def loaded():
    """name -> path of the CUDA libraries mapped into this process (/proc/self/maps)."""
    found = {}
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            for name, prefix, _ in LIBRARIES:
                if base == prefix or base.startswith(prefix + "."):
                    found.setdefault(name, path)
    return found


def torch_loaded():
    """Runs one convolution and one matrix product on the GPU, so PyTorch has loaded cuDNN and cuBLAS;
    returns what it loaded, with torch's own description."""
    import torch  # only here: the --ld-library-path mode must not need PyTorch
    x = torch.randn(1, 1, 8, 8, device="cuda")
    torch.nn.functional.conv2d(x, torch.randn(1, 1, 3, 3, device="cuda"))
    torch.randn(8, 8, device="cuda") @ torch.randn(8, 8, device="cuda")
    torch.cuda.synchronize()
    return loaded(), (f"torch={torch.__version__} cuda={torch.version.cuda} "
                      f"cudnn={torch.backends.cudnn.version()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--ld-library-path", metavar="DIRS", help="resolve PROGRAM's libraries with these")
    mode.add_argument("--torch", action="store_true", help="the libraries PyTorch loads")
    mode.add_argument("--torch-cudnn-dir", action="store_true", help="only the folder of PyTorch's cuDNN")
    parser.add_argument("program", nargs="?", help="with --ld-library-path: the program")
    args = parser.parse_args()
    if args.ld_library_path is not None:
        if not args.program:
            parser.error("--ld-library-path needs the PROGRAM")
        found = from_ldd(args.program, args.ld_library_path)
        if "cudnn" not in found and "cublas" not in found:
            sys.exit(f"cuda_libraries.py: ldd {args.program} names neither cuDNN nor cuBLAS")
        sys.exit(0 if report("cortado", found) else 1)
    found, description = torch_loaded()
    if args.torch_cudnn_dir:
        if "cudnn" not in found:
            sys.exit("cuda_libraries.py: PyTorch ran a convolution without loading a libcudnn.so")
        print(os.path.dirname(found["cudnn"]))
        return
    print(f"PYTORCH {description}")
    sys.exit(0 if report("pytorch", found) else 1)


if __name__ == "__main__":
    main()
