package main

import (
	"crypto/sha256"
	"strings"
	"testing"
)

// signed is the backend's signature (backend/sign.go) of an answer to req, written here from
// its definition: the digest of "METHOD SP TARGET LF" and each signed header, the request
// body's and the answer body's lengths and digests.
func signed(t *testing.T, c *answerCheck, req []byte, status string, seen string, body []byte) []byte {
	t.Helper()
	s := parseSent(req)
	text := s.method + " " + s.target + "\n"
	for _, name := range c.signed {
		text += name + ":"
		if s.has(name) {
			text += " " + s.header(name)
		}
		text += "\n"
	}
	sum := sha256.Sum256([]byte(text))
	return []byte("id=" + s.id + "; status=" + status + "; seen=" + seen +
		"; received=" + digest8(sum[:]) + "; received-body=" + signature(s.body) +
		"; sent=" + signature(body))
}

// readBody is a body as the engine reads it.
func readBody(body []byte) *bodyHash {
	b := &bodyHash{keep: true}
	b.reset()
	b.write(body)
	return b
}

func TestTheCheckNamesEachKindOfWrongAnswer(t *testing.T) {
	c := newAnswerCheck(&answersSpec{Target: true, Headers: []string{"X-Tenant"}}, "p0003")
	request := func(n int64, tenant string) []byte {
		req := []byte("POST /items?key=secret HTTP/1.1\r\nHost: h\r\n")
		req = c.appendHeaders(req, n)
		if tenant != "" {
			req = append(req, "X-Tenant: "+tenant+"\r\n"...)
		}
		return append(req, "Content-Length: 5\r\n\r\nhello"...)
	}
	body := []byte(`{"id":1}`)
	right := request(7, "acme")
	if got := c.verdict(right, 201, true, signed(t, c, right, "201", "1", body), readBody(body)); got != "" {
		t.Fatalf("a right answer: %q", got)
	}
	cases := []struct {
		kind   string
		answer []byte
		status int
		read   []byte
	}{
		{"unsigned", nil, 201, body},
		{"crossed", signed(t, c, request(8, "acme"), "201", "1", body), 201, body},
		{"repeated", signed(t, c, right, "201", "2", body), 201, body},
		{"status", signed(t, c, right, "200", "1", body), 201, body},
		{"truncated", signed(t, c, right, "201", "1", body), 201, body[:4]},
		{"received", signed(t, c, request(7, ""), "201", "1", body), 201, body},
	}
	for _, tc := range cases {
		got := c.verdict(right, tc.status, true, tc.answer, readBody(tc.read))
		if !strings.HasPrefix(got, "wrong answer ("+tc.kind+")") {
			t.Errorf("%s: got %q", tc.kind, got)
		}
		if strings.Contains(got, "secret") {
			t.Errorf("%s: the query reached the evidence: %q", tc.kind, got)
		}
	}
	// an unsigned refusal is the gateway's error, not a wrong answer
	if got := c.verdict(right, 429, false, nil, readBody(nil)); got != "" {
		t.Errorf("an unsigned 429: %q", got)
	}
	// past the evidence kept, a wrong answer is named by its kind alone
	if got := c.verdict(right, 201, true, nil, readBody(nil)); got != "wrong answer (unsigned)" {
		t.Errorf("after %d with evidence: %q", evidenceKept, got)
	}
}

func TestACachedPhaseTakesTheAnswerOfARequestAlreadySent(t *testing.T) {
	c := newAnswerCheck(&answersSpec{Target: true, Cached: true}, "p0001")
	request := func(n int64) []byte {
		return append(c.appendHeaders([]byte("GET /items/1 HTTP/1.1\r\nHost: h\r\n"), n), "\r\n"...)
	}
	body := []byte("cached")
	earlier, now, later := request(3), request(5), request(9)
	if got := c.verdict(now, 200, true, signed(t, c, earlier, "200", "1", body), readBody(body)); got != "" {
		t.Errorf("an earlier request's answer from the cache: %q", got)
	}
	// Request 9 left before request 5 reached the gateway (users send side by side; an arrival
	// waits for a connection): the cache kept its answer, which is no wrong answer. Nginx's
	// cache gave request 1 and 2 of a phase the answer of request 3, and they were 'crossed'.
	if got := c.verdict(now, 200, true, signed(t, c, later, "200", "1", body), readBody(body)); got != "" {
		t.Errorf("a later-numbered request already sent, from the cache: %q", got)
	}
	// the signature of request 12, which the engine has not written yet
	unsent := []byte(strings.Replace(string(later), ".p0001.9\r\n", ".p0001.12\r\n", 1))
	if string(unsent) == string(later) {
		t.Fatalf("no request number in %q", later)
	}
	if got := c.verdict(now, 200, true, signed(t, c, unsent, "200", "1", body), readBody(body)); !strings.HasPrefix(got, "wrong answer (crossed)") {
		t.Errorf("the answer to a request not yet sent cannot come from a cache: %q", got)
	}
	other := newAnswerCheck(&answersSpec{}, "p0002")
	foreign := append(other.appendHeaders([]byte("GET /items/1 HTTP/1.1\r\nHost: h\r\n"), 1), "\r\n"...)
	if got := c.verdict(now, 200, true, signed(t, c, foreign, "200", "1", body), readBody(body)); !strings.HasPrefix(got, "wrong answer (crossed)") {
		t.Errorf("a later phase's answer: %q", got)
	}
	// The cache outlives a phase: the target's warm-up (p0000) or an earlier repetition filled
	// it, and every answer of the next phase named that request ('crossed' 800 times of 800).
	before := newAnswerCheck(&answersSpec{Target: true}, "p0000")
	warm := append(before.appendHeaders([]byte("GET /items/1 HTTP/1.1\r\nHost: h\r\n"), 7), "\r\n"...)
	if got := c.verdict(now, 200, true, signed(t, c, warm, "200", "1", body), readBody(body)); got != "" {
		t.Errorf("an earlier phase's answer from the cache: %q", got)
	}
	// Another load generator's (a tester beside this one, an earlier probe's process) reached
	// the same gateway: its cache may answer with it too.
	beside := []byte(strings.Replace(string(warm), runTag+".", "beside.", 1))
	if string(beside) == string(warm) {
		t.Fatalf("no run tag in %q", warm)
	}
	if got := c.verdict(now, 200, true, signed(t, c, beside, "200", "1", body), readBody(body)); got != "" {
		t.Errorf("another tester's answer from the cache: %q", got)
	}
	uncached := newAnswerCheck(&answersSpec{Target: true}, "p0001")
	mine := append(uncached.appendHeaders([]byte("GET /items/1 HTTP/1.1\r\nHost: h\r\n"), 5), "\r\n"...)
	if got := uncached.verdict(mine, 200, true, signed(t, uncached, warm, "200", "1", body), readBody(body)); !strings.HasPrefix(got, "wrong answer (crossed)") {
		t.Errorf("an earlier phase's answer where nothing is cached: %q", got)
	}
	if got := uncached.verdict(mine, 200, true, signed(t, uncached, beside, "200", "1", body), readBody(body)); !strings.HasPrefix(got, "wrong answer (crossed)") {
		t.Errorf("another tester's answer where nothing is cached: %q", got)
	}
	if got := c.verdict(now, 200, true, signed(t, c, earlier, "200", "1", body), readBody(body[:3])); !strings.HasPrefix(got, "wrong answer (truncated)") {
		t.Errorf("a cached answer is still held to its own body: %q", got)
	}
}

func TestACachedAnswerIsHeldToItsCacheKey(t *testing.T) {
	c := newAnswerCheck(&answersSpec{Target: true, Cached: true, Key: []string{"path", "header:X-Tenant"}}, "p0004")
	request := func(n int64, target, tenant string) []byte {
		req := c.appendHeaders([]byte("GET "+target+" HTTP/1.1\r\nHost: h\r\n"), n)
		return append(req, "X-Tenant: "+tenant+"\r\n\r\n"...)
	}
	if !strings.Contains(string(request(1, "/", "a")), cacheKeyHeader+": path,header:X-Tenant\r\n") {
		t.Fatalf("the request does not name the parts of its cache key: %q", request(1, "/", "a"))
	}
	body := []byte("cached")
	// the backend's key of what it received (backend/sign.go): the path, not the query, and
	// the tenant
	keyed := func(req []byte, key string) []byte {
		sum := sha256.Sum256([]byte(key))
		return append(signed(t, c, req, "200", "1", body), "; key="+digest8(sum[:])...)
	}
	now := request(5, "/items/1?page=2", "acme")
	cases := []struct {
		earlier []byte
		key     string
		wrong   bool
	}{
		{request(3, "/items/1?page=1", "acme"), "GET /items/1\nx-tenant: acme\n", false},
		{request(3, "/items/2?page=2", "acme"), "GET /items/2\nx-tenant: acme\n", true},
		{request(3, "/items/1?page=2", "other"), "GET /items/1\nx-tenant: other\n", true},
	}
	for _, tc := range cases {
		got := c.verdict(now, 200, true, keyed(tc.earlier, tc.key), readBody(body))
		if tc.wrong != strings.HasPrefix(got, "wrong answer (crossed)") || (tc.wrong && !strings.Contains(got, "expected an answer of its cache key")) {
			t.Errorf("the answer cached for %q: %q", tc.key, got)
		}
	}
	// an answer without the backend's key is not taken as one of this key
	if got := c.verdict(now, 200, true, signed(t, c, request(3, "/items/1", "acme"), "200", "1", body), readBody(body)); !strings.HasPrefix(got, "wrong answer (crossed)") {
		t.Errorf("a cached answer without a key: %q", got)
	}
}

func TestASampledPhaseNamesAndChecksOneRequestInN(t *testing.T) {
	c := newAnswerCheck(&answersSpec{Every: 3}, "p0004")
	named := 0
	for n := int64(0); n < 9; n++ {
		req := append(c.appendHeaders([]byte("GET /a HTTP/1.1\r\nHost: h\r\n"), n), "\r\n"...)
		s := parseSent(req)
		if s.id != "" {
			named++
			if n%3 != 0 {
				t.Errorf("arrival %d is not in the sample but named itself %q", n, s.id)
			}
		} else if got := c.verdict(req, 200, true, nil, readBody(nil)); got != "" {
			t.Errorf("arrival %d, left out of the sample, was judged: %q", n, got)
		}
	}
	if named != 3 {
		t.Errorf("named %d of 9, want 3", named)
	}
}

func TestABodyThatCopiesItsSignatureNamesWhoseAnswerItIs(t *testing.T) {
	c := newAnswerCheck(&answersSpec{Target: true, Body: true}, "p0005")
	request := func(n int64) []byte {
		return append(c.appendHeaders([]byte("GET /echo HTTP/1.1\r\nHost: h\r\n"), n), "\r\n"...)
	}
	// echo's body (backend/echo.go): the signature's fields but the body's own, first
	echo := func(req []byte) []byte {
		own, _, _ := strings.Cut(string(signed(t, c, req, "200", "1", nil)), "; sent=")
		return []byte(bodyCopyPrefix + own + `","method":"GET"}`)
	}
	header := func(req, body []byte) []byte {
		own, _, _ := strings.Cut(string(signed(t, c, req, "200", "1", nil)), "; sent=")
		return []byte(own + "; sent=" + signature(body))
	}
	mine, other := request(4), request(6)
	body := echo(mine)
	if got := c.verdict(mine, 200, true, header(mine, body), readBody(body)); got != "" {
		t.Fatalf("a right answer: %q", got)
	}
	cases := []struct {
		name, kind, words string
		answer, body      []byte
	}{
		{"the header dropped", "unsigned", "got its own body, no header", nil, body},
		{"crossed, the header dropped", "crossed", "expected its own answer; got the body of request " + parseSent(other).id + ", no header", nil, echo(other)},
		{"the head of one, the body of another", "crossed", "expected its own body; got the body of request", header(mine, echo(other)), echo(other)},
		{"no copy, no header", "unsigned", "status 200, none", nil, []byte(`{"method":"GET"}`)},
	}
	for _, tc := range cases {
		got := c.verdict(mine, 200, true, tc.answer, readBody(tc.body))
		if !strings.HasPrefix(got, "wrong answer ("+tc.kind+")") || !strings.Contains(got, tc.words) {
			t.Errorf("%s: got %q", tc.name, got)
		}
	}
	// a refusal with the backend's body is the backend's answer all the same
	if got := c.verdict(mine, 502, false, nil, readBody(body)); !strings.HasPrefix(got, "wrong answer (unsigned)") {
		t.Errorf("a 502 carrying the backend's body without its header: %q", got)
	}
	// where bodies carry no copy, a body that starts like one is not read as one
	plain := newAnswerCheck(&answersSpec{Target: true}, "p0005")
	if got := plain.verdict(mine, 502, false, nil, readBody(body)); got != "" {
		t.Errorf("a phase without copies read one: %q", got)
	}
}
