#!/usr/bin/env python3
"""Compile CUDA C++ with NVRTC, or NVVM IR with libNVVM, to PTX through ctypes.

  nvrtc_nvvm.py nvrtc SRC.cu OUT.ptx [nvrtc options...]
  nvrtc_nvvm.py nvvm  SRC.ll OUT.ptx [--libdevice BC] [libnvvm options...]

Library paths come from NVRTC_SO / NVVM_SO (see scripts/tools.env). The program name given
to NVRTC is the source's basename and the compilers run with the working directory "/", so
the output (.file names, DWARF comp_dir) does not depend on the checkout path.
"""
import ctypes
import os
import sys


def _die(msg):
    sys.stderr.write(msg.rstrip() + "\n")
    sys.exit(1)


def _argv(opts):
    arr = (ctypes.c_char_p * max(1, len(opts)))()
    for i, o in enumerate(opts):
        arr[i] = o.encode()
    return arr


def run_nvrtc(src, out, opts):
    lib = ctypes.CDLL(os.environ["NVRTC_SO"])
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    prog = ctypes.c_void_p()
    text = open(src, "rb").read()

    def check(rc, what):
        if rc != 0:
            _die("%s: %s failed: %s" % (src, what, lib.nvrtcGetErrorString(rc).decode()))

    check(lib.nvrtcCreateProgram(ctypes.byref(prog), ctypes.c_char_p(text),
                                 ctypes.c_char_p(os.path.basename(src).encode()), 0, None, None),
          "nvrtcCreateProgram")
    rc = lib.nvrtcCompileProgram(prog, len(opts), _argv(opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    if log.value.strip():
        sys.stderr.write("%s: NVRTC log:\n%s\n" % (src, log.value.decode(errors="replace")))
    check(rc, "nvrtcCompileProgram")
    check(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
    buf = ctypes.create_string_buffer(size.value)
    check(lib.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    with open(out, "wb") as f:
        f.write(buf.value)


def run_nvvm(src, out, opts):
    libdevice = None
    if "--libdevice" in opts:
        i = opts.index("--libdevice")
        libdevice = opts[i + 1]
        del opts[i:i + 2]
    lib = ctypes.CDLL(os.environ["NVVM_SO"])
    lib.nvvmGetErrorString.restype = ctypes.c_char_p
    prog = ctypes.c_void_p()

    def check(rc, what):
        if rc != 0:
            _die("%s: %s failed: %s" % (src, what, lib.nvvmGetErrorString(rc).decode()))

    check(lib.nvvmCreateProgram(ctypes.byref(prog)), "nvvmCreateProgram")
    text = open(src, "rb").read()
    check(lib.nvvmAddModuleToProgram(prog, text, ctypes.c_size_t(len(text)),
                                     os.path.basename(src).encode()), "nvvmAddModuleToProgram")
    if libdevice:
        bc = open(libdevice, "rb").read()
        check(lib.nvvmLazyAddModuleToProgram(prog, bc, ctypes.c_size_t(len(bc)), b"libdevice"),
              "nvvmLazyAddModuleToProgram")
    rc = lib.nvvmCompileProgram(prog, len(opts), _argv(opts))
    size = ctypes.c_size_t()
    lib.nvvmGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvvmGetProgramLog(prog, log)
    if log.value.strip():
        sys.stderr.write("%s: libNVVM log:\n%s\n" % (src, log.value.decode(errors="replace")))
    check(rc, "nvvmCompileProgram")
    check(lib.nvvmGetCompiledResultSize(prog, ctypes.byref(size)), "nvvmGetCompiledResultSize")
    buf = ctypes.create_string_buffer(size.value)
    check(lib.nvvmGetCompiledResult(prog, buf), "nvvmGetCompiledResult")
    lib.nvvmDestroyProgram(ctypes.byref(prog))
    with open(out, "wb") as f:
        f.write(buf.value)


def main(argv):
    if len(argv) < 4 or argv[1] not in ("nvrtc", "nvvm"):
        _die(__doc__)
    mode, src, out, opts = argv[1], os.path.abspath(argv[2]), os.path.abspath(argv[3]), list(argv[4:])
    if "--libdevice" in opts:
        i = opts.index("--libdevice") + 1
        opts[i] = os.path.abspath(opts[i])
    for var in ("NVRTC_SO", "NVVM_SO"):
        if os.environ.get(var):
            os.environ[var] = os.path.abspath(os.environ[var])
    os.chdir("/")   # NVRTC records the working directory in .file and DW_AT_comp_dir
    (run_nvrtc if mode == "nvrtc" else run_nvvm)(src, out, opts)


if __name__ == "__main__":
    main(sys.argv)
