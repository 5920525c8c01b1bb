package metal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPreciseMathOnEveryOS: every OS the engine accepts gets the precise math
// functions. On macOS 15 and later (mathMode answered) the old code sent only
// setMathMode: Safe, which leaves mathFloatingPointFunctions at its Fast default.
func TestPreciseMathOnEveryOS(t *testing.T) {
	require.Equal(t, []compileSetting{{"setFastMathEnabled:", 0}}, preciseMath(false, false), "macOS 14")
	require.Equal(t, []compileSetting{{"setMathMode:", 0}, {"setMathFloatingPointFunctions:", 1}},
		preciseMath(true, true), "macOS 15 and later")
	for _, s := range preciseMath(true, true) {
		require.NotEqual(t, "setFastMathEnabled:", s.selector, "the deprecated setter is not sent where mathMode exists")
	}
}

// TestObjCBoolLowByte: a BOOL comes back in the low byte of a 64-bit register whose
// upper bytes are not defined; only the low byte decides.
func TestObjCBoolLowByte(t *testing.T) {
	require.False(t, objcBool(0))
	require.True(t, objcBool(1))
	require.False(t, objcBool(0xdeadbeef_00000000), "garbage above a NO")
	require.False(t, objcBool(0x100), "garbage in the second byte of a NO")
	require.True(t, objcBool(0xffffffff_ffffff01))
}
