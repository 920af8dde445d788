package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// ControlPrefix is where the engine talks to the backend directly, never through a gateway:
// gateways only route the operations of the description, and no API path starts with a
// segment wrapped in double underscores in practice. POST ControlPrefix+"reset" waits until no
// request is being served (drain), then restores the initial state (the auction service
// re-seeds its auctions); GET ControlPrefix+"health"
// answers 200 once the server is serving. GET ControlPrefix+"stats" reports the requests
// served outside the control prefix since the start or the last reset ({"http2": H,
// "requests": N}: H of them over HTTP/2; the mock with a latency adds how late its held
// responses were released: "latency"). GET ControlPrefix+"requests" is the backend's own
// timeline of every request (record.go); a reset starts a new epoch of it.
const ControlPrefix = "/__gatebench__/"

type resettable interface {
	http.Handler
	Reset()
}

// drainLimit bounds how long a reset waits for the requests still being served (a hold the
// client gave up on, a queue a gateway keeps forwarding): below every caller's timeout for
// the reset (the engines' 40 s).
const drainLimit = 30 * time.Second

// drain waits until no request is in flight, or limit has passed; how many still are.
// A reset starts the next measurement: the requests of the one before (an overload probe's
// queue outlives its load by up to the probe's length) must not share the backend with it.
func drain(inFlight *atomic.Int64, limit time.Duration) int64 {
	deadline := time.Now().Add(limit)
	for {
		left := inFlight.Load()
		if left <= 0 || !time.Now().Before(deadline) {
			return left
		}
		time.Sleep(time.Millisecond)
	}
}

// statsReporter is a mode with more to report than the request count (the mock's latency
// precision); its fields are added to the stats document.
type statsReporter interface {
	Stats() map[string]any
}

// withControl serves the control endpoints and passes every other request to h.
func withControl(h resettable, mode string) http.Handler {
	var served, http2, inFlight atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, ControlPrefix) {
			inFlight.Add(1)
			defer inFlight.Add(-1)
			h.ServeHTTP(w, r)
			served.Add(1)
			if r.ProtoMajor == 2 {
				http2.Add(1)
			}
			return
		}
		switch r.URL.Path[len(ControlPrefix):] {
		case "stats":
			w.Header().Set("Content-Type", "application/json")
			var extra map[string]any
			if reporter, ok := h.(statsReporter); ok {
				extra = reporter.Stats()
			}
			if len(extra) == 0 {
				_, _ = fmt.Fprintf(w, "{\"http2\": %d, \"requests\": %d}\n", http2.Load(), served.Load())
				return
			}
			extra["requests"] = served.Load()
			extra["http2"] = http2.Load()
			_ = json.NewEncoder(w).Encode(extra)
		case "reset":
			if r.Method != http.MethodPost {
				w.Header().Set("Allow", "POST")
				http.Error(w, "reset needs POST", http.StatusMethodNotAllowed)
				return
			}
			if left := drain(&inFlight, drainLimit); left > 0 {
				http.Error(w, fmt.Sprintf(
					"%d requests of the earlier load are still being served after %s: a measurement started now would share the backend with them",
					left, drainLimit), http.StatusServiceUnavailable)
				return
			}
			h.Reset()
			seen.reset()
			record.newEpoch()
			served.Store(0)
			http2.Store(0)
			w.WriteHeader(http.StatusNoContent)
		case "requests":
			serveRecord(w, r)
		case "health":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("ok " + mode + "\n"))
		default:
			http.NotFound(w, r)
		}
	})
}
