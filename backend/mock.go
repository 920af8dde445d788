package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

// mockConfig is rendered by the core (gatebench.local.backends.mock) from the IR: one route per
// operation, with the status and body to answer. The server never interprets the API
// description itself.
type mockConfig struct {
	LatencyMS    float64     `json:"latency_ms"`
	ResponseSize *int        `json:"response_size"`
	Workers      int         `json:"workers"`
	Routes       []mockRoute `json:"routes"`
}

type mockRoute struct {
	Method      string            `json:"method"`
	Path        string            `json:"path"`
	Segments    [][]piece         `json:"segments"`
	Status      int               `json:"status"`
	ContentType string            `json:"content_type"`
	Body        string            `json:"body"`
	Headers     map[string]string `json:"headers"`
	segments    []segment
	body        []byte
}

// piece is part of one segment of a route's path template, as the core splits it
// (gatebench.core.renderers.split_template): literal text, or a parameter (its name).
type piece struct {
	Text  string  `json:"text"`
	Param *string `json:"param"`
}

// segment is how one segment is matched: literal text, a whole parameter ({id}), or literal
// text mixed with parameters ({id}.json, {from}-{to}), by its own expression. A parameter
// matches one non-empty segment, or part of one; literal text is compared decoded, each
// segment of the request's path too.
type segment struct {
	param   bool
	literal string
	partial *regexp.Regexp
}

func unescape(s string) string {
	if decoded, err := url.PathUnescape(s); err == nil {
		return decoded
	}
	return s
}

func compileSegment(pieces []piece) segment {
	if len(pieces) == 1 && pieces[0].Param != nil {
		return segment{param: true}
	}
	pattern, literal, partial := "(?s)^", "", false
	for _, p := range pieces {
		if p.Param != nil {
			pattern, partial = pattern+".+", true
		} else {
			pattern += regexp.QuoteMeta(unescape(p.Text))
			literal += p.Text
		}
	}
	if !partial {
		return segment{literal: unescape(literal)}
	}
	return segment{partial: regexp.MustCompile(pattern + "$")}
}

type mockHandler struct {
	latency time.Duration
	routes  []*mockRoute
	held    holdStats
	// workers, when set, bounds how many responses are held at once: a request waits for a
	// free worker (in arrival order: a channel's waiting receivers are served first in, first
	// out), then holds it for the latency. The server's capacity is then exactly workers /
	// latency requests per second, the capacity search's ground truth (docs/capacity.md). The
	// channel holds the free workers' numbers (1..workers), so the record says which worker
	// held each request (record.go).
	workers chan int
}

// maxUpload bounds what one request may send: far above the 16 MB a benchmark needs.
const maxUpload = 1 << 30

func loadMock(path string) (*mockHandler, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg mockConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	h := &mockHandler{latency: time.Duration(cfg.LatencyMS * float64(time.Millisecond))}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("%s: workers must be at least 1, got %d", path, cfg.Workers)
	}
	if cfg.Workers > 0 {
		if h.latency <= 0 {
			return nil, fmt.Errorf("%s: workers need a latency_ms above 0", path)
		}
		h.workers = make(chan int, cfg.Workers)
		for n := 1; n <= cfg.Workers; n++ {
			h.workers <- n
		}
	}
	for i := range cfg.Routes {
		rt := &cfg.Routes[i]
		if !strings.HasPrefix(rt.Path, "/") {
			return nil, fmt.Errorf("%s: routes[%d].path must start with '/', got %q", path, i, rt.Path)
		}
		if rt.Status < 100 || rt.Status > 599 {
			return nil, fmt.Errorf("%s: routes[%d].status must be 100..599, got %d", path, i, rt.Status)
		}
		rt.Method = strings.ToUpper(rt.Method)
		if len(rt.Segments) == 0 {
			return nil, fmt.Errorf("%s: routes[%d].segments must list the path's segments", path, i)
		}
		for _, pieces := range rt.Segments {
			rt.segments = append(rt.segments, compileSegment(pieces))
		}
		rt.body = []byte(rt.Body)
		if cfg.ResponseSize != nil {
			rt.body = resize(rt.body, *cfg.ResponseSize)
		}
		h.routes = append(h.routes, rt)
	}
	// The routes come in the order the gateways try them (gatebench.core.backend): the first
	// that matches answers, so /pets/mine is listed before /pets/{id}.
	return h, nil
}

// resize pads a body with spaces (JSON stays valid) or cuts it to exactly n bytes.
func resize(body []byte, n int) []byte {
	if len(body) >= n {
		return body[:n]
	}
	out := make([]byte, n)
	copy(out, body)
	for i := len(body); i < n; i++ {
		out[i] = ' '
	}
	return out
}

func (rt *mockRoute) matches(segments []string) bool {
	if len(segments) != len(rt.segments) {
		return false
	}
	for i, s := range rt.segments {
		switch {
		case s.param:
			if segments[i] == "" {
				return false
			}
		case s.partial != nil:
			if !s.partial.MatchString(segments[i]) {
				return false
			}
		case s.literal != segments[i]:
			return false
		}
	}
	return true
}

func (h *mockHandler) Reset() { h.held.reset() }

// Stats adds the precision of the fixed latency to GET /__gatebench__/stats.
func (h *mockHandler) Stats() map[string]any {
	if h.latency <= 0 {
		return nil
	}
	return map[string]any{"latency": h.held.summary(h.latency)}
}

func (h *mockHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Read the whole upload: a gateway in front must forward every byte.
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxUpload)); err != nil {
		http.Error(w, "reading body: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	// Split where the client wrote '/', then decode each segment (an escaped %2F stays in its
	// segment), as the template's literal text is decoded.
	segments := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, s := range segments {
		segments[i] = unescape(s)
	}
	var allowed []string
	for _, rt := range h.routes {
		if !rt.matches(segments) {
			continue
		}
		if rt.Method != r.Method {
			allowed = append(allowed, rt.Method)
			continue
		}
		worker := 0
		if h.workers != nil {
			// wait for a free worker, unless the client leaves first (its timeout, or the end
			// of the load): a request nobody waits for would hold a worker for the next
			// measurement (withControl's reset waits for held ones only)
			select {
			case worker = <-h.workers:
			case <-r.Context().Done():
				return
			}
		}
		if h.latency > 0 {
			// exactly the configured time after the request was read (hold.go), or after
			// it got its worker
			from := time.Now()
			deadline := from.Add(h.latency)
			holdUntil(deadline)
			to := time.Now()
			h.held.add(to.Sub(deadline))
			noteHold(r, from, to, worker)
		}
		if h.workers != nil {
			h.workers <- worker
		}
		for name, value := range rt.Headers {
			w.Header().Set(name, value)
		}
		if rt.ContentType != "" {
			w.Header().Set("Content-Type", rt.ContentType)
		}
		w.Header().Set("X-Gatebench-Backend", "mock")
		w.WriteHeader(rt.Status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(rt.body)
		}
		return
	}
	if allowed != nil {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	http.NotFound(w, r)
}
