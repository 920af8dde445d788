package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

// An HTTP/1.1 client of the smallest kind: one connection, one request at a time, the request
// written as prepared bytes, the response read into a buffer the connection keeps, its status
// and framing (Content-Length, chunked, or until close) parsed in place and its body skipped.
// Nothing is allocated per request. Go's net/http costs several goroutines, channels and
// allocations per request, which on one core made the engine the bottleneck long before the
// gateways it measures (docs/capacity.md, "The engine").

const (
	readBuffer = 32 << 10
	maxHead    = 1 << 20 // a response head larger than this is refused
)

var errHeadTooLarge = errors.New("the response head is larger than 1 MiB")

// httpConn is one connection and what it has read past the last response.
type httpConn struct {
	c      net.Conn
	buf    []byte
	r, w   int // unread bytes are buf[r:w]
	served int // responses read on it
}

// exchange is the outcome of one request.
type exchange struct {
	lagUS     uint32 // from the due time to the moment the request began to leave
	status    int
	err       error
	opened    bool // a connection was opened for it
	refused   bool // the system refused a socket: the tester's failure
	keepAlive bool // the connection may carry another request
}

func dial(address string, timeout time.Duration) (*httpConn, error) {
	c, err := net.DialTimeout("tcp", address, timeout)
	if err != nil {
		return nil, err
	}
	return &httpConn{c: c, buf: make([]byte, readBuffer)}, nil
}

// roundTrip writes req and reads its response until deadline. head: the request was a HEAD
// (its response has no body).
func (h *httpConn) roundTrip(req []byte, head bool, deadline time.Time) (int, bool, error) {
	if err := h.c.SetDeadline(deadline); err != nil {
		return 0, false, err
	}
	if _, err := h.c.Write(req); err != nil {
		return 0, false, err
	}
	for {
		status, keepAlive, err := h.readResponse(head)
		if err != nil {
			return 0, false, err
		}
		if status >= 100 && status < 200 && status != 101 {
			continue // an interim response (103 Early Hints): the final one follows
		}
		h.served++
		return status, keepAlive, nil
	}
}

// fill reads more bytes into the buffer (moving the unread ones to its start, growing it
// up to maxHead when a head does not fit).
func (h *httpConn) fill() error {
	if h.r > 0 {
		n := copy(h.buf, h.buf[h.r:h.w])
		h.r, h.w = 0, n
	}
	if h.w == len(h.buf) {
		if len(h.buf) >= maxHead {
			return errHeadTooLarge
		}
		bigger := make([]byte, 2*len(h.buf))
		copy(bigger, h.buf[:h.w])
		h.buf = bigger
	}
	n, err := h.c.Read(h.buf[h.w:])
	h.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// line returns the next CRLF- (or LF-) terminated line, reading as needed.
func (h *httpConn) line() ([]byte, error) {
	for {
		if i := bytes.IndexByte(h.buf[h.r:h.w], '\n'); i >= 0 {
			line := h.buf[h.r : h.r+i]
			h.r += i + 1
			return bytes.TrimSuffix(line, []byte{'\r'}), nil
		}
		if err := h.fill(); err != nil {
			return nil, err
		}
	}
}

var (
	hContentLength    = []byte("content-length")
	hTransferEncoding = []byte("transfer-encoding")
	hConnection       = []byte("connection")
	vChunked          = []byte("chunked")
	vClose            = []byte("close")
	vKeepAlive        = []byte("keep-alive")
)

// readResponse reads one response: its status, and whether the connection stays open.
func (h *httpConn) readResponse(head bool) (int, bool, error) {
	line, err := h.line()
	if err != nil {
		if h.r == h.w && errors.Is(err, io.EOF) {
			return 0, false, errClosedBeforeResponse
		}
		return 0, false, err
	}
	// HTTP/1.x SSS reason
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("not an HTTP/1.x status line: %q", truncate(line))
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, fmt.Errorf("not an HTTP/1.x status line: %q", truncate(line))
	}
	keepAlive := line[7] == '1'
	length := int64(-1)
	chunked := false
	for {
		line, err := h.line()
		if err != nil {
			return 0, false, err
		}
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			continue
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case bytes.EqualFold(name, hContentLength):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return 0, false, fmt.Errorf("a Content-Length of %q", truncate(value))
			}
			length = n
		case bytes.EqualFold(name, hTransferEncoding):
			chunked = bytes.EqualFold(lastToken(value), vChunked)
		case bytes.EqualFold(name, hConnection):
			for _, token := range bytes.Split(value, []byte{','}) {
				token = bytes.TrimSpace(token)
				if bytes.EqualFold(token, vClose) {
					keepAlive = false
				} else if bytes.EqualFold(token, vKeepAlive) {
					keepAlive = true
				}
			}
		}
	}
	switch {
	case head, status >= 100 && status < 200, status == 204, status == 304:
		return status, keepAlive, nil
	case chunked:
		return status, keepAlive, h.skipChunked()
	case length >= 0:
		return status, keepAlive, h.skip(length)
	}
	// no framing: the body runs until the server closes
	for {
		h.r = h.w
		if err := h.fill(); err != nil {
			if errors.Is(err, io.EOF) {
				return status, false, nil
			}
			return 0, false, err
		}
	}
}

var errClosedBeforeResponse = errors.New("the connection closed before the response ended")

// skip discards n body bytes.
func (h *httpConn) skip(n int64) error {
	for {
		have := int64(h.w - h.r)
		if have >= n {
			h.r += int(n)
			return nil
		}
		n -= have
		h.r = h.w
		if err := h.fill(); err != nil {
			if errors.Is(err, io.EOF) {
				return errClosedBeforeResponse
			}
			return err
		}
	}
}

func (h *httpConn) skipChunked() error {
	for {
		line, err := h.line()
		if err != nil {
			return eofIsEarly(err)
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("a chunk size of %q", truncate(line))
		}
		if size == 0 {
			for { // trailers, up to the blank line
				line, err := h.line()
				if err != nil {
					return eofIsEarly(err)
				}
				if len(line) == 0 {
					return nil
				}
			}
		}
		if err := h.skip(size); err != nil {
			return err
		}
		if _, err := h.line(); err != nil { // the CRLF after the chunk
			return eofIsEarly(err)
		}
	}
}

func eofIsEarly(err error) error {
	if errors.Is(err, io.EOF) {
		return errClosedBeforeResponse
	}
	return err
}

func lastToken(value []byte) []byte {
	if i := bytes.LastIndexByte(value, ','); i >= 0 {
		value = value[i+1:]
	}
	return bytes.TrimSpace(value)
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

func (h *httpConn) close() {
	h.c.Close()
}

// systemRefused is an error of the tester's machine, not of the target: no ephemeral port
// left (TIME_WAIT), no file descriptor, no buffer.
func systemRefused(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EMFILE) ||
		errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS)
}

// reason is an error in a few words, without addresses (one message per kind of failure).
func reason(err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("request timeout after %d ms", timeout.Milliseconds())
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset by the target"
	case errors.Is(err, errClosedBeforeResponse), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errClosedBeforeResponse.Error()
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Op + ": " + op.Err.Error()
	}
	return err.Error()
}
