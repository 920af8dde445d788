package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

// decoded is what a records file holds (the reader of gatebench.core.loadlog, in Go, for the
// engine's own tests).
type records struct {
	startEpochUS int64
	cores        uint32
	messages     map[uint16]string
	requests     []record
	controls     map[int32]string
	ends         []decodedEnd
	kinds        []byte
}

type decodedEnd struct {
	phase                                           int32
	start, end, scheduled, sent, cpuUS, connections int64
}

func decodeRecords(data []byte) (records, error) {
	out := records{messages: map[uint16]string{}, controls: map[int32]string{}}
	if !bytes.HasPrefix(data, []byte(recordsFormat)) {
		return out, fmt.Errorf("no %q line", recordsFormat)
	}
	data = data[len(recordsFormat):]
	le := binary.LittleEndian
	for len(data) > 0 {
		if len(data) < 5 {
			return out, fmt.Errorf("a truncated frame head")
		}
		kind, size := data[0], int(le.Uint32(data[1:5]))
		if len(data) < 5+size {
			return out, fmt.Errorf("a truncated %c frame", kind)
		}
		p := data[5 : 5+size]
		data = data[5+size:]
		out.kinds = append(out.kinds, kind)
		switch kind {
		case 'H':
			out.startEpochUS, out.cores = int64(le.Uint64(p)), le.Uint32(p[8:])
		case 'M':
			out.messages[le.Uint16(p)] = string(p[2:])
		case 'C':
			out.controls[int32(le.Uint32(p))] = string(p[4:])
		case 'E':
			v := func(i int) int64 { return int64(le.Uint64(p[4+8*i:])) }
			out.ends = append(out.ends, decodedEnd{int32(le.Uint32(p)), v(0), v(1), v(2), v(3), v(4), v(5)})
		case 'R':
			n := int(le.Uint32(p))
			if len(p) != 4+n*recordBytes {
				return out, fmt.Errorf("an R frame of %d bytes for %d records", len(p), n)
			}
			col := p[4:]
			rs := make([]record, n)
			for i := range rs {
				rs[i].phase = int32(le.Uint32(col[4*i:]))
			}
			col = col[4*n:]
			for i := range rs {
				rs[i].intended = int64(le.Uint64(col[8*i:]))
			}
			col = col[8*n:]
			for i := range rs {
				rs[i].lag = le.Uint32(col[4*i:])
			}
			col = col[4*n:]
			for i := range rs {
				rs[i].latency = le.Uint32(col[4*i:])
			}
			col = col[4*n:]
			for i := range rs {
				rs[i].status = le.Uint16(col[2*i:])
			}
			col = col[2*n:]
			for i := range rs {
				rs[i].message = le.Uint16(col[2*i:])
			}
			col = col[2*n:]
			for i := range rs {
				rs[i].flags = col[i]
			}
			out.requests = append(out.requests, rs...)
		default:
			return out, fmt.Errorf("unknown frame kind %q", kind)
		}
	}
	return out, nil
}

func TestTheRecordsFormatByteForByte(t *testing.T) {
	var out bytes.Buffer
	r := newRecorder(&out)
	r.header(1_700_000_000_000_000, 2)
	id := r.message("status.find.lt(400), found 503")
	if again := r.message("status.find.lt(400), found 503"); again != id || id != 1 {
		t.Fatalf("message ids %d and %d, want 1 and 1", id, again)
	}
	r.batch([]record{
		{phase: 0, intended: 5000, lag: 40, latency: 1200, status: 200, flags: flagNewConn},
		{phase: 1, intended: 1_015_000, lag: 2500, latency: 12500, status: 503, message: id},
	})
	r.control(1, "POST http://127.0.0.1:9/__gatebench__/reset:\tconnection refused")
	r.end(phaseEnd{index: 1, start: time.Second, end: 2 * time.Second, scheduled: 3, cpu: 150 * time.Millisecond}, 2, 1)
	if err := r.flush(); err != nil {
		t.Fatal(err)
	}
	want := []byte("gatebench-loadgen/2\n")
	frame := func(kind byte, payload ...any) {
		var p bytes.Buffer
		for _, v := range payload {
			if s, ok := v.(string); ok {
				p.WriteString(s)
				continue
			}
			binary.Write(&p, binary.LittleEndian, v)
		}
		want = append(want, kind)
		want = binary.LittleEndian.AppendUint32(want, uint32(p.Len()))
		want = append(want, p.Bytes()...)
	}
	frame('H', int64(1_700_000_000_000_000), uint32(2))
	frame('M', uint16(1), "status.find.lt(400), found 503")
	frame('R', uint32(2), int32(0), int32(1), int64(5000), int64(1_015_000), uint32(40), uint32(2500),
		uint32(1200), uint32(12500), uint16(200), uint16(503), uint16(0), uint16(1), uint8(1), uint8(0))
	frame('C', int32(1), "POST http://127.0.0.1:9/__gatebench__/reset: connection refused")
	frame('E', int32(1), int64(1_000_000), int64(2_000_000), int64(3), int64(2), int64(150_000), int64(1))
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("records file\n got %q\nwant %q", out.Bytes(), want)
	}
	got, err := decodeRecords(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if string(got.kinds) != "HMRCE" || got.requests[1].latency != 12500 || got.messages[1] == "" {
		t.Fatalf("decoded %+v", got)
	}
}

func TestLongTimesSaturateAndNegativeOnesAreZero(t *testing.T) {
	if got := micros(100 * time.Minute); got != 1<<32-1 {
		t.Fatalf("100 minutes: %d µs, want the uint32 maximum", got)
	}
	if got := micros(-time.Millisecond); got != 0 {
		t.Fatalf("−1 ms: %d µs, want 0", got)
	}
}

func TestRecordsAreWrittenInBatches(t *testing.T) {
	// more arrivals than a batch holds
	_, got := runFake(t, &fakeNet{}, 1, testPhase(t, 0, 10_000, 1000, 1000))
	frames := bytes.Count(got.kinds, []byte("R"))
	if len(got.requests) != 10_000 || frames != 3 {
		t.Fatalf("%d records in %d R frames, want 10,000 in 3 (4,096 each, then the rest)", len(got.requests), frames)
	}
}
