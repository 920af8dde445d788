package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// The plan's value generators, as every engine computes them (docs/engine.md, "Values"): the
// Gatling simulation (gatling/src/test/java/gatebench/GenericSimulation.java), the wrk script
// (src/gatebench/local/engines/wrk_phase.lua) and this engine give request g of a phase the same
// values for the same document, whatever thread, user or worker sends it:
//
//	constant  its value
//	list      values[g mod n]; random: values[floor(u × n)]
//	range     low + (g mod (high − low + 1))
//	random    low + floor(u × (high − low + 1))
//	counter   start + g × step
//	weighted  a recorded value distribution (weighted.go): its own seed, draw g
//
// u is the uniform number of request g for the parameter: SplitMix64's (g+1)-th output from
// the state seed XOR fnv1a64(the parameter's name in UTF-8), its top 53 bits over 2^53. It
// depends on nothing but (seed, name, g), so no engine keeps a random stream in step with
// another's order of sending. tests/integration/test_value_conformance.py sends the same
// document through the three engines and compares what arrives.

const (
	splitmixGamma = 0x9E3779B97F4A7C15
	fnvOffset     = 0xcbf29ce484222325
	fnvPrime      = 0x100000001b3
)

func fnv1a64(text string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(text); i++ {
		h ^= uint64(text[i])
		h *= fnvPrime
	}
	return h
}

// unitDraw is SplitMix64's output for the state state + (n + 1) × gamma, its top 53 bits over
// 2^53 (gatebench.core.workload.unit_draw is the reference): the one mixing of every draw.
func unitDraw(state, n uint64) float64 {
	z := state + (n+1)*splitmixGamma
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return float64(z>>11) * 0x1p-53
}

// unitOf is u for request g of the parameter whose stream key is key (module comment).
func unitOf(seed, key uint64, g int64) float64 {
	return unitDraw(seed^key, uint64(g))
}

// encoding is where a value goes in a request.
type encoding uint8

const (
	encRaw encoding = iota
	encPath
	encQuery
	encJSON
	encJSONString
	encodings
)

func encodingOf(name string) (encoding, error) {
	switch name {
	case "", "raw":
		return encRaw, nil
	case "path":
		return encPath, nil
	case "query":
		return encQuery, nil
	case "json":
		return encJSON, nil
	case "json-string":
		return encJSONString, nil
	}
	return encRaw, fmt.Errorf("unknown encoding %q", name)
}

// text is a constant or list value written out once for every encoding.
type text [encodings][]byte

func textOf(v any) text {
	var t text
	for e := encoding(0); e < encodings; e++ {
		t[e] = []byte(encodeValue(v, e))
	}
	return t
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
	// weighted (weighted.go)
	Cumulative []float64   `json:"cumulative"`
	Total      float64     `json:"total"`
	Seed       uint64      `json:"seed"`
	Offset     int64       `json:"offset"`
	Stride     *int64      `json:"stride"`
	Others     *othersSpec `json:"others"`
}

// generator yields the value of request g, written for an encoding straight into a buffer.
type generator struct {
	kind      string
	key       uint64
	seed      uint64
	texts     []text // constant: one; list: every value
	random    bool
	low, span int64
	start     int64
	step      int64
	weighted  *weightedSpec
}

func newGenerator(name string, spec generatorSpec, seed int64) (*generator, error) {
	g := &generator{kind: spec.Kind, key: fnv1a64(name), seed: uint64(seed), random: spec.Random, start: 1, step: 1}
	switch spec.Kind {
	case "constant":
		g.texts = []text{textOf(plain(spec.Value))}
	case "list":
		if len(spec.Values) == 0 {
			return nil, fmt.Errorf("a list generator needs values")
		}
		for _, v := range spec.Values {
			g.texts = append(g.texts, textOf(plain(v)))
		}
	case "range", "random":
		if spec.High < spec.Low {
			return nil, fmt.Errorf("%s: high %d is below low %d", spec.Kind, spec.High, spec.Low)
		}
		g.low, g.span = spec.Low, spec.High-spec.Low+1
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

// integer is the value of request g when it is a whole number (range, random, counter).
func (g *generator) integer(n int64) (int64, bool) {
	switch g.kind {
	case "range":
		return g.low + n%g.span, true
	case "random":
		return g.low + int64(math.Floor(unitOf(g.seed, g.key, n)*float64(g.span))), true
	case "counter":
		return g.start + n*g.step, true
	}
	return 0, false
}

// appendValue writes the value of request n in the encoding (an integer reads the same in
// every encoding).
func (g *generator) appendValue(dst []byte, n int64, e encoding) []byte {
	if v, ok := g.integer(n); ok {
		return strconv.AppendInt(dst, v, 10)
	}
	if g.kind == "constant" {
		return append(dst, g.texts[0][e]...)
	}
	if g.weighted != nil {
		v := g.weighted.value(n)
		if i, ok := v.(int64); ok {
			return strconv.AppendInt(dst, i, 10)
		}
		return append(dst, encodeValue(v, e)...)
	}
	at := n % int64(len(g.texts))
	if g.random {
		at = int64(math.Floor(unitOf(g.seed, g.key, n) * float64(len(g.texts))))
	}
	return append(dst, g.texts[at][e]...)
}

// constant says whether the generator gives every request the same value.
func (g *generator) constant() bool {
	return g.kind == "constant" || g.kind == "list" && len(g.texts) == 1 ||
		(g.kind == "range" || g.kind == "random") && g.span == 1 || g.kind == "counter" && g.step == 0
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

// valueText is a value as the simulation prints it (Java's String.valueOf).
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return javaDouble(x)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	case json.RawMessage:
		var s string
		if json.Unmarshal(x, &s) == nil {
			return s
		}
		return string(x)
	}
	return fmt.Sprint(v)
}

// javaDouble is Java's Double.toString: plain notation from 10^-3 to below 10^7 (at least one
// decimal), computerized scientific notation (1.0E7, 1.5E-4) outside it; shortest digits.
func javaDouble(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	case x == 0:
		if math.Signbit(x) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(x)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !bytes.ContainsRune([]byte(s), '.') {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(x, 'e', -1, 64) // 1.5e-04
	mantissa, exponent, _ := bytes.Cut([]byte(s), []byte("e"))
	m := string(mantissa)
	if !bytes.ContainsRune(mantissa, '.') {
		m += ".0"
	}
	exp, _ := strconv.Atoi(string(exponent))
	return m + "E" + strconv.Itoa(exp)
}

func encodeValue(v any, e encoding) string {
	switch e {
	case encPath, encQuery:
		return percentEncode(valueText(v))
	case encJSON:
		if raw, ok := v.(json.RawMessage); ok {
			var compact bytes.Buffer
			if json.Compact(&compact, raw) == nil {
				return compact.String()
			}
			return string(raw)
		}
		if f, ok := v.(float64); ok {
			return jsonDouble(f)
		}
		return jsonText(v)
	case encJSONString:
		quoted := jsonText(valueText(v))
		return quoted[1 : len(quoted)-1]
	}
	return valueText(v)
}

// jsonDouble is a double as Jackson writes it (Java's Double.toString).
func jsonDouble(x float64) string {
	return javaDouble(x)
}

// jsonText is JSON as Jackson writes it: no HTML escaping (<, >, & stay), non-ASCII as is.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "null"
	}
	return string(bytes.TrimRight(b.Bytes(), "\n"))
}

// percentEncode keeps the unreserved characters of RFC 3986 and writes every other byte as
// %XX (upper case), as the simulation does.
func percentEncode(text string) string {
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return string(b)
}
