package nn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/nn"
)

// TestConfigFieldsRules pins the one config reader's rules: text_config over the top
// level, null as absent, the integer rule (64.0 yes; 64.5, "64" and 2^60.5 no), nested
// objects naming their path, and typed errors.
func TestConfigFieldsRules(t *testing.T) {
	f, err := nn.ReadConfigFields("fam", []byte(`{"a": 1, "b": 2, "n": null, "big": 9007199254740993,
		"text_config": {"a": 64.0, "half": 64.5, "q": "64", "huge": 1e300, "s": "x", "t": true,
		"rope": {"theta": "ten"}, "list": ["x", 3]}}`))
	require.NoError(t, err)
	for _, tc := range []struct {
		key  string
		want int
		err  string
	}{
		{"a", 64, ""}, {"b", 2, ""}, {"n", 7, ""}, {"absent", 7, ""}, {"big", 9007199254740993, ""},
		{"half", 0, "fam config: half: want an integer, got 64.5"},
		{"q", 0, `fam config: q: want a number, got "64"`},
		{"huge", 0, "fam config: huge: want an integer, got 1e300"},
	} {
		v, err := f.Int(tc.key, 7)
		if tc.err != "" {
			require.EqualError(t, err, tc.err)
			var ce *nn.ConfigError
			require.True(t, errors.As(err, &ce))
			require.ErrorIs(t, err, nn.ErrConfig)
			continue
		}
		require.NoError(t, err, tc.key)
		require.Equal(t, tc.want, v, tc.key)
	}
	_, err = f.RequiredInt("n")
	require.EqualError(t, err, "fam config: n: missing")
	s, err := f.String("s", "")
	require.NoError(t, err)
	require.Equal(t, "x", s)
	b, err := f.Bool("t", false)
	require.NoError(t, err)
	require.True(t, b)
	_, err = f.Bool("s", false)
	require.EqualError(t, err, `fam config: s: want true or false, got "x"`)
	rope, err := f.Object("rope")
	require.NoError(t, err)
	_, err = rope.Float("theta", 1)
	require.EqualError(t, err, `fam config: rope.theta: want a number, got "ten"`)
	_, err = f.Object("s")
	require.EqualError(t, err, `fam config: s: want a JSON object, got "x"`)
	_, _, err = f.Strings("list")
	require.EqualError(t, err, "fam config: list[1]: want a string, got 3")
	require.ElementsMatch(t, []string{"a", "half", "q", "huge", "s", "t", "rope", "list"}, f.Own())

	_, err = nn.ReadConfigFields("fam", []byte(`[1]`))
	require.EqualError(t, err, "fam config: config: not a JSON object")
	_, err = nn.ReadConfigFields("fam", []byte(`{"text_config": 3}`))
	require.EqualError(t, err, "fam config: text_config: want a JSON object, got 3")
}

// TestConfigErrorsQuoteShortPrefix checks that a hostile file's strings reach an error
// only as a short prefix: a 1 MB key or value gives an error of a few dozen bytes.
func TestConfigErrorsQuoteShortPrefix(t *testing.T) {
	long := strings.Repeat("é", 1<<19)
	err := nn.ConfigErr("fam", long, "got %s", nn.Quote(long))
	want := "fam config: " + strings.Repeat("é", 40) + "...: got \"" + strings.Repeat("é", 40) + "...\""
	require.Equal(t, want, err.Error())
	f, err := nn.ReadConfigFields("fam", []byte(`{"v": [`+strings.Repeat("1,", 1<<19)+`1]}`))
	require.NoError(t, err)
	_, err = f.Int("v", 0)
	require.EqualError(t, err, "fam config: v: want a number, got ["+strings.Repeat("1,", 19)+"1...")
	require.Equal(t, "ab", nn.Short("ab"))
}
