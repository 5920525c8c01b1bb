package metal

// compileSetting is one message to an MTLCompileOptions: its setter and argument.
type compileSetting struct {
	selector string
	value    uint64
}

// MTLMathMode and MTLMathFloatingPointFunctions values (macOS 15 and later).
const (
	mathModeSafe      = 0
	mathFuncPrecise   = 1
	fastMathSelector  = "setFastMathEnabled:"
	mathModeSelector  = "setMathMode:"
	mathFuncsSelector = "setMathFloatingPointFunctions:"
)

// preciseMath is the messages that make an MTLCompileOptions compile IEEE arithmetic
// and the precise exp, log, rsqrt, ... (the twins must agree with the Go ones, NaN and
// infinity included), given which setters the running OS's options answer. macOS 15
// replaced fastMathEnabled by two properties: mathMode (Safe: no reassociation, no
// finite-math assumption) and mathFloatingPointFunctions, whose default is Fast, so
// both are sent. Before, fastMathEnabled NO does both.
func preciseMath(hasMathMode, hasMathFuncs bool) []compileSetting {
	if !hasMathMode {
		return []compileSetting{{fastMathSelector, 0}}
	}
	out := []compileSetting{{mathModeSelector, mathModeSafe}}
	if hasMathFuncs {
		out = append(out, compileSetting{mathFuncsSelector, mathFuncPrecise})
	}
	return out
}
