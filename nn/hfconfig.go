package nn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ingotml/ingot/nn/checkpoint"
)

// The one reader of Hugging Face config.json files every model family uses: the
// text_config overlay, JSON null as absent, the number rules and the typed errors, so
// that two families read the same file by the same rules.

// Limits that keep hostile configs from driving huge allocations or integer overflow
// further down; real models are orders of magnitude below them. A family's Validate
// holds its layer count to MaxLayers and every size to MaxDim.
const (
	MaxLayers = 1 << 16
	MaxDim    = 1 << 24
)

// ErrConfig is wrapped by every *ConfigError.
var ErrConfig = errors.New("invalid config")

// ConfigError reports one config.json field that is missing, mistyped, out of range or
// asks for something the family does not build. Key is the config.json key (with its
// path inside nested objects, e.g. "rope_parameters.rope_theta"), or a ReproOptions
// field name.
type ConfigError struct {
	Family string // the model package that read it: "qwen3", "qwen35"
	Key    string
	Reason string
}

// Error formats the error as "<family> config: <key>: <reason>", escaped and with the
// key shortened: keys and quoted values come from the file.
func (e *ConfigError) Error() string {
	return checkpoint.Printable(e.Family + " config: " + Short(e.Key) + ": " + e.Reason)
}

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// ConfigErr returns a *ConfigError of family for key.
func ConfigErr(family, key, format string, args ...any) error {
	return &ConfigError{Family: family, Key: key, Reason: fmt.Sprintf(format, args...)}
}

// snippetRunes is how much of a file-derived value an error message quotes.
const snippetRunes = 40

// Short returns s cut to its first 40 runes ("..." marks a cut): an error quotes a
// short prefix of a string read from a file, never the whole of a hostile one.
func Short(s string) string {
	if len(s) <= snippetRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == snippetRunes {
			return s[:i] + "..."
		}
		n++
	}
	return s
}

// Quote is %q of Short(s).
func Quote(s string) string { return fmt.Sprintf("%q", Short(s)) }

// Snippet is a raw JSON value for an error message: trimmed and Short.
func Snippet(raw json.RawMessage) string { return Short(strings.TrimSpace(string(raw))) }

// ConfigFields holds the raw values of a config.json object by key: the top level with
// text_config's keys over it (a multimodal checkpoint's text model), or a nested object.
// A JSON null counts as absent.
type ConfigFields struct {
	family string
	prefix string // for nested objects, e.g. "rope_parameters."
	m      map[string]json.RawMessage
	own    map[string]json.RawMessage // the text model's own object (text_config when nested)
}

// ReadConfigFields decodes config.json data for family (which its errors name) and
// overlays text_config, when present, on the top level.
func ReadConfigFields(family string, data []byte) (ConfigFields, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return ConfigFields{}, ConfigErr(family, "config", "not a JSON object")
	}
	f := ConfigFields{family: family, m: top, own: top}
	nested, err := f.Object("text_config")
	if err != nil {
		return ConfigFields{}, err
	}
	if nested.m != nil {
		merged := make(map[string]json.RawMessage, len(top)+len(nested.m))
		for k, v := range top {
			merged[k] = v
		}
		for k, v := range nested.m {
			merged[k] = v
		}
		f.m = merged
		f.own = nested.m
	}
	return f, nil
}

// Err returns a *ConfigError for key of this object (its path prefixed).
func (f ConfigFields) Err(key, format string, args ...any) error {
	return ConfigErr(f.family, f.prefix+key, format, args...)
}

// Get returns key's raw value; ok is false when it is absent or null.
func (f ConfigFields) Get(key string) (json.RawMessage, bool) {
	raw, ok := f.m[key]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, false
	}
	return raw, true
}

// Own returns the keys of the text model's own object (text_config's when the file
// nests one), whose keys a family may hold to the ones it knows.
func (f ConfigFields) Own() []string {
	keys := make([]string, 0, len(f.own))
	for k := range f.own {
		keys = append(keys, k)
	}
	return keys
}

// Object returns the nested object under key; absent gives an empty ConfigFields.
func (f ConfigFields) Object(key string) (ConfigFields, error) {
	sub := ConfigFields{family: f.family, prefix: f.prefix + key + "."}
	raw, ok := f.Get(key)
	if !ok {
		return sub, nil
	}
	if err := json.Unmarshal(raw, &sub.m); err != nil {
		return ConfigFields{}, f.Err(key, "want a JSON object, got %s", Snippet(raw))
	}
	return sub, nil
}

// number returns the JSON number under key; ok is false when it is absent.
func (f ConfigFields) number(key string) (n json.Number, raw json.RawMessage, ok bool, err error) {
	raw, ok = f.Get(key)
	if !ok {
		return "", nil, false, nil
	}
	// Unmarshal would also take a quoted number; HF writes numbers bare.
	if raw = bytes.TrimSpace(raw); raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return "", raw, true, f.Err(key, "want a number, got %s", Snippet(raw))
	}
	return n, raw, true, nil
}

// Int reads an integer, def when absent: 64.0 is accepted, 64.5 and values past 2^53
// (or int) are not. Ranges are the family's Validate's to check.
func (f ConfigFields) Int(key string, def int) (int, error) {
	_, raw, ok, err := f.number(key)
	if err != nil || !ok {
		return def, err
	}
	v, ok := ParseInt(raw)
	if !ok {
		return 0, f.Err(key, "want an integer, got %s", Snippet(raw))
	}
	return v, nil
}

// ParseInt is Int's rule for one raw JSON value: a bare number that is an integer
// (64.0 too) of at most 2^53 in magnitude, or any int64 that fits in int.
func ParseInt(raw json.RawMessage) (int, bool) {
	var n json.Number
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	if v, err := n.Int64(); err == nil && int64(int(v)) == v {
		return int(v), true
	}
	v, err := n.Float64()
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return 0, false
	}
	return int(v), true
}

// RequiredInt is Int for a key the family has no default for.
func (f ConfigFields) RequiredInt(key string) (int, error) {
	if _, ok := f.Get(key); !ok {
		return 0, f.Err(key, "missing")
	}
	return f.Int(key, 0)
}

// Float reads a number, def when absent.
func (f ConfigFields) Float(key string, def float64) (float64, error) {
	n, raw, ok, err := f.number(key)
	if err != nil || !ok {
		return def, err
	}
	v, err := n.Float64()
	if err != nil {
		return 0, f.Err(key, "number out of range: %s", Snippet(raw))
	}
	return v, nil
}

// Bool reads true or false, def when absent.
func (f ConfigFields) Bool(key string, def bool) (bool, error) {
	raw, ok := f.Get(key)
	if !ok {
		return def, nil
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, f.Err(key, "want true or false, got %s", Snippet(raw))
	}
	return v, nil
}

// String reads a string, def when absent.
func (f ConfigFields) String(key, def string) (string, error) {
	raw, ok := f.Get(key)
	if !ok {
		return def, nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", f.Err(key, "want a string, got %s", Snippet(raw))
	}
	return v, nil
}

// Strings reads an array of strings (errors name the entry: "layer_types[3]"); ok is
// false when it is absent.
func (f ConfigFields) Strings(key string) (v []string, ok bool, err error) {
	raw, ok := f.Get(key)
	if !ok {
		return nil, false, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, true, f.Err(key, "want an array of strings, got %s", Snippet(raw))
	}
	v = make([]string, len(items))
	for i, r := range items {
		if err := json.Unmarshal(r, &v[i]); err != nil {
			return nil, true, f.Err(fmt.Sprintf("%s[%d]", key, i), "want a string, got %s", Snippet(r))
		}
	}
	return v, true, nil
}

// LoadConfig reads config.json at path with the size cap of every metadata file
// (checkpoint.ReadMetadataFile) and parses it; errors name family and the file, and
// wrap the underlying *ConfigError or I/O error.
func LoadConfig[C any](family, path string, parse func([]byte) (C, error)) (C, error) {
	var zero C
	data, err := checkpoint.ReadMetadataFile(path)
	if err != nil {
		return zero, fmt.Errorf("%s: load config %s: %w", family, path, err)
	}
	c, err := parse(data)
	if err != nil {
		return zero, fmt.Errorf("%s: load config %s: %w", family, path, err)
	}
	return c, nil
}
