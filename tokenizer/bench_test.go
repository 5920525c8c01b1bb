package tokenizer

import (
	"flag"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var benchText = flag.String("benchtext", "", "TestWriteBenchText writes the benchmark's mixed text to this path (for scripts/tokenizer-bench.sh)")

// mixedText is n bytes (about) of mixed text, the same every time: the golden corpus
// (CJK, emoji, RTL, marks, special tokens, code) interleaved with random Latin and
// CJK words, numbers, punctuation and line breaks.
func mixedText(tb testing.TB, n int) string {
	corpus := golden(tb)
	rng := rand.New(rand.NewSource(34))
	var b strings.Builder
	for b.Len() < n {
		switch k := rng.Intn(10); {
		case k == 0:
			b.WriteString(corpus[rng.Intn(len(corpus))].Text)
		case k <= 5:
			b.WriteByte(' ')
			for i := 3 + rng.Intn(8); i > 0; i-- {
				c := byte('a' + rng.Intn(26))
				if rng.Intn(12) == 0 {
					c -= 32
				}
				b.WriteByte(c)
			}
		case k == 6:
			for i := 2 + rng.Intn(5); i > 0; i-- {
				b.WriteRune(rune(0x4E00 + rng.Intn(0x5000)))
			}
		case k == 7:
			b.WriteString(" ")
			b.WriteString(strings.Repeat("7", 1+rng.Intn(6)))
		case k == 8:
			b.WriteString([]string{", ", ". ", "; ", "!", "?", " (", ") ", " - ", "\"", "'s"}[rng.Intn(10)])
		default:
			b.WriteString([]string{"\n", "\n\n", "\r\n", "\t", "  "}[rng.Intn(5)])
		}
	}
	return b.String()
}

// TestWriteBenchText writes the benchmark's text for the reference's run (with
// -benchtext PATH; skipped otherwise).
func TestWriteBenchText(t *testing.T) {
	if *benchText == "" {
		t.Skip("no -benchtext")
	}
	s := mixedText(t, 1<<20)
	if !utf8.ValidString(s) {
		t.Fatal("mixed text is not valid UTF-8")
	}
	if err := os.WriteFile(*benchText, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkEncodeMixed encodes 1 MB of mixed text (SetBytes: MB/s is the figure),
// each iteration with the piece cache emptied first.
func BenchmarkEncodeMixed(b *testing.B) {
	s := mixedText(b, 1<<20)
	tok := qwen3(b)
	b.SetBytes(int64(len(s)))
	b.ResetTimer()
	ids := 0
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		clear(tok.cache)
		tok.cacheBytes = 0
		c0 := cpuTime()
		b.StartTimer()
		ids = len(tok.Encode(s))
		b.StopTimer()
		cpu += cpuTime() - c0
		b.StartTimer()
	}
	b.ReportMetric(float64(ids), "ids")
	reportCPU(b, cpu, len(s))
}

// BenchmarkLoad loads the 11 MB Qwen3 tokenizer.json (decompressed up front: the
// figure is the parse and build).
func BenchmarkLoad(b *testing.B) {
	raw := decompressed(b)
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(raw, "tokenizer.json"); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpuTime()-c0, len(raw))
}

// reportCPU adds the process's CPU time per operation (cpu-ms/op, and cpu-MB/s over
// n bytes an op): on a machine other jobs load, wall time counts the waits for a core
// and CPU time does not. It includes the collector's work on other threads.
func reportCPU(b *testing.B, cpu time.Duration, n int) {
	if cpu <= 0 {
		return
	}
	per := cpu.Seconds() / float64(b.N)
	b.ReportMetric(per*1e3, "cpu-ms/op")
	b.ReportMetric(float64(n)/per/1e6, "cpu-MB/s")
}
