package main

import (
	"encoding/json"
	"testing"
)

// The reference values come from gatebench.core.workload (unit_draw, weighted_value, stream_seed).

func TestUnitDrawMatchesTheReference(t *testing.T) {
	want := map[uint64]float64{0: 0.1330796686614273, 1: 0.20481663336165912, 2: 0.11954258300911547, 1000: 0.731466870567643}
	for n, u := range want {
		if got := unitDraw(12345, n); got != u {
			t.Errorf("unitDraw(12345, %d) = %v, want %v", n, got, u)
		}
	}
}

func TestWeightedValuesMatchTheReference(t *testing.T) {
	raw := `{"kind": "weighted", "values": ["a", "b"], "cumulative": [3.0, 4.0], "total": 10.0,
		"seed": 99467132831041, "others": {"count": 100, "weight": 6.0, "start": 7, "text": true,
		"prefix": "v", "width": 4}}`
	var spec generatorSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	g, err := newGenerator("p", spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"v0061", "a", "b", "v0060", "a", "a", "v0095", "a", "b", "a", "a", "b"}
	for n, w := range want {
		if got := string(g.appendValue(nil, int64(n), encRaw)); got != w {
			t.Errorf("draw %d = %q, want %q", n, got, w)
		}
	}
}
