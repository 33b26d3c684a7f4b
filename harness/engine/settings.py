"""The allowed values of the settings that orthant samplers' parts share, for the methods that
expose them (harness.model.constraints)."""

from __future__ import annotations

from harness.core.qmc import KINDS
from harness.engine.vecchia_factor import DEFAULT_M
from harness.model.constraints import Integer, Number, OneOf

POINTS = OneOf(*KINDS)
RANDOMISATIONS = Integer(minimum=1, also=(0,),
                         says="must be an integer >= 0 (0: 10 to 40 by the budget)",
                         fix="use >= 2 for a standard error; 10 is usual, 0 chooses by the "
                             "budget (harness.core.qmc.auto_randomisations)")
BLOCK_SIZE = Integer(minimum=0, says="must be an integer >= 0 (0 chooses automatically)")
CHUNK_MB = Number(low=0, low_open=True)   # MiB of one chunk of particles
NEIGHBOURS = Integer(minimum=1, says="must be an integer >= 1 (neighbours per variable)",
                     fix=f"use e.g. m={DEFAULT_M}")   # the Vecchia factor's m
