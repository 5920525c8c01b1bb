# The machine code of a translated family (for reading what the compiler made of a
# kernel): NVRTC -> PTX, ptxas -v (registers, spills) -> cuobjdump -sass, and an
# opcode histogram of the named entries.  python3 sass.py FAMILY OUTDIR [ENTRY ...]
import collections
import os
import re
import subprocess
import sys

import cupy as cp
from cupy.cuda import nvrtc

import cases as C
import msl2cuda as M

fam, od, names = sys.argv[1], sys.argv[2], sys.argv[3:]
text = os.environ.get('SASS_TEXT')
code = M.translate(M.source(fam, text=open(text).read() if text else None))
prog = nvrtc.createProgram(code, fam + '.cu', [], [])
inc = ['-I' + os.path.join(cp.cuda.get_cuda_path() or '/usr/local/cuda', 'include')]
try:
    nvrtc.compileProgram(prog, list(C.OPTS) + inc + ['-arch=compute_90'])
except Exception:
    print(nvrtc.getProgramLog(prog)[:3000])
    raise
ptx = nvrtc.getPTX(prog)
ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
base = os.path.join(od, fam)
open(base + '.ptx', 'w').write(ptx)
r = subprocess.run(['ptxas', '-arch=sm_90', '-v', base + '.ptx', '-o', base + '.cubin'], capture_output=True, text=True)
for line in r.stderr.splitlines():
    if any(n in line for n in names) or 'registers' in line:
        print(line)
sass = subprocess.run(['cuobjdump', '-sass', base + '.cubin'], capture_output=True, text=True).stdout
os.remove(base + '.ptx')
os.remove(base + '.cubin')
kept = []
for fn in re.split(r'\n\s*Function : ', sass)[1:]:
    name = fn.split('\n', 1)[0].strip()
    if names and not any(n == name for n in names):
        continue
    kept.append(fn)
    ops = collections.Counter(m.group(1).split('.')[0] for m in re.finditer(r'/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)', fn))
    print(name, sum(ops.values()), 'instructions:', ' '.join('%s %d' % kv for kv in ops.most_common(24)))
open(base + '.sass', 'w').write('\n\nFunction : '.join([''] + kept))
