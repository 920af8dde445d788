package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// A weighted list of values (a recorded value distribution, gatebench.core.workload): draw n takes
// u in [0, 1) from SplitMix64 of (seed + (draw + 1) × gamma), then the first value whose
// cumulative weight exceeds u × total, or one of the others. The arithmetic is the Java
// simulation's and the wrk script's, bit for bit (gatebench.core.workload.weighted_value is the
// reference the tests hold every engine to).

type othersSpec struct {
	Count  int64   `json:"count"`
	Weight float64 `json:"weight"`
	Start  int64   `json:"start"`
	Text   bool    `json:"text"`
	Prefix string  `json:"prefix"`
	Width  int     `json:"width"`
}

type weightedSpec struct {
	values     []any
	cumulative []float64
	total      float64
	seed       uint64
	offset     int64
	stride     int64
	others     *othersSpec
}

func newWeighted(spec generatorSpec) (*weightedSpec, error) {
	if len(spec.Values) != len(spec.Cumulative) {
		return nil, fmt.Errorf("weighted: %d values but %d cumulative weights", len(spec.Values), len(spec.Cumulative))
	}
	if len(spec.Values) == 0 && spec.Others == nil {
		return nil, fmt.Errorf("weighted: no values")
	}
	if spec.Others != nil && (spec.Others.Count < 1 || spec.Others.Weight <= 0) {
		return nil, fmt.Errorf("weighted: others need a count and a weight above 0")
	}
	w := &weightedSpec{cumulative: spec.Cumulative, total: spec.Total, seed: spec.Seed,
		offset: spec.Offset, stride: 1, others: spec.Others}
	if spec.Stride != nil {
		w.stride = *spec.Stride
	}
	for _, v := range spec.Values {
		w.values = append(w.values, plain(v))
	}
	return w, nil
}

func (w *weightedSpec) value(n int64) any {
	draw := w.offset + n*w.stride
	// explicit float64 conversions: Go may fuse a*b+c into one rounding on some CPUs; each
	// product here is rounded on its own, as in Java and Lua
	x := float64(unitDraw(w.seed, uint64(draw)) * w.total)
	i := sort.Search(len(w.cumulative), func(k int) bool { return x < w.cumulative[k] })
	if i < len(w.cumulative) || w.others == nil {
		if i >= len(w.cumulative) {
			i = len(w.cumulative) - 1
		}
		return w.values[i]
	}
	listed := 0.0
	if len(w.cumulative) > 0 {
		listed = w.cumulative[len(w.cumulative)-1]
	}
	o := w.others
	j := int64(math.Floor(float64(float64(x-listed)/o.Weight) * float64(o.Count)))
	if j > o.Count-1 {
		j = o.Count - 1
	}
	number := o.Start + j
	if !o.Text {
		return number
	}
	digits := strconv.FormatInt(number, 10)
	if pad := o.Width - len(digits); pad > 0 {
		digits = strings.Repeat("0", pad) + digits
	}
	return o.Prefix + digits
}
