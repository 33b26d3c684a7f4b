"""The rejection step's count over all particles in one compiled pass (docs/math.md §4–5).

At variable j a particle with offset t = c_j / L_jj and standard normal eps is accepted when
v_j = c_j + L_jj eps >= 0, that is eps >= -t. `split_accepted` sorts the particles into the
accepted and the rejected (in order) and, for the soft count, writes Φ(t) of each
(harness.core.special.ndtr_, the numbers of special.ndtr), instead of a mask, two index
searches and an elementwise call, each a pass over the particles.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.core.special import ndtr_


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
def _split(t, eps, soft, phi, acc, rej):
    na = nr = 0
    for p in range(t.size):     # both written, one kept: no branch to mispredict
        ok = eps[p] >= -t[p]
        acc[na] = p
        rej[nr] = p
        na += ok
        nr += 1 - ok
    if soft:
        for p in range(t.size):
            phi[p] = ndtr_(t[p])
    return na, nr


def split_accepted(t: np.ndarray, eps: np.ndarray, soft: bool, phi: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(indices of the accepted particles, of the rejected), both ascending; with `soft`,
    phi[p] = Φ(t[p]) (phi: float64, t's length; untouched otherwise)."""
    acc = np.empty(t.size, dtype=np.int64)
    rej = np.empty(t.size, dtype=np.int64)
    na, nr = _split(t, eps, soft, phi, acc, rej)
    return acc[:na], rej[:nr]
