package msltest

import "testing"

// TestOffEnvSkips: with OffEnv set, RequireCompiler and RequireClang skip even in CI.
func TestOffEnvSkips(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv(OffEnv, "1")
	for name, f := range map[string]func(testing.TB){"RequireCompiler": RequireCompiler, "RequireClang": RequireClang} {
		t.Run(name, func(t *testing.T) {
			ran := false
			t.Run("inner", func(t *testing.T) {
				defer func() {
					if !t.Skipped() {
						t.Errorf("%s did not skip", name)
					}
				}()
				f(t)
				ran = true
			})
			if ran {
				t.Fatalf("%s returned instead of skipping", name)
			}
		})
	}
}
