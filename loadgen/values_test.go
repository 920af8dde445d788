package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func TestTheUniformNumberIsSplitMix64sOutput(t *testing.T) {
	// SplitMix64 from state 0 (Vigna's reference, splitmix64.c): its first four outputs
	want := []uint64{0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC}
	for g, w := range want {
		if got := unitOf(0, 0, int64(g)); got != float64(w>>11)*0x1p-53 {
			t.Fatalf("request %d: u = %v, want %v", g, got, float64(w>>11)*0x1p-53)
		}
	}
	// the stream of a parameter is keyed by its name: seed XOR fnv1a64(name)
	if fnv1a64("") != 0xcbf29ce484222325 || fnv1a64("a") != 0xaf63dc4c8601ec8c {
		t.Fatalf("fnv1a64: %x, %x", fnv1a64(""), fnv1a64("a"))
	}
	if unitOf(5, fnv1a64("id"), 3) != unitOf(5^fnv1a64("id"), 0, 3) {
		t.Fatal("the key is not XORed into the state")
	}
}

func values(t *testing.T, spec string, n int) []string {
	t.Helper()
	var g generatorSpec
	if err := json.Unmarshal([]byte(spec), &g); err != nil {
		t.Fatal(err)
	}
	gen, err := newGenerator("p", g, 42)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := int64(0); i < int64(n); i++ {
		out = append(out, string(gen.appendValue(nil, i, encQuery)))
	}
	return out
}

func TestEachGeneratorsValueOfRequestG(t *testing.T) {
	cases := []struct{ spec, want string }{
		{`{"kind": "constant", "value": "a b"}`, "a%20b a%20b a%20b"},
		{`{"kind": "list", "values": ["x", 2, true]}`, "x 2 true x"},
		{`{"kind": "range", "low": 5, "high": 7}`, "5 6 7 5 6"},
		{`{"kind": "counter", "start": 10, "step": 3}`, "10 13 16"},
		{`{"kind": "counter"}`, "1 2 3"},
	}
	for _, c := range cases {
		if got := strings.Join(values(t, c.spec, len(strings.Fields(c.want))), " "); got != c.want {
			t.Errorf("%s: %q, want %q", c.spec, got, c.want)
		}
	}
	// random: low + floor(u × span), u of the parameter's stream
	key := fnv1a64("p")
	for g, v := range values(t, `{"kind": "random", "low": 100, "high": 199}`, 50) {
		want := 100 + int64(unitOf(42, key, int64(g))*100)
		if v != strconv.FormatInt(want, 10) {
			t.Fatalf("random value %d: %s, want %d", g, v, want)
		}
	}
	for g, v := range values(t, `{"kind": "list", "values": ["a", "b", "c"], "random": true}`, 50) {
		want := []string{"a", "b", "c"}[int(unitOf(42, key, int64(g))*3)]
		if v != want {
			t.Fatalf("random list value %d: %s, want %s", g, v, want)
		}
	}
}

func TestValuesAreWrittenAsTheSimulationWritesThem(t *testing.T) {
	cases := []struct {
		value any
		enc   encoding
		want  string
	}{
		{"a/b c", encPath, "a%2Fb%20c"},
		{"é", encQuery, "%C3%A9"},
		{int64(3), encJSON, "3"},
		{3.0, encJSON, "3.0"},
		{2.5, encRaw, "2.5"},
		{1e7, encRaw, "1.0E7"},
		{1.5e-4, encRaw, "1.5E-4"},
		{0.001, encRaw, "0.001"},
		{true, encJSON, "true"},
		{nil, encRaw, "null"},
		{`say "hi" <b>`, encJSON, `"say \"hi\" <b>"`},
		{`say "hi"`, encJSONString, `say \"hi\"`},
		{json.RawMessage(`{"a": [1, 2]}`), encJSON, `{"a":[1,2]}`},
	}
	for _, c := range cases {
		if got := encodeValue(c.value, c.enc); got != c.want {
			t.Errorf("%#v as %d: %q, want %q", c.value, c.enc, got, c.want)
		}
	}
}

func TestAPhasesRequestBytes(t *testing.T) {
	spec := phaseSpec{
		Seed:      7,
		Injection: injection{Kind: "constant_rate", Rate: 1, DurationMS: 1000},
		Params:    map[string]generatorSpec{"n": {Kind: "range", Low: 1, High: 2}},
		Request: requestSpec{
			Method:  "get",
			BaseURL: "http://127.0.0.1:8080/api/",
			Path:    []part{{Text: ptr("/items/")}, {Param: "n", As: "path"}},
			Query:   [][]json.RawMessage{{json.RawMessage(`"q"`), json.RawMessage(`[{"text": "x"}, {"param": "n", "as": "query"}]`)}},
			Headers: [][]json.RawMessage{{json.RawMessage(`"X-N"`), json.RawMessage(`[{"param": "n"}]`)}},
			Auth:    []authHeader{{Header: "Authorization", Prefix: "Bearer ", Env: json.RawMessage(`"T"`), PerUser: true}},
		},
		UserBase: 1, UserStride: 2,
	}
	p, err := preparePhase(spec, map[string]string{}, map[string][]string{"T": {"t0", "t1", "t2"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	got := string(p.build.request(nil, nil, 1))
	want := "GET /api/items/2?q=x2 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: gatebench\r\n" +
		"X-N: 2\r\nAuthorization: Bearer t0\r\n\r\n" // user 1: token (1 + 1 × 2) mod 3
	if got != want {
		t.Fatalf("request\n got %q\nwant %q", got, want)
	}
	if p.build.static != nil {
		t.Fatal("a request with values was built once for all")
	}
}

func TestAStaticRequestIsBuiltOnce(t *testing.T) {
	spec := phaseSpec{
		Injection: injection{Kind: "constant_rate", Rate: 1, DurationMS: 1000},
		Request: requestSpec{Method: "POST", BaseURL: "http://h:1", Path: []part{{Text: ptr("/a")}},
			Body: bodySpec{Kind: "base64", ContentType: "text/plain", Data: "aGk="}},
	}
	p, err := preparePhase(spec, nil, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "POST /a HTTP/1.1\r\nHost: h:1\r\nUser-Agent: gatebench\r\nConnection: close\r\n" +
		"Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
	if string(p.build.static) != want || string(p.build.request(nil, nil, 9)) != want {
		t.Fatalf("static request %q, want %q", p.build.static, want)
	}
}

func TestWhatARequestCannotHoldIsRefusedUpFront(t *testing.T) {
	for _, c := range []struct {
		change func(*phaseSpec)
		want   string
	}{
		{func(s *phaseSpec) { s.Request.BaseURL = "https://h:1" }, "plain HTTP/1.1"},
		{func(s *phaseSpec) { s.Request.Path = []part{{Param: "nope"}} }, `parameter "nope", which has no generator`},
		{func(s *phaseSpec) { s.Injection.Kind = "concurrent" }, "constant_rate phases only"},
		{func(s *phaseSpec) {
			s.Request.Headers = [][]json.RawMessage{{json.RawMessage(`"Bad Name"`), json.RawMessage(`[]`)}}
		}, "is not a header name"},
		{func(s *phaseSpec) { s.Params = map[string]generatorSpec{"x": {Kind: "range", Low: 3, High: 1}} }, "high 1 is below low 3"},
	} {
		spec := phaseSpec{
			Injection: injection{Kind: "constant_rate", Rate: 1, DurationMS: 1000},
			Request:   requestSpec{Method: "GET", BaseURL: "http://h:1", Path: []part{{Text: ptr("/a")}}},
		}
		c.change(&spec)
		if _, err := preparePhase(spec, nil, nil, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one saying %q", err, c.want)
		}
	}
}
