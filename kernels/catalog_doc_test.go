package kernels_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// names reports whether text names name as a word.
func names(text, name string) bool {
	return regexp.MustCompile(`(^|[^a-z0-9_])` + regexp.QuoteMeta(name) + `($|[^a-z0-9_])`).MatchString(text)
}

// TestCatalogDocumented holds docs/kernels.md's catalog to the registry: a row for every
// family and none for a family that does not exist, and every kernel named in its
// family's row (binary_add as add in the binary row).
func TestCatalogDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/kernels.md")
	require.NoError(t, err)
	_, catalog, ok := strings.Cut(string(doc), "\n## Catalog\n")
	require.True(t, ok, "docs/kernels.md has no Catalog section")
	catalog, _, _ = strings.Cut(catalog, "\n## ")
	rows := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\| (\w+) \| ([^|]+) \|`).FindAllStringSubmatch(catalog, -1) {
		if m[1] != "family" {
			rows[m[1]] = m[2]
		}
	}
	families := map[string]bool{}
	for _, k := range kernels.All() {
		families[k.Family] = true
		row, ok := rows[k.Family]
		require.True(t, ok, "docs/kernels.md: no catalog row for family %s", k.Family)
		require.True(t, names(row, k.Name) || names(row, strings.TrimPrefix(k.Name, k.Family+"_")),
			"docs/kernels.md: kernel %s missing from the %s row", k.Name, k.Family)
	}
	for f := range rows {
		require.True(t, families[f], "docs/kernels.md: a catalog row for family %s, which has no kernel", f)
	}
	require.Len(t, rows, len(families))
}
