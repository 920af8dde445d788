package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The backend's signature on every answer it gives to a request that carries an identity, so a
// load engine can tell, request by request and under load, that the answer it read is the one
// the backend wrote for that request, whole (docs/trust.md, "Right answers under load").
//
// The engine names the request in the header RequestHeader (a token of at most 128 visible
// ASCII characters it makes unique within the run) and may name, in SignedHeaders, the request
// headers of the plan the backend must have received (comma-separated, case-insensitive). The
// backend then answers with AnswerHeader:
//
//	id=ID; status=S; seen=N; received=R; received-body=L:B; sent=K:D
//
//	ID      the request's identity as the backend received it
//	S       the status the backend answered
//	N       how many times the backend received this identity since the last reset (1: once; a
//	        gateway that retried a request shows 2 on the second answer)
//	R       digest of "METHOD SP REQUEST-TARGET LF" then "name: value LF" for each signed header
//	        in the order named (absent: "name:" alone), as the backend received them
//	L:B     the request body's length and digest (the body as the handler read it: after
//	        the transfer coding, before any content coding)
//	K:D     the answer body's length and digest (nothing for HEAD)
//
// When the engine also names, in CacheKeyHeader, the parts of the request a gateway's cache
// keys its answers on (comma-separated: "path", "query", "header:NAME"), the signature ends with
//
//	; key=C
//
//	C       digest of "METHOD SP P LF" then "name: value LF" for each header part in the order
//	        named (absent: "name:" alone), where P is the request target's path, followed by
//	        "?" and its query when "query" is named and the target has one: what the engine
//	        computes for a later request answered from the cache with this answer, which
//	        must be the same (an answer cached under another key is a crossed answer)
//
// A digest is the first 8 bytes of SHA-256, in 16 lower-case hex digits: every engine has it in
// its standard library (Go, Java), and 64 bits make an accidental match between two different
// bodies of one run negligible. This is a check against accidents of a proxy (a crossed,
// truncated or rewritten answer), not against an adversary.
//
// To put the answer's digest in a header, the answer is held in memory until the handler
// returns, then written with its Content-Length: answers of the backend's modes are small (the
// mock's are bounded by its response_size). Requests without RequestHeader and the control
// endpoints are served exactly as before, unsigned.
//
// A handler that composes its own body (echo's JSON; not the mock's or the auction's, which
// answer in the description's shapes) also copies the signature into it, as the body's first
// member: {"signature":"id=ID; status=S; seen=N; received=R; received-body=L:B", ...}: every
// field but the answer body's own (sent, key), which no body can hold (bodyCopy). An engine
// then tells whose answer a body is even when a gateway dropped the header, or crossed the
// bodies of two answers and kept their heads.

const (
	RequestHeader  = "X-Gatebench-Request"
	SignedHeaders  = "X-Gatebench-Signed-Headers"
	AnswerHeader   = "X-Gatebench-Answer"
	CacheKeyHeader = "X-Gatebench-Cache-Key"
	maxIDLength    = 128
)

// digest is the signature's digest of data: the first 8 bytes of SHA-256, in hex.
func digest(sum []byte) string { return hex.EncodeToString(sum[:8]) }

// validID accepts a token of visible ASCII without the separators of AnswerHeader.
func validID(id string) bool {
	if id == "" || len(id) > maxIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= ' ' || c >= 0x7f || c == ';' || c == ',' || c == '=' {
			return false
		}
	}
	return true
}

// seenIDs counts each identity's receipts since the last reset. It is bounded: past maxSeen
// identities it starts again empty (a retry that straddles that moment shows seen=1; a phase of
// the tests holds far fewer requests), so the backend's memory never grows with a run.
type seenIDs struct {
	mu    sync.Mutex
	count map[string]int
}

const maxSeen = 1 << 18

var seen = &seenIDs{count: map[string]int{}}

func (s *seenIDs) add(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.count) >= maxSeen {
		s.count = map[string]int{}
	}
	s.count[id]++
	return s.count[id]
}

func (s *seenIDs) reset() {
	s.mu.Lock()
	s.count = map[string]int{}
	s.mu.Unlock()
}

// hashingBody digests the request body as the handler reads it.
type hashingBody struct {
	body io.ReadCloser
	hash hash.Hash
	n    int64
}

func (b *hashingBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.hash.Write(p[:n])
		b.n += int64(n)
	}
	return n, err
}

func (b *hashingBody) Close() error { return b.body.Close() }

// heldAnswer keeps the handler's answer until it returns.
type heldAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *heldAnswer) Header() http.Header { return a.header }

func (a *heldAnswer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *heldAnswer) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.body.Write(p)
}

// receivedDigest is R of the signature for this request.
func receivedDigest(r *http.Request) string {
	return requestDigest(r, r.RequestURI, strings.Split(r.Header.Get(SignedHeaders), ","))
}

// keyDigest is C of the signature for this request, given the parts its key varies on.
func keyDigest(r *http.Request, parts string) string {
	target, query, _ := strings.Cut(r.RequestURI, "?")
	var headers []string
	for _, part := range strings.Split(parts, ",") {
		part = strings.ToLower(strings.TrimSpace(part))
		if part == "query" && query != "" {
			target += "?" + query
		} else if name, ok := strings.CutPrefix(part, "header:"); ok {
			headers = append(headers, name)
		}
	}
	return requestDigest(r, target, headers)
}

// requestDigest digests "METHOD SP target LF" then "name: value LF" for each named header as
// received (absent: "name:" alone; blank names skipped).
func requestDigest(r *http.Request, target string, names []string) string {
	h := sha256.New()
	h.Write([]byte(r.Method + " " + target + "\n"))
	for _, name := range names {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		h.Write([]byte(name + ":"))
		if values, ok := r.Header[http.CanonicalHeaderKey(name)]; ok {
			h.Write([]byte(" " + strings.Join(values, ", ")))
		}
		h.Write([]byte("\n"))
	}
	return digest(h.Sum(nil))
}

// receipt is what the backend received of a signed request: the signature's fields that do
// not depend on the answer's body.
type receipt struct {
	id       string
	times    int
	received string
	body     *hashingBody
}

// fields is the signature up to the answer body's own: id, status, seen, received and
// received-body (the body as the handler has read it so far).
func (rc *receipt) fields(status int) string {
	return "id=" + rc.id +
		"; status=" + strconv.Itoa(status) +
		"; seen=" + strconv.Itoa(rc.times) +
		"; received=" + rc.received +
		"; received-body=" + strconv.FormatInt(rc.body.n, 10) + ":" + digest(rc.body.hash.Sum(nil))
}

type receiptKey struct{}

// bodyCopy is the signature's copy for a body the handler composes itself and answers with
// status, once it has read the request's body: "" for a request that is not signed.
func bodyCopy(r *http.Request, status int) string {
	rc, ok := r.Context().Value(receiptKey{}).(*receipt)
	if !ok {
		return ""
	}
	return rc.fields(status)
}

// withSignature signs every answer to a request that names itself in RequestHeader.
func withSignature(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestHeader)
		if id == "" || strings.HasPrefix(r.URL.Path, ControlPrefix) {
			next.ServeHTTP(w, r)
			return
		}
		if !validID(id) {
			http.Error(w, RequestHeader+": expected a token of at most 128 visible ASCII characters without ';', ',' or '='", http.StatusBadRequest)
			return
		}
		key := ""
		if parts := r.Header.Get(CacheKeyHeader); parts != "" {
			key = "; key=" + keyDigest(r, parts)
		}
		body := &hashingBody{body: r.Body, hash: sha256.New()}
		rc := &receipt{id: id, times: seen.add(id), received: receivedDigest(r), body: body}
		r.Body = body
		r = r.WithContext(context.WithValue(r.Context(), receiptKey{}, rc))
		answer := &heldAnswer{header: w.Header()}
		next.ServeHTTP(answer, r)
		// what the handler left unread was received all the same: digest all of it
		_, _ = io.Copy(io.Discard, io.LimitReader(body, maxUpload))
		if answer.status == 0 {
			answer.status = http.StatusOK
		}
		sent := answer.body.Bytes()
		if r.Method == http.MethodHead {
			sent = nil
		}
		sentSum := sha256.Sum256(sent)
		w.Header().Set(AnswerHeader, rc.fields(answer.status)+
			"; sent="+strconv.Itoa(len(sent))+":"+digest(sentSum[:])+key)
		if r.Method != http.MethodHead && answer.status != http.StatusNoContent && answer.status != http.StatusNotModified {
			w.Header().Set("Content-Length", strconv.Itoa(len(sent)))
		}
		w.WriteHeader(answer.status)
		if len(sent) > 0 {
			_, _ = w.Write(sent)
		}
	})
}
