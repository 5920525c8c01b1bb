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
