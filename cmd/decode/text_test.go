package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/tokenizer"
)

const qwen3Tokenizer = "../../tokenizer/testdata/qwen3"

// textConfig is a tiny dense Qwen3 whose vocabulary covers the real Qwen3
// tokenizer's ids (151,936 rows, as Qwen3's checkpoints have).
func textConfig(vocab int) []byte {
	return []byte(`{"model_type": "qwen3", "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
 "num_key_value_heads": 1, "head_dim": 16, "num_hidden_layers": 2, "vocab_size": ` + itoa(vocab) + `,
 "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": true, "max_position_embeddings": 4096,
 "eos_token_id": 151645}`)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

var (
	textCkOnce sync.Once
	textCkDir  string
	textCkErr  error
)

// textCheckpoint is a random checkpoint directory (written once per test binary) with
// the real Qwen3 tokenizer.json and tokenizer_config.json.
func textCheckpoint(t *testing.T) string {
	t.Helper()
	textCkOnce.Do(func() {
		textCkDir, textCkErr = os.MkdirTemp("", "ingot-text-ck")
		if textCkErr == nil {
			textCkErr = writeTextCheckpoint(textCkDir, textConfig(151936), true)
		}
	})
	require.NoError(t, textCkErr)
	return textCkDir
}

func writeTextCheckpoint(dir string, config []byte, withTokenizer bool) error {
	cfg, err := models.ParseConfig(config)
	if err != nil {
		return err
	}
	ts, err := cfg.RandomCheckpoint(1, checkpoint.BF16)
	if err != nil {
		return err
	}
	if err := checkpoint.WriteCheckpoint(dir, config, ts, checkpoint.WriteOptions{}); err != nil {
		return err
	}
	if !withTokenizer {
		return nil
	}
	f, err := os.Open(filepath.Join(qwen3Tokenizer, "tokenizer.json.gz"))
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), raw, 0o644); err != nil {
		return err
	}
	tc, err := os.ReadFile(filepath.Join(qwen3Tokenizer, "tokenizer_config.json"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), tc, 0o644)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if textCkDir != "" {
		os.RemoveAll(textCkDir)
	}
	os.Exit(code)
}

// TestPromptTextOut: --prompt is encoded with the checkpoint's tokenizer; the
// generated text, streamed, is on stdout alone (the report on stderr), and equals
// the decode of the ids the JSON report lists, which also holds it as "text".
func TestPromptTextOut(t *testing.T) {
	dir := textCheckpoint(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	for _, mode := range []string{"plain", "batch"} {
		jsonPath := filepath.Join(t.TempDir(), "r.json")
		var out, errb bytes.Buffer
		code := run([]string{"--model", dir, "--mode", mode, "--prompt", "Hello, 世界! <think>", "--ignore-eos", "--tokens", "24",
			"--device", "cpu", "--json-out", jsonPath}, &out, &errb)
		require.Equal(t, exitFlat, code, errb.String())
		require.Contains(t, errb.String(), "[model] qwen3 from ")
		require.NotContains(t, out.String(), "[model]")
		var j jsonReport
		b, err := os.ReadFile(jsonPath)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &j))
		require.Len(t, j.Tokens, 24)
		require.Equal(t, len(tok.Encode("Hello, 世界! <think>")), j.PromptTokens)
		var known []int32
		for _, id := range j.Tokens {
			if int(id) < tok.VocabSize() {
				known = append(known, id)
			}
		}
		want, err := tok.Decode(known)
		require.NoError(t, err)
		require.Equal(t, want+"\n", out.String(), mode)
		require.NotNil(t, j.Text)
		require.Equal(t, want, *j.Text)
	}
}

// TestStopsAtEOS: a completion ends at the checkpoint's end-of-sequence token; the
// token is not printed. The random model's first greedy token is made the EOS (by
// writing it into generation_config.json), so the run stops after one token.
func TestStopsAtEOS(t *testing.T) {
	src := textCheckpoint(t)
	// The first token the random model emits for this prompt, with --ignore-eos.
	_, _, j := decodeText(t, src, "--prompt", "Hi", "--ignore-eos", "--tokens", "8", "--mode", "plain")
	first := j.Tokens[0]
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		require.NoError(t, os.Symlink(filepath.Join(src, name), filepath.Join(dir, name)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id": [`+itoa(int(first))+`, 151643]}`), 0o644))
	out, errs, j := decodeText(t, dir, "--prompt", "Hi", "--tokens", "8", "--mode", "plain")
	require.Equal(t, []int32{first}, j.Tokens)
	require.True(t, j.StoppedAtEOS)
	require.Equal(t, "\n", out)
	require.Equal(t, "", *j.Text)
	require.Contains(t, errs, "[eos] stopped at the end-of-sequence token "+itoa(int(first))+" after 1 tokens")
}

// TestChatPrompt: --chat wraps the prompt in ChatML turns.
func TestChatPrompt(t *testing.T) {
	dir := textCheckpoint(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	_, _, j := decodeText(t, dir, "--prompt", "Why is the sky blue?", "--chat", "--ignore-eos", "--tokens", "8")
	want := tok.Encode("<|im_start|>user\nWhy is the sky blue?<|im_end|>\n<|im_start|>assistant\n")
	require.Equal(t, len(want), j.PromptTokens)
	require.Equal(t, int32(151644), want[0])
}

// TestServerPromptsFile: server mode takes its requests' prompts from the file and
// prints each request's text as it completes.
func TestServerPromptsFile(t *testing.T) {
	dir := textCheckpoint(t)
	prompts := filepath.Join(t.TempDir(), "prompts.txt")
	require.NoError(t, os.WriteFile(prompts, []byte("first prompt\r\n\nsecond, 第二\n"), 0o644))
	var out, errb bytes.Buffer
	code := run([]string{"--model", dir, "--mode", "server", "--prompts-file", prompts, "--requests", "8", "--request-tokens", "3",
		"--concurrency", "2", "--device", "cpu"}, &out, &errb)
	require.Equal(t, exitFlat, code, errb.String())
	require.Equal(t, 8, strings.Count(out.String(), "=== request "), out.String())
	require.Contains(t, out.String(), "=== request 1 (prompt 2)\n")
	require.Contains(t, errb.String(), "req    8 done")
}

func decodeText(t *testing.T, dir string, args ...string) (string, string, jsonReport) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	var out, errb bytes.Buffer
	code := run(append([]string{"--model", dir, "--device", "cpu", "--json-out", jsonPath}, args...), &out, &errb)
	require.Equal(t, exitFlat, code, errb.String())
	var j jsonReport
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &j))
	return out.String(), errb.String(), j
}

// TestTextRefusals: every text flag that cannot apply is a clear usage error (exit
// 64), before any model is loaded.
func TestTextRefusals(t *testing.T) {
	dir := textCheckpoint(t)
	noTok := t.TempDir()
	require.NoError(t, writeTextCheckpoint(noTok, textConfig(151936), false))
	small := t.TempDir()
	require.NoError(t, writeTextCheckpoint(small, textConfig(1000), true))
	big := filepath.Join(t.TempDir(), "big.txt")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1<<30)) // a sparse 1 GB prompt file
	f.Close()
	empty := filepath.Join(t.TempDir(), "empty.txt")
	require.NoError(t, os.WriteFile(empty, []byte("\n\n"), 0o644))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--prompt", "hi"}, "decode: usage: --prompt needs --model: the checkpoint's tokenizer.json encodes the text (the random model has no tokenizer)\n"},
		{[]string{"--model", noTok, "--prompt", "hi"}, "decode: usage: --prompt: --model " + noTok + " has no tokenizer.json: a text prompt needs the checkpoint's tokenizer (give token ids instead: run without --prompt)\n"},
		{[]string{"--model", small, "--prompt", "hi"}, "decode: usage: --prompt: the tokenizer's ids reach 151668 but the model's vocab_size is 1000: tokenizer.json is not this checkpoint's\n"},
		{[]string{"--model", dir, "--prompt-file", big}, "decode: usage: --prompt-file " + big + " is 1.07 GB, more than a prompt may be (16 MB)\n"},
		{[]string{"--model", dir, "--prompt", "a", "--prompt-file", big}, "decode: usage: --prompt and --prompt-file are two prompts: give one\n"},
		{[]string{"--model", dir, "--prompt", ""}, "decode: usage: --prompt is empty\n"},
		{[]string{"--model", dir, "--chat"}, "decode: usage: --chat needs a text prompt (--prompt, --prompt-file, or --prompts-file in server mode)\n"},
		{[]string{"--model", dir, "--ignore-eos"}, "decode: usage: --ignore-eos needs a text prompt (--prompt, --prompt-file, or --prompts-file in server mode)\n"},
		{[]string{"--model", dir, "--mode", "server", "--prompt", "a"}, "decode: usage: --mode server takes its prompts from --prompts-file (one a line), not --prompt\n"},
		{[]string{"--model", dir, "--prompts-file", empty}, "decode: usage: --prompts-file is for --mode server; --mode batch takes --prompt or --prompt-file\n"},
		{[]string{"--model", dir, "--mode", "server", "--prompts-file", empty}, "decode: usage: --prompts-file " + empty + " holds no prompt (one a line)\n"},
		{[]string{"--model", dir, "--mode", "server", "--prompts-file", empty, "--ignore-eos"}, "decode: usage: --ignore-eos does not apply to --mode server (every request runs --request-tokens, as the churn needs)\n"},
		{[]string{"--model", dir, "--mode", "server", "--prompts-file", empty, "--prompt-len", "3"}, "decode: usage: --prompt-len does not apply with --prompts-file (the file gives the prompts)\n"},
		{[]string{"--model", dir, "--prompt-file", "/nonexistent/p.txt"}, "decode: usage: --prompt-file /nonexistent/p.txt: no such file or directory\n"},
		{[]string{"--model", dir, "--prompt", "hi", "--predict-only"}, "decode: usage: --prompt does not apply with --predict-only (nothing is decoded)\n"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		require.Equal(t, exitUsage, code, "%v: %s", c.args, errb.String())
		require.Equal(t, c.want, errb.String(), "%v", c.args)
	}
}

// TestPromptInvalidUTF8: invalid UTF-8 in a prompt is replaced with U+FFFD, with a
// note; the prompt's ids are those of the replaced text.
func TestPromptInvalidUTF8(t *testing.T) {
	dir := textCheckpoint(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "p.txt")
	require.NoError(t, os.WriteFile(p, []byte("caf\xe9 ol\xe9"), 0o644))
	_, errs, j := decodeText(t, dir, "--prompt-file", p, "--ignore-eos", "--tokens", "8")
	require.Contains(t, errs, "[note] --prompt-file "+p+" is not valid UTF-8: 2 invalid byte(s) replaced with U+FFFD\n")
	require.Equal(t, len(tok.Encode("caf\uFFFD ol\uFFFD")), j.PromptTokens)
}
