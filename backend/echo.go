package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
)

// echoHandler answers with what the request carried, exactly as received: the path is the
// raw request target (never cleaned or decoded), headers are lower-cased with every value.
type echoHandler struct{}

// Reset has nothing to restore: echo keeps no state (the request count is reset by the
// control wrapper).
func (echoHandler) Reset() {}

type echoReply struct {
	// the backend's signature for a signed request, first (sign.go, bodyCopy)
	Signature  string              `json:"signature,omitempty"`
	Method     string              `json:"method"`
	Path       string              `json:"path"`
	Query      string              `json:"query"`
	Host       string              `json:"host"`
	Headers    map[string][]string `json:"headers"`
	BodySHA256 string              `json:"body_sha256"`
	BodyLength int64               `json:"body_length"`
}

func (echoHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.RequestURI
	path, query := target, ""
	if i := strings.IndexByte(target, '?'); i >= 0 {
		path, query = target[:i], target[i+1:]
	}
	hash := sha256.New()
	n, err := io.Copy(hash, r.Body)
	if err != nil {
		http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	headers := make(map[string][]string, len(r.Header))
	for name, values := range r.Header {
		headers[strings.ToLower(name)] = append([]string(nil), values...)
	}
	if r.TransferEncoding != nil {
		headers["transfer-encoding"] = append([]string(nil), r.TransferEncoding...)
	}
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	sort.Strings(names)
	reply := echoReply{
		Method:     r.Method,
		Path:       path,
		Query:      query,
		Host:       r.Host,
		Headers:    headers,
		BodySHA256: hex.EncodeToString(hash.Sum(nil)),
		BodyLength: n,
		Signature:  bodyCopy(r, http.StatusOK),
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Gatebench-Backend", "echo")
	_ = json.NewEncoder(w).Encode(reply)
}
