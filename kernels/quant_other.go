//go:build !amd64

package kernels

// qAsmKernel has no assembly to offer off amd64: the portable loops run.
func qAsmKernel(bits int) qAsmFunc { return nil }

const useF16C = false

func f16ToF32F16C(dst *float32, src *uint16, n8 int) { panic("kernels: f16ToF32F16C without F16C") }
