package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The engine against real servers on 127.0.0.1: the HTTP/1.1 client, both connection modes,
// a stalled target. Time here is real, so the bounds leave room for a busy machine: each one
// is at least ten times what a quiet machine shows.

func runReal(t *testing.T, newConnections bool, maxInFlight int, phases ...*phase) (*engine, records) {
	t.Helper()
	var out bytes.Buffer
	rec := newRecorder(&out)
	clk := newRealClock()
	rec.header(clk.t0.UnixMicro(), 1)
	e := newEngine(clk, rec, maxInFlight)
	net, err := newEpollNet(e, clk, newConnections)
	if err != nil {
		t.Fatal(err)
	}
	e.net = net
	e.run(phases, "", clk.now()+5*time.Millisecond)
	if err := rec.flush(); err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecords(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return e, got
}

func phaseFor(t *testing.T, url string, rate float64, durationMS, timeoutMS int64, newConnections bool, change func(*phaseSpec)) *phase {
	t.Helper()
	spec := phaseSpec{
		ID:        "p",
		Injection: injection{Kind: "constant_rate", Rate: rate, DurationMS: durationMS},
		Request:   requestSpec{Method: "GET", BaseURL: url, Path: []part{{Text: ptr("/items/1")}}, TimeoutMS: timeoutMS},
	}
	if change != nil {
		change(&spec)
	}
	p, err := preparePhase(spec, nil, nil, newConnections)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// countingServer answers 200 with a small body and counts the connections it accepted.
func countingServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	if handler == nil {
		handler = func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"id": 1}`) }
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func TestKeptAliveConnectionsCarryManyRequests(t *testing.T) {
	srv, conns := countingServer(t, nil)
	_, got := runReal(t, false, 10_000, phaseFor(t, srv.URL, 500, 400, 5000, false, nil))
	if len(got.requests) != 200 {
		t.Fatalf("%d records, want 200", len(got.requests))
	}
	opened := 0
	for _, r := range got.requests {
		if r.status != 200 || r.message != 0 {
			t.Fatalf("record %+v (%q): want 200 OK", r, got.messages[r.message])
		}
		if r.flags&flagNewConn != 0 {
			opened++
		}
	}
	end := got.ends[0]
	if int64(opened) != end.connections || end.connections != conns.Load() {
		t.Fatalf("connections: %d flagged, %d counted, %d accepted by the server", opened, end.connections, conns.Load())
	}
	// 2 ms apart and answered in well under that: a handful of connections serve them all
	if end.connections > 20 {
		t.Fatalf("%d connections for 200 requests at 500/s: the pool does not keep them", end.connections)
	}
}

func TestConnectionsNewOpensOnePerRequestAndSaysClose(t *testing.T) {
	var closing atomic.Int64
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Close {
			closing.Add(1)
		}
		io.WriteString(w, "ok")
	})
	_, got := runReal(t, true, 10_000, phaseFor(t, srv.URL, 500, 200, 5000, true, nil))
	if len(got.requests) != 100 || got.ends[0].connections != 100 || conns.Load() != 100 {
		t.Fatalf("%d requests, %d connections opened, %d accepted: want 100 of each",
			len(got.requests), got.ends[0].connections, conns.Load())
	}
	for _, r := range got.requests {
		if r.flags&flagNewConn == 0 || r.status != 200 {
			t.Fatalf("record %+v: want a new connection and 200", r)
		}
	}
	if closing.Load() != 100 {
		t.Fatalf("%d requests said Connection: close, want 100", closing.Load())
	}
}

// heldCount counts the requests a handler holds at once, and the most it held.
type heldCount struct {
	mu           sync.Mutex
	inside, most int
}

func (h *heldCount) hold(wait func()) {
	h.mu.Lock()
	h.inside++
	h.most = max(h.most, h.inside)
	h.mu.Unlock()
	wait()
	h.mu.Lock()
	h.inside--
	h.mu.Unlock()
}

func (h *heldCount) peak() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.most
}

func TestARealStalledServerIsStillOfferedEveryArrivalOnTime(t *testing.T) {
	const hold = 400 * time.Millisecond
	var held heldCount
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		held.hold(func() { time.Sleep(hold) })
		io.WriteString(w, "late")
	})
	// 100/s for 0.3 s: every arrival is due while the first is still held
	_, got := runReal(t, false, 10_000, phaseFor(t, srv.URL, 100, 300, 5000, false, nil))
	if len(got.requests) != 30 || got.ends[0].sent != 30 {
		t.Fatalf("%d records, %d sent: want 30 and 30", len(got.requests), got.ends[0].sent)
	}
	for _, r := range got.requests {
		if r.status != 200 {
			t.Fatalf("record %+v: want 200", r)
		}
		// sent when due, not when an earlier answer came back (that would be 400 ms late)
		if r.lag > 40_000 {
			t.Fatalf("arrival due at %d µs left %d µs late: it waited for the stalled server", r.intended, r.lag)
		}
		// timed from its due time: the hold and the lag are both in it
		if r.latency < uint32(hold.Microseconds()) {
			t.Fatalf("arrival due at %d µs: latency %d µs, below the server's %v hold", r.intended, r.latency, hold)
		}
	}
	if most := held.peak(); most != 30 || conns.Load() != 30 {
		t.Fatalf("the server held at most %d requests on %d connections, want 30 and 30", most, conns.Load())
	}
}

func TestNewConnectionsTheTargetHasNotAnsweredOnAreCapped(t *testing.T) {
	const release = 500 * time.Millisecond
	var counted heldCount
	gate := make(chan struct{})
	time.AfterFunc(release, func() { close(gate) })
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		counted.hold(func() { <-gate })
		io.WriteString(w, "late")
	})
	// 1,000/s for 0.2 s: every arrival is due while the server answers none
	_, got := runReal(t, false, 10_000, phaseFor(t, srv.URL, 1000, 200, 5000, false, nil))
	if len(got.requests) != 200 || got.ends[0].sent != 200 {
		t.Fatalf("%d records, %d sent: want 200 and 200", len(got.requests), got.ends[0].sent)
	}
	// until it answers, the server is given maxConnecting connections, not one per arrival
	if held := counted.peak(); held != maxConnecting {
		t.Fatalf("the server held at most %d requests before it answered, want %d", held, maxConnecting)
	}
	for _, r := range got.requests {
		if r.status != 200 || r.flags&flagDropped != 0 {
			t.Fatalf("record %+v (%q): want 200", r, got.messages[r.message])
		}
		// the wait for a connection is the target's: the engine took it up on time
		if r.lag > 40_000 {
			t.Fatalf("arrival due at %d µs left %d µs late: the target's wait was counted as the engine's", r.intended, r.lag)
		}
		// and its latency runs from its due time, through the wait
		if end := r.intended + int64(r.latency); end < (release - 50*time.Millisecond).Microseconds() {
			t.Fatalf("arrival due at %d µs: latency %d µs, ended before the server answered", r.intended, r.latency)
		}
	}
}

func TestAnArrivalHeldForTheTargetPastItsTimeoutIsTheTargetsTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	// 1,000/s for 0.1 s and a 150 ms timeout: all but maxConnecting wait for a connection
	_, got := runReal(t, false, 10_000, phaseFor(t, srv.URL, 1000, 100, 150, false, nil))
	if len(got.requests) != 100 || got.ends[0].sent != 100 {
		t.Fatalf("%d records, %d sent: want 100 and 100", len(got.requests), got.ends[0].sent)
	}
	for _, r := range got.requests {
		if r.flags&flagDropped != 0 || got.messages[r.message] != "request timeout after 150 ms" || r.latency < 150_000 {
			t.Fatalf("record %+v (%q): want a timeout after 150 ms", r, got.messages[r.message])
		}
	}
}

func TestTheInFlightLimitHoldsAgainstARealServer(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		io.WriteString(w, "late")
	})
	time.AfterFunc(500*time.Millisecond, func() { close(release) })
	// 20 arrivals in 0.1 s, at most 4 outstanding
	_, got := runReal(t, false, 4, phaseFor(t, srv.URL, 200, 100, 5000, false, nil))
	var ok, refused int
	for _, r := range got.requests {
		switch {
		case r.status == 200:
			ok++
		case got.messages[r.message] == "not sent: 4 requests were in flight (the target held them)":
			refused++
		default:
			t.Fatalf("record %+v (%q)", r, got.messages[r.message])
		}
	}
	if ok != 4 || refused != 16 || got.ends[0].sent != 4 {
		t.Fatalf("%d answered, %d refused, %d sent: want 4, 16 and 4", ok, refused, got.ends[0].sent)
	}
}

func TestATimeoutIsAKOWithItsReason(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	_, got := runReal(t, false, 100, phaseFor(t, srv.URL, 20, 100, 150, false, nil))
	for _, r := range got.requests {
		if r.status != 0 || got.messages[r.message] != "request timeout after 150 ms" || r.latency < 150_000 {
			t.Fatalf("record %+v (%q): want a timeout after 150 ms", r, got.messages[r.message])
		}
	}
}

// rawServer answers every request read on a connection with the next canned response, and
// records the requests.
// tcpServer serves each connection it accepts on 127.0.0.1 with serve (which closes it by
// returning) and counts them.
func tcpServer(t *testing.T, serve func(c net.Conn)) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func(c net.Conn) {
				defer c.Close()
				serve(c)
			}(c)
		}
	}()
	return "http://" + ln.Addr().String(), &conns
}

func rawServer(t *testing.T, responses ...string) (string, *[]string, *atomic.Int64) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	var next atomic.Int64
	url, conns := tcpServer(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(r)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(req.Body)
			mu.Lock()
			seen = append(seen, req.Method+" "+req.RequestURI+" "+string(body))
			mu.Unlock()
			i := int(next.Add(1)) - 1
			resp := responses[i%len(responses)]
			c.Write([]byte(resp))
			lower := strings.ToLower(resp)
			if strings.Contains(lower, "connection: close") || !strings.Contains(lower, "content-length") && !strings.Contains(lower, "chunked") && !strings.Contains(lower, " 204 ") {
				return
			}
		}
	})
	return url, &seen, conns
}

func TestTheClientReadsEveryResponseFraming(t *testing.T) {
	url, _, conns := rawServer(t,
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
		"HTTP/1.0 200 OK\r\n\r\nuntil the server closes",
	)
	// one at a time (100 ms apart, answered at once): the responses come in order
	_, got := runReal(t, false, 100, phaseFor(t, url, 10, 600, 5000, false, nil))
	var statuses []uint16
	for _, r := range got.requests {
		statuses = append(statuses, r.status)
	}
	want := []uint16{200, 201, 204, 404, 200, 200}
	if len(statuses) != 6 {
		t.Fatalf("statuses %v, want %v", statuses, want)
	}
	for i := range want {
		if statuses[i] != want[i] {
			t.Fatalf("statuses %v, want %v", statuses, want)
		}
	}
	if msg := got.messages[got.requests[3].message]; msg != "status.find.lt(400), found 404" {
		t.Fatalf("the 404's KO message %q", msg)
	}
	// the first four share a connection; Connection: close and an HTTP/1.0 body end theirs
	if conns.Load() != 2 || got.ends[0].connections != 2 {
		t.Fatalf("%d connections accepted, %d opened: want 2 and 2", conns.Load(), got.ends[0].connections)
	}
}

func TestAKeptAliveConnectionTheServerClosedWhileIdleIsNotUsedAgain(t *testing.T) {
	// the server answers, then closes without saying so: the closed connection is seen while
	// it waits in the pool, and the next GET goes on a new one
	url, conns := tcpServer(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
		}
	})
	_, got := runReal(t, false, 100, phaseFor(t, url, 10, 300, 5000, false, nil))
	for _, r := range got.requests {
		if r.status != 200 {
			t.Fatalf("record %+v (%q): want 200", r, got.messages[r.message])
		}
	}
	if conns.Load() != 3 {
		t.Fatalf("%d connections, want 3", conns.Load())
	}
}

// dropServer answers every request but every second one of a connection, which it reads whole
// and then closes the connection on without answering (reset: with SO_LINGER 0); it counts
// the requests it received and the ones it dropped.
func dropServer(t *testing.T, reset bool) (string, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var received, dropped atomic.Int64
	url, _ := tcpServer(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for n := 1; ; n++ {
			req, err := http.ReadRequest(r)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			received.Add(1)
			if n == 2 {
				dropped.Add(1)
				if reset {
					c.(*net.TCPConn).SetLinger(0)
				}
				return // closed by tcpServer's caller without an answer
			}
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		}
	})
	return url, &received, &dropped
}

func TestARequestTheTargetClosedItsConnectionOnFailsWhateverItsMethod(t *testing.T) {
	// a kept-alive connection closed (or reset) on a request without an answer: that request
	// failed, a GET as a POST, and it is not sent again (a resend would hide the failure)
	for _, method := range []string{"GET", "POST"} {
		for _, reset := range []bool{false, true} {
			url, received, dropped := dropServer(t, reset)
			p := phaseFor(t, url, 50, 400, 5000, false, func(s *phaseSpec) {
				s.Request.Method = method
				if method == "POST" {
					s.Request.Body = bodySpec{Kind: "bytes", ContentType: "application/octet-stream", Size: 16}
				}
			})
			_, got := runReal(t, false, 100, p)
			ok, failed := 0, 0
			for _, r := range got.requests {
				switch {
				case r.status == 200:
					ok++
				case r.status == 0:
					failed++
					msg := got.messages[r.message]
					if msg != "the connection closed before the response ended" && msg != "connection reset by the target" {
						t.Fatalf("%s reset %v: a dropped request's reason %q", method, reset, msg)
					}
				default:
					t.Fatalf("%s reset %v: record %+v", method, reset, r)
				}
			}
			if dropped.Load() == 0 || int64(failed) != dropped.Load() {
				t.Fatalf("%s reset %v: %d failed requests, the server dropped %d", method, reset, failed, dropped.Load())
			}
			if int64(len(got.requests)) != received.Load() {
				t.Fatalf("%s reset %v: %d requests recorded, the server received %d (a resend?)", method, reset, len(got.requests), received.Load())
			}
			if ok+failed != 20 {
				t.Fatalf("%s reset %v: %d OK and %d failed, want 20 requests", method, reset, ok, failed)
			}
		}
	}
}

func TestRequestsCarryTheirValuesAndBodies(t *testing.T) {
	url, seen, _ := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	p := phaseFor(t, url, 20, 200, 5000, false, func(s *phaseSpec) {
		s.Params = map[string]generatorSpec{"id": {Kind: "range", Low: 7, High: 8}}
		r := &s.Request
		r.Method = "post"
		r.Path = []part{{Text: ptr("/items/")}, {Param: "id", As: "path"}}
		r.Body = bodySpec{Kind: "template", ContentType: "application/json", RawParts: []byte(`[{"text": "{\"n\": "}, {"param": "id", "as": "json"}, {"text": "}"}]`)}
	})
	runReal(t, false, 100, p)
	want := []string{`POST /items/7 {"n": 7}`, `POST /items/8 {"n": 8}`, `POST /items/7 {"n": 7}`, `POST /items/8 {"n": 8}`}
	if strings.Join(*seen, "|") != strings.Join(want, "|") {
		t.Fatalf("the server saw %q, want %q", *seen, want)
	}
}

// earlyServer reads each request's head only, answers with response at once, never reads the
// body (as nginx refuses an upload it will not take) and, when closing, closes the connection
// after the answer; it counts the connections it accepted.
func earlyServer(t *testing.T, response string, closing bool) (string, *atomic.Int64) {
	t.Helper()
	return tcpServer(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		c.Write([]byte(response))
		if !closing {
			time.Sleep(3 * time.Second) // the body is never read
		}
	})
}

func TestAnAnswerBeforeTheWholeUploadWasSentEndsTheRequest(t *testing.T) {
	for _, closing := range []bool{false, true} {
		url, conns := earlyServer(t, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n", closing)
		p := phaseFor(t, url, 20, 200, 1000, false, func(s *phaseSpec) {
			s.Request.Method = "post"
			s.Request.Body = bodySpec{Kind: "bytes", ContentType: "image/jpeg", Size: 8 << 20}
		})
		started := time.Now()
		_, got := runReal(t, false, 100, p)
		if took := time.Since(started); took > 2500*time.Millisecond {
			t.Fatalf("closing %v: the run took %v: an answer to an unsent upload left its request open", closing, took)
		}
		if len(got.requests) != 4 {
			t.Fatalf("closing %v: %d records, want 4", closing, len(got.requests))
		}
		for _, r := range got.requests {
			// a server that closes at once, with the upload unread, resets the connection, and
			// the reset may discard its answer before it is read (the reason nginx lingers)
			reset := closing && r.status == 0 && got.messages[r.message] == "connection reset by the target"
			if r.status != 413 && !reset {
				t.Fatalf("closing %v: record %+v (%q): want the target's 413", closing, r, got.messages[r.message])
			}
		}
		// the rest of each request was never sent: no connection carries another one
		if n := conns.Load(); n != 4 {
			t.Fatalf("closing %v: %d connections, want one per request (4)", closing, n)
		}
	}
}
