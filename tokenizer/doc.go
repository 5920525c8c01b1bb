// Package tokenizer is a text codec: it loads a Hugging Face tokenizer.json of the
// byte-level BPE kind the Qwen families ship (Qwen2, Qwen3, Qwen3-Next, Qwen3.5) and
// turns text into token ids and ids back into text.
//
// It is a package of its own, importing nothing of ingot, because a tokenizer is
// independent of the compute graph: the same ids feed any model, and the graph never
// sees text. Commands (cmd/tokenize, cmd/decode) put the two together.
//
// Encoding follows the Hugging Face pipeline: added tokens (special or not) are
// matched in the raw text first, leftmost and longest; the text between them is
// normalized (NFC), split by the pre-tokenizer's regex (Qwen2's, whose `\s+(?!\S)`
// lookahead Go's regexp lacks, so the split is a hand-written scanner with the
// regex's alternation semantics, see pretok.go), mapped to the byte-level alphabet
// and merged by BPE rank. Decoding maps tokens back to bytes; bytes that are not
// valid UTF-8 become U+FFFD, as the reference's lossy decode does.
//
// Invalid UTF-8 in the input text is replaced: each byte that does not start a valid
// sequence encodes as U+FFFD (what ranging over a Go string yields). Callers that
// want to refuse such text check utf8.ValidString first (InvalidBytes counts them).
package tokenizer
