"""CPU backend: loop IR -> LLVM IR (llvmlite) -> native code, threads, on-disk cache.

Infrastructure lives in ``target`` (LLVM init, target machines), ``jit`` (optimize, load,
cache) and ``parallel`` (native parallel-for via libgomp). Import those modules directly.
"""
