package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"
	"time"
)

// Right answers under load (docs/trust.md): in a phase with "answers" in the document, every
// request names itself (X-Gatebench-Request) and every answer is checked against the Go
// backend's signature (backend/sign.go), with the request's own bytes as they were sent: the
// answer names this request, the backend received it once, the status and the body read are
// the ones it sent, and it received what was sent (the method, the request target when the
// phase asks, the plan's headers, the body). A wrong answer is recorded as a KO whose message
// is gatebench.core.answers' ("wrong answer (KIND): request ID METHOD PATH; expected ...; got
// ..."), which the reader counts apart from the errors.
//
// Digests are the backend's: the first 8 bytes of SHA-256 in hex. The check costs three
// digests per request (the target and headers, the request body, the answer's body) and, for
// each connection, one running hash; nothing is allocated per request but the digests' own
// state.

const (
	requestHeader  = "X-Gatebench-Request"
	signedHeader   = "X-Gatebench-Signed-Headers"
	cacheKeyHeader = "X-Gatebench-Cache-Key"
	answerHeader   = "x-gatebench-answer"
	// evidenceKept is how many wrong answers of a phase keep their own words (request, expected,
	// got); later ones are recorded by kind alone, so the records' message table stays small
	// however wrong a target is.
	evidenceKept = 5
	// maxAnswer bounds the signature a response may carry.
	maxAnswer = 512
	// bodyCopyPrefix starts a body that carries a copy of its signature (answersSpec.Body).
	bodyCopyPrefix = `{"signature":"`
)

// runTag tells this process's request identities from another tester's.
var runTag = strconv.FormatInt((time.Now().UnixNano()^int64(os.Getpid())<<20)&0xffffff, 16)

type answersSpec struct {
	Target  bool     `json:"target"`
	Headers []string `json:"headers"`
	Cached  bool     `json:"cached"`    // the plan caches these answers at the gateway
	Key     []string `json:"cache_key"` // the parts the cache keys them on (backend/sign.go)
	Every   int64    `json:"every"`     // check one answer in this many (0, 1: all)
	Body    bool     `json:"body"`      // the backend copies its signature into its bodies (echo)
}

// answerCheck is one phase's check.
type answerCheck struct {
	target   bool
	cached   bool     // an answer may be another request's of the phase already sent (a gateway's cache)
	key      []string // the parts of a request the cache keys on, when held to it
	every    int64    // check one answer in this many
	body     bool     // an answer's body carries a copy of its signature (bodyCopy)
	signed   []string // lower-case header names the backend signs
	idPrefix []byte   // "TAG.PHASEID."
	phaseID  string   // "p0004": the phase's index, in the run's order
	extra    []byte   // the signed headers' list, as a request header line
	kept     int      // wrong answers recorded with their evidence so far
	sent     int64    // the highest arrival number whose request was written (appendHeaders)
}

func newAnswerCheck(spec *answersSpec, phaseID string) *answerCheck {
	c := &answerCheck{target: spec.Target, cached: spec.Cached, every: max(1, spec.Every), body: spec.Body, idPrefix: []byte(runTag + "." + phaseID + "."), phaseID: phaseID}
	for _, name := range spec.Headers {
		c.signed = append(c.signed, strings.ToLower(name))
	}
	if len(c.signed) > 0 {
		c.extra = []byte(signedHeader + ": " + strings.Join(c.signed, ",") + "\r\n")
	}
	// a cached answer is held to this request's cache key where the backend receives the
	// target as sent
	if c.cached && c.target && len(spec.Key) > 0 {
		c.key = spec.Key
		c.extra = append(c.extra, cacheKeyHeader+": "+strings.Join(spec.Key, ",")+"\r\n"...)
	}
	return c
}

// appendHeaders writes the request's identity (arrival n of the phase); nothing for a request
// left out of the sample (answers: {every: N}), which goes unsigned and unchecked.
func (c *answerCheck) appendHeaders(dst []byte, n int64) []byte {
	c.sent = max(c.sent, n)
	if n%c.every != 0 {
		return dst
	}
	dst = append(dst, requestHeader+": "...)
	dst = append(dst, c.idPrefix...)
	dst = strconv.AppendInt(dst, n, 10)
	dst = append(dst, "\r\n"...)
	return append(dst, c.extra...)
}

func digest8(sum []byte) string { return hex.EncodeToString(sum[:8]) }

func signature(body []byte) string {
	sum := sha256.Sum256(body)
	return strconv.Itoa(len(body)) + ":" + digest8(sum[:])
}

// sentRequest is what a request's bytes say: method, target, the value of each header and the
// body.
type sentRequest struct {
	method, target string
	id             string
	head           []byte
	body           []byte
}

func parseSent(req []byte) sentRequest {
	var s sentRequest
	end := bytes.Index(req, []byte("\r\n\r\n"))
	if end < 0 {
		return s
	}
	s.head, s.body = req[:end], req[end+4:]
	line := s.head
	if i := bytes.Index(line, []byte("\r\n")); i >= 0 {
		line = line[:i]
	}
	parts := strings.SplitN(string(line), " ", 3)
	if len(parts) == 3 {
		s.method, s.target = parts[0], parts[1]
	}
	s.id = s.header(strings.ToLower(requestHeader))
	return s
}

// header is the value of a header the request carries ("" when none; several are joined by
// ", " as the backend reads them).
func (s sentRequest) header(name string) string {
	var values []string
	for _, line := range bytes.Split(s.head, []byte("\r\n"))[1:] {
		colon := bytes.IndexByte(line, ':')
		if colon > 0 && strings.EqualFold(string(line[:colon]), name) {
			values = append(values, strings.TrimSpace(string(line[colon+1:])))
		}
	}
	return strings.Join(values, ", ")
}

func (s sentRequest) has(name string) bool {
	for _, line := range bytes.Split(s.head, []byte("\r\n"))[1:] {
		colon := bytes.IndexByte(line, ':')
		if colon > 0 && strings.EqualFold(string(line[:colon]), name) {
			return true
		}
	}
	return false
}

// received is the digest the backend computes of what it received, for what was sent.
func (c *answerCheck) received(s sentRequest) string {
	return s.digest(s.target, c.signed)
}

// cacheKey is the backend's key digest of this request: its path, its query where the key
// varies on it, and the headers it names.
func (c *answerCheck) cacheKey(s sentRequest) string {
	target, query, _ := strings.Cut(s.target, "?")
	var names []string
	for _, part := range c.key {
		if part == "query" && query != "" {
			target += "?" + query
		} else if name, ok := strings.CutPrefix(part, "header:"); ok {
			names = append(names, strings.ToLower(name))
		}
	}
	return s.digest(target, names)
}

// digest is the backend's digest of "METHOD SP target LF" then "name: value LF" for each named
// header sent ("name:" alone when it was not).
func (s sentRequest) digest(target string, names []string) string {
	var text strings.Builder
	text.WriteString(s.method + " " + target + "\n")
	for _, name := range names {
		text.WriteString(name + ":")
		if s.has(name) {
			text.WriteString(" " + s.header(name))
		}
		text.WriteString("\n")
	}
	sum := sha256.Sum256([]byte(text.String()))
	return digest8(sum[:])
}

// verdict is "" for a right answer, else the wrong answer's message: with its evidence for the
// first evidenceKept of the phase, by kind alone after. body is what was read of the answer's
// body.
func (c *answerCheck) verdict(req []byte, status int, ok bool, answer []byte, body *bodyHash) string {
	s := parseSent(req)
	if s.id == "" {
		return "" // not in the sample
	}
	path := s.target
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i] + "?..." // a query may hold a key: never written
	}
	request := "request " + s.id + " " + s.method + " " + path
	copied := ""
	if c.body {
		copied = bodyCopy(body.head())
	}
	if len(answer) == 0 {
		if copied != "" {
			// the backend's own body without its header: a gateway dropped the signature
			if id := signatureFields(copied)["id"]; id != s.id && !(c.cached && c.sentBefore(id, s.id)) {
				return c.wrong("crossed", request, "its own answer", "the body of request "+id+", no header")
			}
			return c.wrong("unsigned", request, "the backend's signature", "its own body, no header")
		}
		if !ok {
			return "" // the gateway's own refusal: an error, which the status says
		}
		return c.wrong("unsigned", request, "the backend's signature", "status "+strconv.Itoa(status)+", none")
	}
	fields := signatureFields(string(answer))
	own := fields["id"] == s.id
	cachedOne := !own && c.cached && c.sentBefore(fields["id"], s.id)
	otherKey := cachedOne && c.key != nil && fields["key"] != c.cacheKey(s)
	if !own && (!cachedOne || otherKey) {
		expected := "its own answer"
		if otherKey {
			expected = "an answer of its cache key"
		} else if c.cached {
			expected = "its own answer or one of a request of this run already sent (cached)"
		}
		return c.wrong("crossed", request, expected, "the answer to request "+fields["id"])
	}
	if copied != "" {
		if id := signatureFields(copied)["id"]; id != fields["id"] {
			// the head of one answer with the body of another
			return c.wrong("crossed", request, "its own body", "the body of request "+id)
		}
	}
	if fields["seen"] != "1" {
		return c.wrong("repeated", request, "the backend to receive it once", "received "+fields["seen"]+" times")
	}
	if fields["status"] != strconv.Itoa(status) {
		return c.wrong("status", request, "status "+fields["status"]+" (the backend's)", "status "+strconv.Itoa(status))
	}
	if read := strconv.FormatInt(body.n, 10) + ":" + digest8(body.h.Sum(nil)); fields["sent"] != read {
		return c.wrong("truncated", request, "the backend's body "+fields["sent"], "a body "+read)
	}
	if !own {
		return "" // a cached answer: what the backend received was the earlier request
	}
	if c.target && fields["received"] != c.received(s) {
		return c.wrong("received", request, "the backend to receive the method, target and headers sent", "something else")
	}
	if sent := signature(s.body); fields["received-body"] != sent {
		return c.wrong("received", request, "the backend to receive a body "+sent, "a body "+fields["received-body"])
	}
	return ""
}

// signatureFields are the key=value fields of a signature (or of its copy in a body).
func signatureFields(signature string) map[string]string {
	fields := map[string]string{}
	for _, part := range strings.Split(signature, ";") {
		if key, value, found := strings.Cut(part, "="); found {
			fields[strings.TrimSpace(key)] = strings.TrimSpace(value)
		}
	}
	return fields
}

// bodyCopy is the signature's copy a body starts with ({"signature":"...": backend/sign.go's
// bodyCopy, which only engine-made identities reach, so it holds no JSON escape); "" when
// the body starts otherwise.
func bodyCopy(start []byte) string {
	rest, found := bytes.CutPrefix(start, []byte(bodyCopyPrefix))
	if !found {
		return ""
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return ""
	}
	return string(rest[:end])
}

// sentBefore says whether id names another request already sent to the target, which a
// gateway's cache may hold the answer of: one of another load generator's (a tester beside
// this one, an earlier probe's process: the gateway outlives them), one of an earlier phase
// of this one (the target's warm-up, an earlier repetition: the cache outlives a phase), or
// one of this phase already written. Not "a lower number": an arrival held for a connection
// leaves after a later one, and users send side by side, so the answer a cache keeps can be a
// later-numbered request's that reached the gateway first. The cache key still binds it.
func (c *answerCheck) sentBefore(id, own string) bool {
	if id == own || !strings.HasPrefix(own, string(c.idPrefix)) {
		return false
	}
	parts := strings.Split(id, ".")
	if len(parts) != 3 {
		return false
	}
	n, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || n < 0 {
		return false
	}
	if parts[0] != runTag {
		return true
	}
	if parts[1] == c.phaseID {
		return n <= c.sent
	}
	mine, _ := strconv.Atoi(strings.TrimPrefix(c.phaseID, "p"))
	other, err := strconv.Atoi(strings.TrimPrefix(parts[1], "p"))
	return strings.HasPrefix(parts[1], "p") && err == nil && other < mine
}

func (c *answerCheck) wrong(kind, request, expected, got string) string {
	if c.kept >= evidenceKept {
		return "wrong answer (" + kind + ")"
	}
	c.kept++
	return fmt.Sprintf("wrong answer (%s): %s; expected %s; got %s", kind, request, expected, got)
}

// bodyHash digests a response's body as the reader skips it (one per connection), and keeps
// its first bytes where the phase's bodies carry a copy of their signature (bodyCopy).
type bodyHash struct {
	h     hash.Hash
	n     int64
	keep  bool
	start [len(bodyCopyPrefix) + maxAnswer]byte
}

// head is the body's first bytes read, as many as a copy of the signature can take.
func (b *bodyHash) head() []byte { return b.start[:min(b.n, int64(len(b.start)))] }

func (b *bodyHash) reset() {
	if b.h == nil {
		b.h = sha256.New()
	}
	b.h.Reset()
	b.n = 0
}

func (b *bodyHash) write(p []byte) {
	if b.keep && b.n < int64(len(b.start)) {
		copy(b.start[b.n:], p)
	}
	b.h.Write(p)
	b.n += int64(len(p))
}
