"""Random streams derived from a job's own key, so results never depend on the worker."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

MAX_SEED = 2**63 - 1   # run and sweep seeds are stored as SQLite integers (signed 64 bits)


def canonical_json(key: Mapping[str, Any]) -> str:
    return json.dumps(key, sort_keys=True, separators=(",", ":"), default=str)


def key_digest(key: Mapping[str, Any]) -> str:
    """Stable hex digest of a job key (the job id of sweeps)."""
    return hashlib.sha256(canonical_json(key).encode()).hexdigest()


def rng_for(key: Mapping[str, Any]) -> np.random.Generator:
    """A Generator seeded from the SHA-256 of the key's canonical JSON (128 bits of entropy)."""
    entropy = int(key_digest(key)[:32], 16)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
