package msltest

import (
	"fmt"
	"strconv"
	"strings"
)

// paramKind tells how the driver fills a kernel parameter.
type paramKind int

const (
	paramBuffer paramKind = iota // [[buffer(n)]]
	paramVector                  // a thread attribute carried as uint3
	paramScalar                  // a thread attribute carried as uint
	paramConst                   // a thread attribute that is a constant
)

// threadAttrs maps each supported thread attribute to the driver's source
// of its value (a ThreadInfo field or a constant) and its shape.
var threadAttrs = map[string]struct {
	kind paramKind
	expr string
}{
	"thread_position_in_grid":          {paramVector, "msl_t.thread_position_in_grid"},
	"thread_position_in_threadgroup":   {paramVector, "msl_t.thread_position_in_threadgroup"},
	"threadgroup_position_in_grid":     {paramVector, "msl_t.threadgroup_position_in_grid"},
	"threads_per_threadgroup":          {paramVector, "msl_t.threads_per_threadgroup"},
	"dispatch_threads_per_threadgroup": {paramVector, "msl_t.dispatch_threads_per_threadgroup"},
	"threadgroups_per_grid":            {paramVector, "msl_t.threadgroups_per_grid"},
	"threads_per_grid":                 {paramVector, "msl_t.threads_per_grid"},
	"thread_index_in_threadgroup":      {paramScalar, "msl_t.thread_index_in_threadgroup"},
	"thread_index_in_simdgroup":        {paramScalar, "msl_t.thread_index_in_simdgroup"},
	"simdgroup_index_in_threadgroup":   {paramScalar, "msl_t.simdgroup_index_in_threadgroup"},
	"simdgroups_per_threadgroup":       {paramScalar, "msl_t.simdgroups_per_threadgroup"},
	"threads_per_simdgroup":            {paramConst, "uint(32)"},
	"thread_execution_width":           {paramConst, "uint(32)"},
}

// param is one kernel parameter as the driver sees it.
type param struct {
	name     string
	kind     paramKind
	attr     string
	index    int  // buffer index, for paramBuffer
	readOnly bool // a constant or const buffer, mapped read-only
	// addressSpace: the buffer parameter names device or constant (the lint
	// requires it; the emulator does not care).
	addressSpace bool
}

// kernelSig is one entry point found in a .metal file.
type kernelSig struct {
	name   string
	line   int
	params []param
}

// buffer returns the parameter bound to buffer index i, if any.
func (k *kernelSig) buffer(i int) (param, bool) {
	for _, p := range k.params {
		if p.kind == paramBuffer && p.index == i {
			return p, true
		}
	}
	return param{}, false
}

// findKernels returns the entry points of a source: functions declared
// `kernel void NAME(...)` or `[[kernel]] void NAME(...)` that are not
// templates. Template kernels are skipped (they need explicit instantiation
// with a host name, which the driver does not model).
func findKernels(toks []token) ([]*kernelSig, error) {
	var out []*kernelSig
	seen := map[string]bool{}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind != tokIdent || t.text != "kernel" || t.directive >= 0 {
			continue
		}
		start, next := i, i+1
		if i >= 2 && toks[i-1].text == "[" && toks[i-2].text == "[" {
			if i+2 >= len(toks) || toks[i+1].text != "]" || toks[i+2].text != "]" {
				continue
			}
			start, next = i-2, i+3
		}
		if isTemplateDecl(toks, start) {
			continue // a template kernel or an explicit instantiation
		}
		if next+2 >= len(toks) || toks[next].text != "void" || toks[next+1].kind != tokIdent || toks[next+2].text != "(" {
			return nil, fmt.Errorf("line %d: expected `kernel void NAME(` at a kernel declaration", t.line)
		}
		k := &kernelSig{name: toks[next+1].text, line: t.line}
		if seen[k.name] {
			return nil, fmt.Errorf("line %d: kernel %s declared twice", t.line, k.name)
		}
		seen[k.name] = true
		params, end, err := splitParams(toks, next+2)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", k.name, err)
		}
		for _, p := range params {
			pp, err := parseParam(p)
			if err != nil {
				return nil, fmt.Errorf("kernel %s: %w", k.name, err)
			}
			if pp.kind == paramBuffer {
				if _, dup := k.buffer(pp.index); dup {
					return nil, fmt.Errorf("kernel %s: line %d: [[buffer(%d)]] used twice", k.name, p[0].line, pp.index)
				}
			}
			k.params = append(k.params, pp)
		}
		out = append(out, k)
		i = end
	}
	return out, nil
}

// isTemplateDecl reports whether the declaration starting at toks[start]
// (after skipping back over [[...]] attributes) follows `template <...>` or
// is an explicit instantiation `template [[host_name("x")]] [[kernel]] ...`.
func isTemplateDecl(toks []token, start int) bool {
	j := start - 1
	for j >= 1 && toks[j].text == "]" && toks[j-1].text == "]" {
		k := j - 2
		for k >= 1 && !(toks[k].text == "[" && toks[k-1].text == "[") {
			k--
		}
		j = k - 2
	}
	return j >= 0 && (toks[j].text == ">" || toks[j].text == "template")
}

// splitParams splits the parameter list opened by toks[open] ("(") at its
// top-level commas and returns the index of the closing ")".
func splitParams(toks []token, open int) ([][]token, int, error) {
	var params [][]token
	depth := 0
	cur := []token{}
	for j := open + 1; j < len(toks); j++ {
		s := toks[j].text
		switch s {
		case "(", "[", "<", "{":
			depth++
		case ")", "]", ">", "}":
			if depth == 0 && s == ")" {
				if len(cur) > 0 {
					params = append(params, cur)
				} else if len(params) > 0 {
					return nil, 0, fmt.Errorf("line %d: empty parameter", toks[j].line)
				}
				return params, j, nil
			}
			depth--
		case ",":
			if depth == 0 {
				if len(cur) == 0 {
					return nil, 0, fmt.Errorf("line %d: empty parameter", toks[j].line)
				}
				params = append(params, cur)
				cur = []token{}
				continue
			}
		}
		cur = append(cur, toks[j])
	}
	return nil, 0, fmt.Errorf("line %d: unterminated parameter list", toks[open].line)
}

// parseParam reads the attribute of one parameter.
func parseParam(p []token) (param, error) {
	line := p[0].line
	at := -1
	for j := 0; j+1 < len(p); j++ {
		if p[j].text == "[" && p[j+1].text == "[" {
			at = j
			break
		}
	}
	text := joinTokens(p)
	if at < 0 || at+3 >= len(p) || p[at+2].kind != tokIdent {
		return param{}, fmt.Errorf("line %d: parameter %q has no attribute such as [[buffer(0)]]", line, text)
	}
	var pp param
	for j := at - 1; j >= 0; j-- {
		if p[j].kind == tokIdent {
			pp.name = p[j].text
			break
		}
	}
	pp.attr = p[at+2].text
	rest := p[at+3:]
	if pp.attr == "buffer" {
		if len(rest) < 5 || rest[0].text != "(" || rest[1].kind != tokNumber || rest[2].text != ")" || rest[3].text != "]" || rest[4].text != "]" {
			return param{}, fmt.Errorf("line %d: parameter %q: the buffer index must be an integer literal", line, text)
		}
		n, err := strconv.Atoi(rest[1].text)
		if err != nil || n < 0 || n > 30 {
			return param{}, fmt.Errorf("line %d: parameter %q: buffer index %s is not in 0..30", line, text, rest[1].text)
		}
		pp.kind, pp.index = paramBuffer, n
		indirect := false
		for _, t := range p[:at] {
			if t.text == "*" || t.text == "&" {
				indirect = true
				break
			}
			if t.text == "const" || t.text == "constant" {
				pp.readOnly = true
			}
			if t.text == "device" || t.text == "constant" {
				pp.addressSpace = true
			}
		}
		if !indirect {
			return param{}, fmt.Errorf("line %d: parameter %q: a buffer parameter must be a pointer or a reference", line, text)
		}
		return pp, nil
	}
	a, ok := threadAttrs[pp.attr]
	if !ok {
		return param{}, fmt.Errorf("line %d: parameter %q: attribute [[%s]] is not supported by msltest", line, text, pp.attr)
	}
	if len(rest) < 2 || rest[0].text != "]" || rest[1].text != "]" {
		return param{}, fmt.Errorf("line %d: parameter %q: malformed attribute", line, text)
	}
	pp.kind = a.kind
	return pp, nil
}

// joinTokens spells tokens back with single spaces, for messages.
func joinTokens(ts []token) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.text
	}
	return strings.Join(parts, " ")
}

// wrappers generates the C++ entry function of each kernel and the table the
// driver looks kernels up in.
func wrappers(ks []*kernelSig) string {
	var b strings.Builder
	for i, k := range ks {
		fmt.Fprintf(&b, "static void msl_entry_%d(const msl_detail::ThreadInfo& msl_t) {\n", i)
		fmt.Fprintf(&b, "  (void)msl_t;\n  using msl_F = decltype(&%s);\n", k.name)
		fmt.Fprintf(&b, "  static_assert(msl_detail::fn_params<msl_F>::count == %d, \"msltest read %d parameters of kernel %s\");\n",
			len(k.params), len(k.params), k.name)
		fmt.Fprintf(&b, "  %s(", k.name)
		for j, p := range k.params {
			if j > 0 {
				b.WriteString(",")
			}
			if p.kind == paramBuffer {
				fmt.Fprintf(&b, "\n    msl_detail::buffer_arg<msl_detail::param_t<msl_F, %d>>(%d)", j, p.index)
			} else {
				fmt.Fprintf(&b, "\n    msl_detail::attr_arg<msl_detail::param_t<msl_F, %d>>(%s)", j, threadAttrs[p.attr].expr)
			}
		}
		b.WriteString(");\n}\n")
	}
	b.WriteString("static const msl_detail::KernelEntry msl_kernel_table[] = {\n")
	for i, k := range ks {
		fmt.Fprintf(&b, "  {\"%s\", msl_entry_%d},\n", k.name, i)
	}
	if len(ks) == 0 {
		b.WriteString("  {\"\", nullptr},\n")
	}
	b.WriteString("};\n")
	fmt.Fprintf(&b, "int main(int argc, char** argv) { return msl_detail::driver_main(argc, argv, msl_kernel_table, %d); }\n", len(ks))
	return b.String()
}
