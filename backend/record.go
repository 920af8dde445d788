package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The backend's own timeline of the requests it served (GET /__gatebench__/requests): when it
// received each request and when it released the answer, on its own clock, and what it saw of
// each kept-alive connection. It is the ground truth a load engine's figures are judged
// against on the same machine (docs/trust.md, "The backend's timeline"): the engine and the
// backend see the same machine at the same moment, so physics that no machine can break holds
// between them whatever the machine does:
//
//   - an engine cannot measure a request faster than the backend held it (received to
//     released);
//   - a closed-model client on a kept-alive HTTP/1.1 connection sends a request only after it
//     has read the answer before it, so the engine's latency of request k on a connection is
//     at most the backend's time from releasing request k-1 to receiving request k+1 on that
//     connection (the backend sees those two moments; the engine's send and receipt lie
//     between them).
//
// Times are microseconds since the backend started, on the monotonic clock (never stepped);
// "start_wall_us" converts them to epoch microseconds for engines that stamp wall-clock time.
// "received" is taken when the handler starts (the request line and headers read), "released"
// when it returns (the answer handed to the connection): the first is never before the
// client's send, the second never after the client's receipt.
//
// The record keeps the last recordSize requests (older ones are overwritten: "overwritten"
// counts them) in one array allocated at start (about 1.6 MB, touched as it fills; it holds no
// pointers, so the garbage collector never scans it). POST /__gatebench__/reset starts a new epoch and keeps the record, so a
// connection's chain runs across it; a reader picks a phase's requests by epoch.

// recordSize bounds the record's memory (96 bytes a request): a measured phase of the tests
// holds a few thousand requests.
const recordSize = 1 << 14

type recordEntry struct {
	seq         uint64 // 1, 2, ... in order of receipt
	epoch       int64  // resets before this request was received
	conn        int64  // the connection's number, in accept order (1, 2, ...)
	http2       bool   // over HTTP/2: streams share the connection, so it has no chain
	control     bool   // under /__gatebench__/
	received    int64
	released    int64 // 0 until released
	prevRelease int64 // the previous answer's release on this connection; 0: none
	nextReceipt int64 // the next request's receipt on this connection; 0: none (yet)
	heldFrom    int64 // the mock's hold: from (after the body was read and a worker granted)
	heldTo      int64 // ... to the answer's release; both 0 without a latency
	worker      int   // the mock worker that held it (1..workers); 0 without workers
}

type connState struct {
	id          int64
	lastSeq     uint64
	lastRelease int64
}

type requestRecord struct {
	start   time.Time
	mu      sync.Mutex
	entries []recordEntry // a ring: entry seq lives at (seq-1) % recordSize
	next    uint64
	epoch   int64
	conns   atomic.Int64
}

var record = &requestRecord{start: time.Now(), entries: make([]recordEntry, recordSize)}

// now is the record's clock: µs since the backend started, monotonic.
func (rec *requestRecord) now() int64 { return time.Since(rec.start).Microseconds() }

func (rec *requestRecord) slot(seq uint64) *recordEntry {
	if seq == 0 || rec.next-seq >= recordSize {
		return nil // none, or overwritten
	}
	return &rec.entries[(seq-1)%recordSize]
}

// begin records a request's receipt and returns its sequence number.
func (rec *requestRecord) begin(conn *connState, http2, control bool) uint64 {
	at := rec.now()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.next++
	e := recordEntry{seq: rec.next, epoch: rec.epoch, received: at, http2: http2, control: control}
	if conn != nil {
		e.conn = conn.id
		if !http2 {
			e.prevRelease = conn.lastRelease
			if prev := rec.slot(conn.lastSeq); prev != nil && prev.seq == conn.lastSeq {
				prev.nextReceipt = at
			}
			conn.lastSeq = e.seq
		}
	}
	rec.entries[(e.seq-1)%recordSize] = e
	return e.seq
}

// end records the answer's release and what the handler reported of its hold.
func (rec *requestRecord) end(seq uint64, conn *connState, http2 bool, hold *holdNote) {
	at := rec.now()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if conn != nil && !http2 && conn.lastSeq == seq {
		conn.lastRelease = at
	}
	if e := rec.slot(seq); e != nil && e.seq == seq {
		e.released = at
		if hold != nil && hold.to != 0 {
			e.heldFrom, e.heldTo, e.worker = hold.from, hold.to, hold.worker
		}
	}
}

func (rec *requestRecord) newEpoch() {
	rec.mu.Lock()
	rec.epoch++
	rec.mu.Unlock()
}

// holdNote is what the mock tells the record of one request's hold (same goroutine).
type holdNote struct {
	from, to int64
	worker   int
}

type recordKey int

const (
	connKey recordKey = iota
	holdKey
)

// withConnState gives every accepted connection a number and a place for its chain
// (http.Server.ConnContext).
func withConnState(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey, &connState{id: record.conns.Add(1)})
}

// noteHold is how the mock reports its hold; a no-op outside withRecord.
func noteHold(r *http.Request, from, to time.Time, worker int) {
	if note, ok := r.Context().Value(holdKey).(*holdNote); ok {
		note.from = from.Sub(record.start).Microseconds()
		note.to = to.Sub(record.start).Microseconds()
		note.worker = worker
	}
}

// withRecord records every request h serves; with holds, h may report each request's hold
// (noteHold: the mock), which costs a request context of its own, so only the mock asks.
func withRecord(h http.Handler, holds bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _ := r.Context().Value(connKey).(*connState)
		http2 := r.ProtoMajor == 2
		control := len(r.URL.Path) >= len(ControlPrefix) && r.URL.Path[:len(ControlPrefix)] == ControlPrefix
		seq := record.begin(conn, http2, control)
		if !holds || control {
			h.ServeHTTP(w, r)
			record.end(seq, conn, http2, nil)
			return
		}
		note := &holdNote{}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), holdKey, note)))
		record.end(seq, conn, http2, note)
	})
}

// recordFields names the columns of GET /__gatebench__/requests; a time that is not known is
// null.
var recordFields = []string{
	"seq", "epoch", "conn", "http2", "control", "received_us", "released_us",
	"prev_release_us", "next_receipt_us", "held_from_us", "held_to_us", "worker",
}

// serveRecord answers GET /__gatebench__/requests[?epoch=N]: the record, oldest first.
func serveRecord(w http.ResponseWriter, r *http.Request) {
	only := int64(-1)
	if text := r.URL.Query().Get("epoch"); text != "" {
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "epoch: expected a whole number >= 0, got "+strconv.Quote(text), http.StatusBadRequest)
			return
		}
		only = n
	}
	record.mu.Lock()
	first := uint64(1)
	if record.next > recordSize {
		first = record.next - recordSize + 1
	}
	rows := make([][]any, 0, record.next-first+1)
	for seq := first; seq <= record.next; seq++ {
		e := record.slot(seq)
		if only >= 0 && e.epoch != only {
			continue
		}
		known := func(v int64) any {
			if v == 0 {
				return nil
			}
			return v
		}
		worker := any(nil)
		if e.worker > 0 {
			worker = e.worker
		}
		rows = append(rows, []any{
			e.seq, e.epoch, e.conn, e.http2, e.control, e.received, known(e.released),
			known(e.prevRelease), known(e.nextReceipt), known(e.heldFrom), known(e.heldTo), worker,
		})
	}
	doc := map[string]any{
		"format":        "gatebench-backend-requests/1",
		"clock":         "µs since the backend started (monotonic)",
		"start_wall_us": record.start.UnixMicro(),
		"now_us":        record.now(),
		"epoch":         record.epoch,
		"overwritten":   first - 1,
		"fields":        recordFields,
		"rows":          rows,
	}
	record.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}
