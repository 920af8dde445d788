package main

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"
)

// An HTTP/1.1 response reader of the smallest kind, fed the bytes a connection receives as
// they come (network.go reads them): it finds the status and the framing (Content-Length,
// chunked, or until the server closes), skips the body without keeping it, and says when the
// response is complete. Nothing is allocated per response.

const maxHead = 1 << 20 // a response head larger than this is refused

var (
	errHeadTooLarge         = errors.New("the response head is larger than 1 MiB")
	errClosedBeforeResponse = errors.New("the connection closed before the response ended")
)

type parseState uint8

const (
	stateHead parseState = iota
	stateLength
	stateChunkSize
	stateChunkData
	stateChunkEnd
	stateTrailers
	stateUntilClose
	stateDone
)

// response is the reader of one response on a connection.
type response struct {
	state     parseState
	head      bool // the request was a HEAD: no body
	status    int
	keepAlive bool
	remaining int64     // body or chunk bytes still to skip
	any       bool      // a byte of the response arrived
	sum       *bodyHash // the body's digest, when the phase checks its answers (answers.go)
	answer    [maxAnswer]byte
	answerLen int // the backend's signature (X-Gatebench-Answer); 0: none
}

func (r *response) reset(head bool) {
	sum := r.sum
	*r = response{head: head, sum: sum}
	if sum != nil {
		sum.reset()
	}
}

// digest feeds body bytes to the answer's check.
func (r *response) digest(body []byte) {
	if r.sum != nil {
		r.sum.write(body)
	}
}

var (
	hContentLength    = []byte("content-length")
	hTransferEncoding = []byte("transfer-encoding")
	hConnection       = []byte("connection")
	hAnswer           = []byte(answerHeader)
	vChunked          = []byte("chunked")
	vClose            = []byte("close")
	vKeepAlive        = []byte("keep-alive")
)

// feed reads what it can of buf: the bytes it used, and whether the response is complete.
// Bytes past a complete response stay unread (the caller keeps them for the next one).
func (r *response) feed(buf []byte) (int, bool, error) {
	used := 0
	if len(buf) > 0 {
		r.any = true
	}
	for used < len(buf) || r.state == stateDone {
		rest := buf[used:]
		switch r.state {
		case stateDone:
			return used, true, nil
		case stateHead:
			end, skip := headEnd(rest)
			if end < 0 {
				if len(rest) >= maxHead {
					return used, false, errHeadTooLarge
				}
				return used, false, nil
			}
			if err := r.readHead(rest[:end]); err != nil {
				return used, false, err
			}
			used += end + skip
		case stateLength:
			n := min(int64(len(rest)), r.remaining)
			r.digest(rest[:n])
			r.remaining -= n
			used += int(n)
			if r.remaining == 0 {
				r.state = stateDone
			}
		case stateChunkSize, stateChunkEnd, stateTrailers:
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				if len(rest) >= maxHead {
					return used, false, errHeadTooLarge
				}
				return used, false, nil
			}
			line := bytes.TrimSuffix(rest[:i], []byte{'\r'})
			used += i + 1
			if err := r.readLine(line); err != nil {
				return used, false, err
			}
		case stateChunkData:
			n := min(int64(len(rest)), r.remaining)
			r.digest(rest[:n])
			r.remaining -= n
			used += int(n)
			if r.remaining == 0 {
				r.state = stateChunkEnd
			}
		case stateUntilClose:
			r.digest(rest)
			return len(buf), false, nil
		}
	}
	return used, r.state == stateDone, nil
}

// closed is the server closing the connection after feed took everything: the end of a body
// that runs until the close, or a response cut short.
func (r *response) closed() (bool, error) {
	if r.state == stateUntilClose {
		r.state = stateDone
		r.keepAlive = false
		return true, nil
	}
	return false, errClosedBeforeResponse
}

// headEnd is where the head ends in buf (the blank line) and the length of the blank line's
// terminator; -1 when it has not all arrived.
func headEnd(buf []byte) (int, int) {
	if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
		if j := bytes.Index(buf[:i+2], []byte("\n\n")); j >= 0 {
			return j + 1, 1
		}
		return i + 2, 2
	}
	if j := bytes.Index(buf, []byte("\n\n")); j >= 0 {
		return j + 1, 1
	}
	return -1, 0
}

// readHead reads the status line and the headers (every line ends with \n).
func (r *response) readHead(head []byte) error {
	i := bytes.IndexByte(head, '\n')
	line := bytes.TrimSuffix(head[:i], []byte{'\r'})
	// HTTP/1.x SSS reason
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return fmt.Errorf("not an HTTP/1.x status line: %q", truncate(line))
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return fmt.Errorf("not an HTTP/1.x status line: %q", truncate(line))
	}
	r.status, r.keepAlive = status, line[7] == '1'
	length, chunked := int64(-1), false
	for rest := head[i+1:]; len(rest) > 0; {
		j := bytes.IndexByte(rest, '\n')
		line, rest = bytes.TrimSuffix(rest[:j], []byte{'\r'}), rest[j+1:]
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			continue
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case bytes.EqualFold(name, hContentLength):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("a Content-Length of %q", truncate(value))
			}
			length = n
		case r.sum != nil && bytes.EqualFold(name, hAnswer) && len(value) <= maxAnswer:
			r.answerLen = copy(r.answer[:], value)
		case bytes.EqualFold(name, hTransferEncoding):
			chunked = bytes.EqualFold(lastToken(value), vChunked)
		case bytes.EqualFold(name, hConnection):
			for _, token := range bytes.Split(value, []byte{','}) {
				token = bytes.TrimSpace(token)
				if bytes.EqualFold(token, vClose) {
					r.keepAlive = false
				} else if bytes.EqualFold(token, vKeepAlive) {
					r.keepAlive = true
				}
			}
		}
	}
	switch {
	case status >= 100 && status < 200 && status != 101:
		r.reset(r.head) // an interim response (103 Early Hints): the final one follows
		r.any = true
	case r.head, status == 101, status == 204, status == 304:
		r.state = stateDone
	case chunked:
		r.state = stateChunkSize
	case length == 0:
		r.state = stateDone
	case length > 0:
		r.state, r.remaining = stateLength, length
	default:
		r.state = stateUntilClose
	}
	return nil
}

// readLine reads one line of a chunked body: a chunk's size, the end of its data, a trailer.
func (r *response) readLine(line []byte) error {
	switch r.state {
	case stateChunkSize:
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("a chunk size of %q", truncate(line))
		}
		if size == 0 {
			r.state = stateTrailers
		} else {
			r.state, r.remaining = stateChunkData, size
		}
	case stateChunkEnd:
		if len(line) != 0 {
			return fmt.Errorf("chunk data runs past its size")
		}
		r.state = stateChunkSize
	case stateTrailers:
		if len(line) == 0 {
			r.state = stateDone
		}
	}
	return nil
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

// errTimeout is a request that got no complete response within its timeout.
var errTimeout = errors.New("request timeout")

// systemRefused is an error of the tester's machine, not of the target: no ephemeral port
// left (TIME_WAIT), no file descriptor, no buffer.
func systemRefused(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EMFILE) ||
		errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS)
}

// reason is an error in a few words, without addresses (one message per kind of failure).
func reason(err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, errTimeout):
		return fmt.Sprintf("request timeout after %d ms", timeout.Milliseconds())
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset by the target"
	case errors.Is(err, errClosedBeforeResponse):
		return errClosedBeforeResponse.Error()
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}
