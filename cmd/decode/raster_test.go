package main

import "testing"

func TestFontCells(t *testing.T) {
	for r, g := range font {
		if len(g) != glyphW*glyphH {
			t.Errorf("glyph %q has %d cells, want %d", r, len(g), glyphW*glyphH)
		}
	}
}
