package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
)

// The request of a phase, built from the workload document exactly as the Gatling simulation
// builds it (gatling/src/test/java/gatebench/GenericSimulation.java): templates of text and
// parameter parts, the plan's value generators, bodies, and credentials read from environment
// variables (never from the document).

type part struct {
	Text   *string `json:"text"`
	Param  string  `json:"param"`
	As     string  `json:"as"`
	Secret string  `json:"secret"`
}

type authHeader struct {
	Header  string          `json:"header"`
	Prefix  string          `json:"prefix"`
	Env     json.RawMessage `json:"env"`
	PerUser bool            `json:"per_user"`
}

type bodyPart struct {
	Name        string `json:"name"`
	Size        *int   `json:"size"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Parts       []part `json:"parts"`
}

type bodySpec struct {
	Kind        string          `json:"kind"`
	ContentType string          `json:"content_type"`
	Parts       []part          `json:"-"`
	RawParts    json.RawMessage `json:"parts"`
	Size        int             `json:"size"`
	Data        string          `json:"data"`
	Multipart   []bodyPart      `json:"-"`
}

type requestSpec struct {
	Method    string              `json:"method"`
	BaseURL   string              `json:"base_url"`
	Path      []part              `json:"path"`
	Query     [][]json.RawMessage `json:"query"`
	Headers   [][]json.RawMessage `json:"headers"`
	Auth      []authHeader        `json:"auth"`
	Body      bodySpec            `json:"body"`
	Expect    []int               `json:"expect"`
	TimeoutMS int64               `json:"timeout_ms"`
}

// template is a string of literal text and parameter values, each encoded for where it goes.
type template struct {
	texts     []string
	params    []int // index into the generator list, -1 for text
	encodings []string
}

func newTemplate(parts []part, names map[string]int, secrets map[string]string) (template, error) {
	t := template{}
	for _, p := range parts {
		switch {
		case p.Param != "":
			i, ok := names[p.Param]
			if !ok {
				return t, fmt.Errorf("template names parameter %q, which has no generator", p.Param)
			}
			enc := p.As
			if enc == "" {
				enc = "raw"
			}
			t.texts = append(t.texts, "")
			t.params = append(t.params, i)
			t.encodings = append(t.encodings, enc)
		case p.Secret != "":
			t.texts = append(t.texts, percentEncode(secrets[p.Secret]))
			t.params = append(t.params, -1)
			t.encodings = append(t.encodings, "")
		default:
			text := ""
			if p.Text != nil {
				text = *p.Text
			}
			t.texts = append(t.texts, text)
			t.params = append(t.params, -1)
			t.encodings = append(t.encodings, "")
		}
	}
	return t, nil
}

func (t template) render(out *strings.Builder, values []any) {
	for i, text := range t.texts {
		if t.params[i] < 0 {
			out.WriteString(text)
			continue
		}
		out.WriteString(encodeValue(values[t.params[i]], t.encodings[i]))
	}
}

func (t template) String(values []any) string {
	var b strings.Builder
	t.render(&b, values)
	return b.String()
}

// valueText is a value as the simulation prints it (Java's String.valueOf).
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e7 {
			return strconv.FormatFloat(x, 'f', 1, 64)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	case json.RawMessage:
		var s string
		if json.Unmarshal(x, &s) == nil {
			return s
		}
		return ""
	}
	return fmt.Sprint(v)
}

func encodeValue(v any, encoding string) string {
	switch encoding {
	case "path", "query":
		return percentEncode(valueText(v))
	case "json":
		if raw, ok := v.(json.RawMessage); ok {
			return string(raw)
		}
		data, _ := json.Marshal(v)
		return string(data)
	case "json-string":
		data, _ := json.Marshal(valueText(v))
		return string(data[1 : len(data)-1])
	}
	return valueText(v)
}

// percentEncode keeps the unreserved characters of RFC 3986 and writes every other byte as
// %XX (upper case), as the simulation does.
func percentEncode(text string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// generator yields one value per request: constant, list (in order, cycling, or random),
// range (low..high, cycling), random (uniform in low..high), counter or weighted (a recorded
// value distribution: the same draws as every other engine, see weighted.go).
type generator struct {
	kind      string
	value     any
	values    []any
	random    bool
	low, high int64
	start     int64
	step      int64
	position  int64
	weighted  *weightedSpec
}

type generatorSpec struct {
	Kind   string            `json:"kind"`
	Value  json.RawMessage   `json:"value"`
	Values []json.RawMessage `json:"values"`
	Random bool              `json:"random"`
	Low    int64             `json:"low"`
	High   int64             `json:"high"`
	Start  *int64            `json:"start"`
	Step   *int64            `json:"step"`
	// weighted
	Cumulative []float64   `json:"cumulative"`
	Total      float64     `json:"total"`
	Seed       uint64      `json:"seed"`
	Offset     int64       `json:"offset"`
	Stride     *int64      `json:"stride"`
	Others     *othersSpec `json:"others"`
}

func plain(raw json.RawMessage) any {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case string, bool, nil:
		return x
	}
	return raw // an object or array: sent as JSON
}

func newGenerator(spec generatorSpec) (*generator, error) {
	g := &generator{kind: spec.Kind, random: spec.Random, low: spec.Low, high: spec.High, start: 1, step: 1}
	switch spec.Kind {
	case "constant":
		g.value = plain(spec.Value)
	case "list":
		if len(spec.Values) == 0 {
			return nil, fmt.Errorf("a list generator needs values")
		}
		for _, v := range spec.Values {
			g.values = append(g.values, plain(v))
		}
	case "range", "random":
		if spec.High < spec.Low {
			return nil, fmt.Errorf("%s: high %d is below low %d", spec.Kind, spec.High, spec.Low)
		}
	case "counter":
		if spec.Start != nil {
			g.start = *spec.Start
		}
		if spec.Step != nil {
			g.step = *spec.Step
		}
	case "weighted":
		w, err := newWeighted(spec)
		if err != nil {
			return nil, err
		}
		g.weighted = w
	default:
		return nil, fmt.Errorf("unknown generator %q", spec.Kind)
	}
	return g, nil
}

func (g *generator) next(rng *rand.Rand) any {
	n := g.position
	g.position++
	switch g.kind {
	case "constant":
		return g.value
	case "list":
		if g.random {
			return g.values[rng.Intn(len(g.values))]
		}
		return g.values[n%int64(len(g.values))]
	case "range":
		return g.low + n%(g.high-g.low+1)
	case "random":
		return g.low + int64(math.Floor(rng.Float64()*float64(g.high-g.low+1)))
	case "weighted":
		return g.weighted.value(n)
	}
	return g.start + n*g.step
}

// values holds a phase's generators in a fixed order (sorted by name), so a seed gives the
// same values on every run.
type values struct {
	names []string
	gens  []*generator
	rng   *rand.Rand
}

func newValues(params map[string]generatorSpec, seed int64) (*values, map[string]int, error) {
	v := &values{rng: rand.New(rand.NewSource(seed))}
	for name := range params {
		v.names = append(v.names, name)
	}
	sort.Strings(v.names)
	index := map[string]int{}
	for i, name := range v.names {
		g, err := newGenerator(params[name])
		if err != nil {
			return nil, nil, fmt.Errorf("params.%s: %v", name, err)
		}
		v.gens = append(v.gens, g)
		index[name] = i
	}
	return v, index, nil
}

func (v *values) next() []any {
	out := make([]any, len(v.gens))
	for i, g := range v.gens {
		out[i] = g.next(v.rng)
	}
	return out
}

// generated is deterministic filler content (not all zeros, so compression cannot cheat),
// the simulation's xorshift sequence, one shared slice per size.
var generatedCache = map[int][]byte{}

func generated(size int) []byte {
	if b, ok := generatedCache[size]; ok {
		return b
	}
	b := make([]byte, size)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	generatedCache[size] = b
	return b
}

// secretValue is an auth header's value: its prefix and the variable's value (Basic:
// base64 of user:password from two variables).
func secretValue(h authHeader, secrets map[string]string) (string, error) {
	var names []string
	if err := json.Unmarshal(h.Env, &names); err != nil {
		var one string
		if err := json.Unmarshal(h.Env, &one); err != nil {
			return "", fmt.Errorf("auth %s: env must be a name or a list of two", h.Header)
		}
		return h.Prefix + secrets[one], nil
	}
	if len(names) != 2 {
		return "", fmt.Errorf("auth %s: Basic needs two variables", h.Header)
	}
	pair := secrets[names[0]] + ":" + secrets[names[1]]
	return h.Prefix + base64.StdEncoding.EncodeToString([]byte(pair)), nil
}

// userTokens reads a per-user token file: one token a line.
func userTokens(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if line != "" {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no token", path)
	}
	return out, nil
}

func formName(text string) string {
	r := strings.NewReplacer("\r", "%0D", "\n", "%0A", "\"", "%22")
	return r.Replace(text)
}
