# One launch of each decode kernel that sets a target of issue 21, for Nsight Compute:
#   ncu --clock-control none --metrics ... python3 prof.py
# PROF=a,b keeps the cases whose names contain one of those strings.
import os

import cases as C

BUILDS = [
    ('qmv 4-bit 1024 -> 248320', lambda: C.case_qmv(248320, 1024, 4, 64)),
    ('qmv 4-bit 3584 -> 1024', lambda: C.case_qmv(1024, 3584, 4, 64)),
    ('linear 3584 -> 1024', lambda: C.case_linear(1024, 3584)),
    ('sdpa 4096', lambda: C.case_sdpa(1, 8, 2, 1, 4096, 256, 256)),
    ('sdpa 32768', lambda: C.case_sdpa(1, 8, 2, 1, 32768, 256, 256)),
    ('qswitch_glu Qwen3-Next', lambda: C.case_qswitch(1, 2048, 512, 512, 10)),
]

ONLY = [w for w in os.environ.get('PROF', '').split(',') if w]
for name, build in BUILDS:
    if ONLY and not any(w in name for w in ONLY):
        continue
    c = build()
    c.launch()
    C.sync()
    print(name, c.launch.geom(), flush=True)
    del c
    C.free_all()
