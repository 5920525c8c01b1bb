package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/predict"
	"github.com/ingotml/ingot/repro"
	"github.com/ingotml/ingot/tokenizer"
)

// Text in, text out: with --prompt (or --prompt-file, or --prompts-file in server
// mode) the prompt is encoded with --model's tokenizer.json, the generated text is
// streamed to stdout as it comes, and every report line moves to stderr, so
// `decode --model DIR --prompt TEXT > answer.txt` holds the answer alone.

// maxPromptBytes bounds --prompt-file and --prompts-file: a prompt must fit a
// model's context, and a 1 GB file read by mistake is a clear error, not an OOM.
const maxPromptBytes = 16 << 20

// textFlags are the text options.
type textFlags struct {
	prompt      string
	promptFile  string
	promptsFile string
	chat        bool
	ignoreEOS   bool
	run         *textRun // made by prepareText (nil: ids in, ids out)
}

func (o *options) textFlagSet(fs *flag.FlagSet) {
	fs.StringVar(&o.text.prompt, "prompt", "", "the prompt as text, encoded with --model's tokenizer.json (the generated text goes to stdout, the report to stderr)")
	fs.StringVar(&o.text.promptFile, "prompt-file", "", "read the prompt text from this file (at most 16 MB)")
	fs.StringVar(&o.text.promptsFile, "prompts-file", "", "server mode: the requests' prompts, one a line (empty lines skipped), taken in turn")
	fs.BoolVar(&o.text.chat, "chat", false, "wrap each prompt in the checkpoint's ChatML turns (<|im_start|>user ... <|im_end|> <|im_start|>assistant)")
	fs.BoolVar(&o.text.ignoreEOS, "ignore-eos", false, "with a text prompt: decode all --tokens, past the end-of-sequence token")
}

// textGiven reports whether a flag asks for text.
func (o *options) textGiven() bool {
	return o.set["prompt"] || o.set["prompt-file"] || o.set["prompts-file"]
}

// validateText refuses text flags that cannot apply: without --model (the random
// model has no tokenizer), in the wrong mode, or with nothing to apply to.
func (o *options) validateText() error {
	bad := func(f string, args ...any) error { return fmt.Errorf("%w: "+f, append([]any{errUsage}, args...)...) }
	t := &o.text
	textFlag := ""
	for _, f := range []string{"prompt", "prompt-file", "prompts-file", "chat", "ignore-eos"} {
		if o.set[f] {
			textFlag = f
			break
		}
	}
	switch {
	case textFlag == "":
		return nil
	case o.set["prompt"] && o.set["prompt-file"]:
		return bad("--prompt and --prompt-file are two prompts: give one")
	case o.mode == "server" && (o.set["prompt"] || o.set["prompt-file"]):
		return bad("--mode server takes its prompts from --prompts-file (one a line), not --%s", map[bool]string{true: "prompt", false: "prompt-file"}[o.set["prompt"]])
	case o.mode != "server" && o.set["prompts-file"]:
		return bad("--prompts-file is for --mode server; --mode %s takes --prompt or --prompt-file", o.mode)
	case o.mode == "server" && o.set["ignore-eos"]:
		return bad("--ignore-eos does not apply to --mode server (every request runs --request-tokens, as the churn needs)")
	case !o.textGiven():
		return bad("--%s needs a text prompt (--prompt, --prompt-file, or --prompts-file in server mode)", textFlag)
	case o.modelDir == "":
		return bad("--%s needs --model: the checkpoint's tokenizer.json encodes the text (the random model has no tokenizer)", textFlag)
	case o.set["prompts-file"] && o.set["prompt-len"]:
		return bad("--prompt-len does not apply with --prompts-file (the file gives the prompts)")
	case o.set["prompts-file"] && o.set["seed"]:
		return bad("--seed does not apply with --prompts-file (it would pick the random prompts)")
	case o.set["prompt"] && t.prompt == "":
		return bad("--prompt is empty")
	}
	return nil
}

// textRun is a run's text side: the tokenizer, the encoded prompts, the stop tokens.
type textRun struct {
	tok     *tokenizer.Tokenizer
	prompt  []int32   // --prompt or --prompt-file
	prompts [][]int32 // --prompts-file
	eos     map[int32]bool
	out     io.Writer // where the text goes (stdout)
	notes   io.Writer // where notes go (the report's stream)
}

// prepareText loads the checkpoint's tokenizer and encodes the prompts (nil without
// text flags). Every refusal is a usage error (exit 64).
func prepareText(o *options, notes io.Writer) (*textRun, error) {
	if !o.textGiven() {
		return nil, nil
	}
	bad := func(f string, args ...any) error { return fmt.Errorf("%w: "+f, append([]any{errUsage}, args...)...) }
	flagName := "--prompt"
	switch {
	case o.set["prompt-file"]:
		flagName = "--prompt-file"
	case o.set["prompts-file"]:
		flagName = "--prompts-file"
	}
	path := filepath.Join(o.modelDir, "tokenizer.json")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, bad("%s: --model %s has no tokenizer.json: a text prompt needs the checkpoint's tokenizer (give token ids instead: run without %s)", flagName, o.modelDir, flagName)
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		return nil, bad("%s: %w", flagName, err)
	}
	info, err := inspectCheckpoint(o.modelDir)
	if err != nil {
		return nil, err
	}
	info.ck.Close()
	if v := info.desc.Vocab; tok.VocabSize() > v {
		return nil, bad("%s: the tokenizer's ids reach %d but the model's vocab_size is %d: tokenizer.json is not this checkpoint's", flagName, tok.VocabSize()-1, v)
	}
	tr := &textRun{tok: tok, notes: notes}
	encode := func(what, text string) ([]int32, error) {
		if n := tokenizer.InvalidBytes(text); n > 0 {
			fmt.Fprintf(notes, "[note] %s is not valid UTF-8: %d invalid byte(s) replaced with U+FFFD\n", what, n)
		}
		if o.text.chat {
			if text, err = chatML(tok, text); err != nil {
				return nil, err
			}
		}
		ids := tok.Encode(text)
		if len(ids) == 0 {
			return nil, bad("%s encodes to no tokens", what)
		}
		return ids, nil
	}
	switch {
	case o.set["prompt"]:
		tr.prompt, err = encode("--prompt", o.text.prompt)
	case o.set["prompt-file"]:
		var text string
		if text, err = readPromptFile("--prompt-file", o.text.promptFile); err == nil {
			tr.prompt, err = encode("--prompt-file "+o.text.promptFile, text)
		}
	default:
		var text string
		if text, err = readPromptFile("--prompts-file", o.text.promptsFile); err != nil {
			return nil, err
		}
		for i, line := range strings.Split(text, "\n") {
			line = strings.TrimSuffix(line, "\r")
			if strings.TrimSpace(line) == "" {
				continue
			}
			ids, err := encode(fmt.Sprintf("--prompts-file line %d", i+1), line)
			if err != nil {
				return nil, err
			}
			tr.prompts = append(tr.prompts, ids)
		}
		if len(tr.prompts) == 0 {
			return nil, bad("--prompts-file %s holds no prompt (one a line)", o.text.promptsFile)
		}
	}
	if err != nil {
		return nil, err
	}
	if !o.text.ignoreEOS {
		tr.eos, err = eosTokens(o.modelDir, tok, info.desc.Vocab)
		if err != nil {
			return nil, err
		}
	}
	return tr, nil
}

// readPromptFile reads a prompt file of at most maxPromptBytes.
func readPromptFile(flagName, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s %s: %w", errUsage, flagName, path, unwrapPath(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > maxPromptBytes {
		return "", fmt.Errorf("%w: %s %s is %s, more than a prompt may be (%d MB)", errUsage, flagName, path, size(st.Size()), maxPromptBytes>>20)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPromptBytes+1))
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", errUsage, flagName, err)
	}
	if len(b) > maxPromptBytes {
		return "", fmt.Errorf("%w: %s %s is more than a prompt may be (%d MB)", errUsage, flagName, path, maxPromptBytes>>20)
	}
	return string(b), nil
}

// chatML wraps a user message in the Qwen families' ChatML turns, the assistant's
// turn opened (what their chat template renders for one user message with
// add_generation_prompt). ingot has no Jinja engine: a checkpoint without the ChatML
// tokens is refused.
func chatML(tok *tokenizer.Tokenizer, text string) (string, error) {
	for _, s := range []string{"<|im_start|>", "<|im_end|>"} {
		if !isAdded(tok, s) {
			return "", fmt.Errorf("%w: --chat: the tokenizer has no %s token: ingot knows only the ChatML chat format", errUsage, s)
		}
	}
	return "<|im_start|>user\n" + text + "<|im_end|>\n<|im_start|>assistant\n", nil
}

func isAdded(tok *tokenizer.Tokenizer, content string) bool {
	for _, a := range tok.Added() {
		if a.Content == content {
			return true
		}
	}
	return false
}

// eosTokens are the ids that end a completion: generation_config.json's
// eos_token_id (an id or a list), else config.json's (or its text_config's), else
// tokenizer_config.json's eos_token. None found is an empty set (decode all
// --tokens).
func eosTokens(dir string, tok *tokenizer.Tokenizer, vocab int) (map[int32]bool, error) {
	ids := map[int32]bool{}
	for _, name := range []string{"generation_config.json", "config.json"} {
		var doc struct {
			EOS  json.RawMessage `json:"eos_token_id"`
			Text *struct {
				EOS json.RawMessage `json:"eos_token_id"`
			} `json:"text_config"`
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || json.Unmarshal(b, &doc) != nil {
			continue
		}
		raw := doc.EOS
		if (len(raw) == 0 || string(raw) == "null") && doc.Text != nil {
			raw = doc.Text.EOS
		}
		var one int32
		var list []int32
		switch {
		case len(raw) == 0 || string(raw) == "null":
			continue
		case json.Unmarshal(raw, &one) == nil:
			list = []int32{one}
		case json.Unmarshal(raw, &list) == nil:
		default:
			return nil, fmt.Errorf("%w: --model: %s: eos_token_id %s is not an id or a list of ids", errUsage, name, raw)
		}
		for _, id := range list {
			if id < 0 || int(id) >= vocab {
				return nil, fmt.Errorf("%w: --model: %s: eos_token_id %d is outside the vocabulary [0, %d)", errUsage, name, id, vocab)
			}
			ids[id] = true
		}
		if len(ids) > 0 {
			return ids, nil
		}
	}
	var tc struct {
		EOS json.RawMessage `json:"eos_token"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil && json.Unmarshal(b, &tc) == nil {
		var s string
		var obj struct {
			Content string `json:"content"`
		}
		if json.Unmarshal(tc.EOS, &s) != nil && json.Unmarshal(tc.EOS, &obj) == nil {
			s = obj.Content
		}
		if id, ok := tok.TokenID(s); ok && s != "" {
			ids[id] = true
		}
	}
	return ids, nil
}

// apply sets a plain or batch run's prompt and stop, and streams the text as the
// tokens come (tokens that end inside a character are held until it is whole).
// It returns the function that ends the stream.
func (tr *textRun) apply(opts *repro.Options, h *repro.Hooks) (finish func(r *result)) {
	if tr == nil {
		return func(*result) {}
	}
	opts.Prompt = tr.prompt
	if len(tr.eos) > 0 {
		opts.Stop = func(t int32) bool { return tr.eos[t] }
	}
	s := tr.tok.NewStream()
	printed, unknown := 0, 0
	step := h.Step
	h.Step = func(r *result, n int) {
		if step != nil {
			step(r, n)
		}
		for ; printed < n; printed++ {
			t := r.Tokens[printed]
			if r.Stopped && printed == n-1 {
				continue // the end-of-sequence token itself is not printed
			}
			piece, err := s.Push(t)
			if err != nil {
				unknown++ // an embedding row past the tokenizer's ids (padding)
				continue
			}
			io.WriteString(tr.out, piece)
		}
	}
	return func(r *result) {
		io.WriteString(tr.out, s.Flush()+"\n")
		if unknown > 0 {
			fmt.Fprintf(tr.notes, "[note] %d generated id(s) are past the tokenizer's %d ids (padding rows of the embedding): not printed\n", unknown, tr.tok.VocabSize())
		}
		if r.Stopped {
			fmt.Fprintf(tr.notes, "[eos] stopped at the end-of-sequence token %d after %s tokens (--ignore-eos decodes all --tokens)\n", r.Tokens[len(r.Tokens)-1], comma(len(r.Tokens)))
		}
	}
}

// applyChurn sets a server run's prompts and prints each request's text when it
// completes.
func (tr *textRun) applyChurn(opts *repro.ChurnOptions, h *repro.Hooks) {
	if tr == nil {
		return
	}
	opts.Prompts = tr.prompts
	pending := map[int][]int32{}
	h.Token = func(r *result, t generate.Token) {
		pending[t.ID] = append(pending[t.ID], t.Token)
		if !t.Finished {
			return
		}
		fmt.Fprintf(tr.out, "=== request %d (prompt %d)\n%s\n", t.ID, t.ID%len(tr.prompts)+1, tr.text(pending[t.ID], false))
		delete(pending, t.ID)
	}
}

// text decodes ids, skipping any the tokenizer does not know (and the last when it
// is the end-of-sequence token that stopped the run).
func (tr *textRun) text(ids []int32, stopped bool) string {
	if stopped && len(ids) > 0 {
		ids = ids[:len(ids)-1]
	}
	known := make([]int32, 0, len(ids))
	for _, id := range ids {
		if int(id) < tr.tok.VocabSize() {
			known = append(known, id)
		}
	}
	s, err := tr.tok.Decode(known)
	if err != nil { // a hole in the tokenizer's ids: decode what can be
		var b strings.Builder
		for _, id := range known {
			if p, err := tr.tok.Decode([]int32{id}); err == nil {
				b.WriteString(p)
			}
		}
		return b.String()
	}
	return s
}

// addJSON adds the run's text to its JSON report (plain and batch runs).
func (tr *textRun) addJSON(j *jsonReport, r *result) {
	if tr == nil || r.Mode == "server" {
		return
	}
	t := tr.text(r.Tokens, r.Stopped)
	j.Text = &t
	j.PromptTokens = len(tr.prompt)
	j.StoppedAtEOS = r.Stopped
}

// eosExitCode is a run's exit code: code, but 0 (flat) where the end-of-sequence
// token ended the completion before a verdict could be drawn: the answer is
// whole, and too short to measure a leak in.
func eosExitCode(r *result, code int) int {
	if r.Stopped && !r.Crashed && r.Verdict(0) == predict.None {
		return exitFlat
	}
	return code
}
