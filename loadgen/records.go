package main

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
	"strings"
	"sync"
	"time"
)

// The records file (-out), read by gatebench.core.loadlog. One text line names the format,
// then binary frames, little-endian, each a kind byte, a uint32 payload length and the payload:
//
//	gatebench-loadgen/2\n
//	H  int64 START_EPOCH_US, uint32 GOMAXPROCS                     first
//	M  uint16 ID, the message (UTF-8)                              a KO or drop reason, first use
//	R  uint32 N, then N values of each column in turn:             a batch of requests
//	     int32 PHASE, int64 INTENDED_US, uint32 LAG_US, uint32 LATENCY_US,
//	     uint16 STATUS, uint16 MESSAGE, uint8 FLAGS
//	C  int32 PHASE, the message                                    a control call (backend reset) failed
//	E  int32 PHASE, int64 START_US, END_US, SCHEDULED, SENT, CPU_US, CONNECTIONS   last, one per phase
//
// Times are microseconds from START (the engine's monotonic clock); LAG and LATENCY saturate at
// 2^32 − 1 µs (71 minutes). STATUS 0 is a request with no response, MESSAGE 0 is OK. FLAGS:
// 1 the request opened a connection, 2 the arrival was dropped (never sent: its LATENCY is 0).
// Columns, not rows, so the reader takes each one in a single copy.

const recordsFormat = "gatebench-loadgen/2\n"

const (
	flagNewConn = 1
	flagDropped = 2
)

// record is one arrival's outcome.
type record struct {
	intended int64 // µs from t0
	lag      uint32
	latency  uint32
	phase    int32
	status   uint16
	message  uint16
	flags    uint8
}

const recordBytes = 4 + 8 + 4 + 4 + 2 + 2 + 1

// batchSize is how many records a worker keeps before it hands them to the file.
const batchSize = 4096

// maxMessages is the number of distinct messages a file can name; later ones share the last.
const maxMessages = math.MaxUint16

// recorder writes frames from every worker, one batch at a time.
type recorder struct {
	mu       sync.Mutex
	w        *bufio.Writer
	messages map[string]uint16
	frame    []byte
	err      error
}

func newRecorder(w io.Writer) *recorder {
	return &recorder{w: bufio.NewWriterSize(w, 1<<20), messages: map[string]uint16{}}
}

func micros(d time.Duration) uint32 {
	us := d.Microseconds()
	switch {
	case us < 0:
		return 0
	case us > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(us)
}

func (r *recorder) writeFrame(kind byte, payload []byte) {
	if r.err != nil {
		return
	}
	var head [5]byte
	head[0] = kind
	binary.LittleEndian.PutUint32(head[1:], uint32(len(payload)))
	if _, err := r.w.Write(head[:]); err != nil {
		r.err = err
		return
	}
	if _, err := r.w.Write(payload); err != nil {
		r.err = err
	}
}

func (r *recorder) header(startEpochUS int64, cores int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.w.WriteString(recordsFormat); err != nil {
		r.err = err
	}
	var p [12]byte
	binary.LittleEndian.PutUint64(p[:], uint64(startEpochUS))
	binary.LittleEndian.PutUint32(p[8:], uint32(cores))
	r.writeFrame('H', p[:])
}

// message is the id of a message, written the first time it is seen.
func (r *recorder) message(text string) uint16 {
	if text == "" {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.messages[text]; ok {
		return id
	}
	if len(r.messages) >= maxMessages {
		text = "other errors (more kinds than a records file names)"
		if id, ok := r.messages[text]; ok {
			return id
		}
		return uint16(len(r.messages))
	}
	id := uint16(len(r.messages) + 1)
	r.messages[text] = id
	payload := binary.LittleEndian.AppendUint16(nil, id)
	r.writeFrame('M', append(payload, oneLine(text)...))
	return id
}

func oneLine(text string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(text)
}

// batch writes records as one R frame.
func (r *recorder) batch(recs []record) {
	if len(recs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(recs)
	p := r.frame[:0]
	p = binary.LittleEndian.AppendUint32(p, uint32(n))
	for i := range recs {
		p = binary.LittleEndian.AppendUint32(p, uint32(recs[i].phase))
	}
	for i := range recs {
		p = binary.LittleEndian.AppendUint64(p, uint64(recs[i].intended))
	}
	for i := range recs {
		p = binary.LittleEndian.AppendUint32(p, recs[i].lag)
	}
	for i := range recs {
		p = binary.LittleEndian.AppendUint32(p, recs[i].latency)
	}
	for i := range recs {
		p = binary.LittleEndian.AppendUint16(p, recs[i].status)
	}
	for i := range recs {
		p = binary.LittleEndian.AppendUint16(p, recs[i].message)
	}
	for i := range recs {
		p = append(p, recs[i].flags)
	}
	r.frame = p
	r.writeFrame('R', p)
}

func (r *recorder) control(phase int, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	payload := binary.LittleEndian.AppendUint32(nil, uint32(int32(phase)))
	r.writeFrame('C', append(payload, oneLine(text)...))
}

func (r *recorder) end(e phaseEnd, sent, connections int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := binary.LittleEndian.AppendUint32(nil, uint32(int32(e.index)))
	for _, v := range []int64{e.start.Microseconds(), e.end.Microseconds(), e.scheduled, sent, e.cpu.Microseconds(), connections} {
		p = binary.LittleEndian.AppendUint64(p, uint64(v))
	}
	r.writeFrame('E', p)
}

func (r *recorder) flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	return r.w.Flush()
}
