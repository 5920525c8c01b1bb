package checkpoint_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/nn/checkpoint"
)

// hostileName clears the screen and prints a green verdict of its own on a terminal.
const hostileName = "\x1b[2J\x1b[32m[verdict] FLAT\x1b[0m\n"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"model.layers.0.mlp.gate.weight": "model.layers.0.mlp.gate.weight",
		"ä.😀 tab":                        "ä.😀 tab",
		hostileName:                      `\x1b[2J\x1b[32m[verdict] FLAT\x1b[0m\n`,
		"a\tb\rc\x00":                    `a\tb\rc\x00`,
		"evil\u202etxt.safetensors":      `evil\u202etxt.safetensors`,
		"bad\xffutf8":                    `bad\xffutf8`,
	} {
		require.Equal(t, want, checkpoint.Printable(in), "%q", in)
	}
}

// TestErrorsEscapeFileStrings: a tensor name holding terminal escapes reaches the
// message escaped, from the parser and from the checkpoint opener alike.
func TestErrorsEscapeFileStrings(t *testing.T) {
	file := stRaw(`{"\u001b[2J\u001b[32m[verdict] FLAT\u001b[0m\n":{"dtype":"F128","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1))
	_, err := checkpoint.ParseSafetensors("x.st", file)
	require.EqualError(t, err, `safetensors x.st: tensor \x1b[2J\x1b[32m[verdict] FLAT\x1b[0m\n: unknown dtype "F128"`)
	var fe *checkpoint.FormatError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, hostileName, fe.Tensor, "the error value keeps the name as it is")

	ce := &checkpoint.CheckpointError{Path: "dir/m.safetensors", Tensor: hostileName, Reason: "also in dir/" + hostileName}
	require.False(t, strings.ContainsAny(ce.Error(), "\x1b\n"), ce.Error())
}
