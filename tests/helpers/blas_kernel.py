"""Print which OpenBLAS kernel NumPy runs under the current environment (for `make test-blas`)."""

import numpy as np
from threadpoolctl import threadpool_info


def describe() -> str:
    np.ones((64, 64)) @ np.ones((64, 64))  # load the BLAS and run its gemm (a CPU that cannot run the kernel stops here)
    blas = [lib for lib in threadpool_info() if lib.get("internal_api") == "openblas"]
    return ", ".join(f"{lib.get('architecture')} ({lib.get('version')})" for lib in blas) or "no OpenBLAS"


if __name__ == "__main__":
    print(describe())
