"""Text shared by the generators of the unrolled amd64 kernels (gen-qmm16w4.py,
gen-qmm16x8.py): the EVEX horizontal sum and the layout of an instruction list."""

# RED16E is RED16 (kernels/red16_amd64.h) with Z29 as the scratch, in EVEX forms.
RED16E = """// RED16E is RED16 (red16_amd64.h) with Z29 as the scratch, in EVEX forms.
#define RED16E(z, y, x) \\
	VEXTRACTF64X4 $1, z, Y29; \\
	VADDPS        Y29, y, y; \\
	VEXTRACTF32X4 $1, y, X29; \\
	VADDPS        X29, x, x; \\
	VMOVHLPS      x, x, X29; \\
	VADDPS        X29, x, x; \\
	VMOVSHDUP     x, X29; \\
	VADDSS        X29, x, x
"""


def text(out):
    """The instruction list as assembly text: comments, TEXT lines and labels at the
    margin, instructions indented by a tab."""
    lines = []
    for s in out:
        if s.startswith("//") or s.startswith("TEXT") or s.endswith(":"):
            lines.append(s)
        else:
            lines.append("\t" + s)
    return "\n".join(lines) + "\n"
