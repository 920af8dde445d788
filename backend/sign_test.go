package main

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func fields(t *testing.T, answer string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, part := range strings.Split(answer, "; ") {
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			t.Fatalf("not key=value: %q in %q", part, answer)
		}
		out[key] = value
	}
	return out
}

func sum8(text string) string {
	s := sha256.Sum256([]byte(text))
	return digest(s[:])
}

func TestSignatureNamesWhatWasReceivedAndSent(t *testing.T) {
	seen.reset()
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 3) // reads part of the body only: the rest is digested all the same
		_, _ = io.ReadFull(r.Body, buf)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":`))
		_, _ = w.Write([]byte(`7}`))
	})
	server := httptest.NewServer(withSignature(inner))
	defer server.Close()
	send := func() *http.Response {
		req, _ := http.NewRequest("POST", server.URL+"/items/a%2Fb?x=1&y", strings.NewReader("hello world"))
		req.Header.Set(RequestHeader, "p0001.ab.7")
		req.Header.Set(SignedHeaders, "X-Tenant, x-missing")
		req.Header.Set("X-Tenant", "acme")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := send()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != `{"id":7}` || resp.StatusCode != 201 || resp.ContentLength != 8 {
		t.Fatalf("answer changed: %d %q (length %d)", resp.StatusCode, body, resp.ContentLength)
	}
	got := fields(t, resp.Header.Get(AnswerHeader))
	want := map[string]string{
		"id":            "p0001.ab.7",
		"status":        "201",
		"seen":          "1",
		"received":      sum8("POST /items/a%2Fb?x=1&y\nx-tenant: acme\nx-missing:\n"),
		"received-body": "11:" + sum8("hello world"),
		"sent":          "8:" + sum8(`{"id":7}`),
	}
	for key, value := range want {
		if got[key] != value {
			t.Errorf("%s: want %q, got %q", key, value, got[key])
		}
	}
	resp = send()
	resp.Body.Close()
	if again := fields(t, resp.Header.Get(AnswerHeader))["seen"]; again != "2" {
		t.Errorf("a request received twice must say seen=2, got %q", again)
	}
}

func TestUnnamedRequestsAndControlsStayUnsigned(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("x")) })
	h := withSignature(inner)
	for _, target := range []string{"/plain", ControlPrefix + "health"} {
		req := httptest.NewRequest("GET", target, nil)
		if strings.HasPrefix(target, ControlPrefix) {
			req.Header.Set(RequestHeader, "p1.1")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Header().Get(AnswerHeader) != "" || rec.Body.String() != "x" {
			t.Errorf("%s: signed or changed: %v %q", target, rec.Header(), rec.Body.String())
		}
	}
}

func TestABadIdentityIsRefusedWithItsReason(t *testing.T) {
	h := withSignature(http.NotFoundHandler())
	for _, id := range []string{"a;b", "a b", strings.Repeat("x", 129), "a=b"} {
		req := httptest.NewRequest("GET", "/x", nil)
		req.Header.Set(RequestHeader, id)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), RequestHeader) {
			t.Errorf("%q: want 400 naming the header, got %d %q", id, rec.Code, rec.Body.String())
		}
	}
}

func TestAHeadOrAnEmptyAnswerIsSignedWithAnEmptyBody(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/none" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, _ = w.Write([]byte("a body a HEAD never carries"))
	})
	server := httptest.NewServer(withSignature(inner))
	defer server.Close()
	for _, tc := range []struct{ method, path, status string }{
		{"HEAD", "/some", "200"},
		{"GET", "/none", "204"},
	} {
		req, _ := http.NewRequest(tc.method, server.URL+tc.path, nil)
		req.Header.Set(RequestHeader, "p2."+tc.method)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := fields(t, resp.Header.Get(AnswerHeader))
		if len(body) != 0 || got["status"] != tc.status || got["sent"] != "0:"+sum8("") {
			t.Errorf("%s %s: body %q, signature %v", tc.method, tc.path, body, got)
		}
	}
}

func TestCacheKeyNamesThePartsACacheKeysOn(t *testing.T) {
	seen.reset()
	server := httptest.NewServer(withSignature(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})))
	defer server.Close()
	sent := 0
	answer := func(target, parts string) map[string]string {
		sent++
		req, _ := http.NewRequest("GET", server.URL+target, nil)
		req.Header.Set(RequestHeader, "p0001.ab."+strconv.Itoa(sent))
		req.Header.Set("X-Tenant", "acme")
		if parts != "" {
			req.Header.Set(CacheKeyHeader, parts)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return fields(t, resp.Header.Get(AnswerHeader))
	}
	cases := []struct{ target, parts, text string }{
		{"/items/1?x=1", "path, query", "GET /items/1?x=1\n"},
		{"/items/2?x=1", "path", "GET /items/2\n"},
		{"/items/3", "path,query,header:X-Tenant,header:x-missing", "GET /items/3\nx-tenant: acme\nx-missing:\n"},
	}
	for _, c := range cases {
		if got := answer(c.target, c.parts)["key"]; got != sum8(c.text) {
			t.Errorf("%s keyed on %q: want the digest of %q, got %q", c.target, c.parts, c.text, got)
		}
	}
	if got, ok := answer("/items/4", "")["key"]; ok {
		t.Errorf("a request that names no cache key got key=%q", got)
	}
}

func TestEchoCopiesTheSignatureIntoItsBodyFirst(t *testing.T) {
	seen.reset()
	server := httptest.NewServer(withSignature(echoHandler{}))
	defer server.Close()
	send := func(id string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", server.URL+"/items?x=1", strings.NewReader("hello"))
		if id != "" {
			req.Header.Set(RequestHeader, id)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}
	resp, body := send("p3.ab.1")
	header := resp.Header.Get(AnswerHeader)
	own, _, found := strings.Cut(header, "; sent=")
	if !found {
		t.Fatalf("no sent= in %q", header)
	}
	// the copy is the body's first member, every field of the header but the body's own
	if want := `{"signature":"` + own + `","method":"POST"`; !strings.HasPrefix(body, want) {
		t.Fatalf("body %q does not start with %q", body, want)
	}
	if got := fields(t, own); got["received-body"] != "5:"+sum8("hello") || got["seen"] != "1" {
		t.Errorf("the copy names another receipt: %v", got)
	}
	if got := fields(t, header)["sent"]; got != strconv.Itoa(len(body))+":"+sum8(body) {
		t.Errorf("the header's sent=%s is not the body carrying the copy (%d bytes)", got, len(body))
	}
	// an unsigned request gets echo's reply as before, without the member
	if _, body := send(""); strings.Contains(body, "signature") {
		t.Errorf("an unsigned request's echo carries a signature: %q", body)
	}
}
