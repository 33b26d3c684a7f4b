"""Where a result came from: versions, CPU, BLAS and thread limits of the process that made it
(stored with every sweep and every reference)."""

from __future__ import annotations

import os
import platform
from typing import Any

from harness.core.version import __version__
from harness.execution.worker import THREAD_ENV


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment_facts() -> dict[str, Any]:
    """Versions, CPU, BLAS and thread limits of this process (client or worker)."""
    from threadpoolctl import threadpool_info

    version = versions()
    facts: dict[str, Any] = {
        "python": version["python"],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "harness": version["harness"],
        "numpy": version["numpy"],
        "scipy": version["scipy"],
        "thread_env": {k: os.environ.get(k) for k in THREAD_ENV},
        "blas": [{k: v for k, v in info.items() if k in (
            "user_api", "internal_api", "version", "num_threads", "threading_layer",
            "architecture", "filepath")} for info in threadpool_info()],
    }
    try:
        import dask
        import distributed
        facts["dask"] = dask.__version__
        facts["distributed"] = distributed.__version__
    except ImportError:
        pass
    facts.update(optional_versions())
    return facts


OPTIONAL = ("pymc", "pytensor", "arviz", "torch", "gpytorch")   # the peers extra's packages


def optional_versions() -> dict[str, str]:
    """The installed versions of the optional packages the peer methods run on (none: {})."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in OPTIONAL:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    return found


def versions() -> dict[str, str]:
    """The versions a reference record names (harness, numpy, scipy, python)."""
    import numpy as np
    import scipy

    return {"harness": __version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "python": platform.python_version()}


def machine() -> dict[str, Any]:
    """The machine a reference record names."""
    return {"system": platform.system(), "release": platform.release(),
            "machine": platform.machine(), "processor": platform.processor(),
            "cpu_count": os.cpu_count()}
