package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// The request of a phase, built from the workload document exactly as the Gatling simulation
// builds it (gatling/src/test/java/gatebench/GenericSimulation.java): templates of text and
// parameter parts, the plan's value generators (values.go), bodies, and credentials read from
// environment variables (never from the document). A request is written straight into a
// worker's buffer as HTTP/1.1 bytes: nothing is allocated per request.

type part struct {
	Text   *string `json:"text"`
	Param  string  `json:"param"`
	As     string  `json:"as"`
	Secret string  `json:"secret"`
}

type authHeader struct {
	Header  string          `json:"header"`
	Prefix  string          `json:"prefix"`
	Env     json.RawMessage `json:"env"`
	PerUser bool            `json:"per_user"`
}

type bodyPart struct {
	Name        string          `json:"name"`
	Size        *int            `json:"size"`
	Filename    string          `json:"filename"`
	ContentType string          `json:"content_type"`
	Parts       json.RawMessage `json:"parts"`
}

type bodySpec struct {
	Kind        string          `json:"kind"`
	ContentType string          `json:"content_type"`
	RawParts    json.RawMessage `json:"parts"`
	Size        int             `json:"size"`
	Data        string          `json:"data"`
}

type requestSpec struct {
	Method    string              `json:"method"`
	BaseURL   string              `json:"base_url"`
	Path      []part              `json:"path"`
	Query     [][]json.RawMessage `json:"query"`
	Headers   [][]json.RawMessage `json:"headers"`
	Auth      []authHeader        `json:"auth"`
	Body      bodySpec            `json:"body"`
	Expect    []int               `json:"expect"`
	TimeoutMS int64               `json:"timeout_ms"`
}

// segment is literal bytes or a generator's value in an encoding.
type segment struct {
	literal []byte
	gen     *generator // nil: literal
	enc     encoding
}

// template is a string of literal text and parameter values.
type template []segment

func newTemplate(parts []part, gens map[string]*generator, secrets map[string]string) (template, error) {
	var t template
	for _, p := range parts {
		switch {
		case p.Param != "":
			g, ok := gens[p.Param]
			if !ok {
				return nil, fmt.Errorf("template names parameter %q, which has no generator", p.Param)
			}
			enc, err := encodingOf(p.As)
			if err != nil {
				return nil, err
			}
			t = append(t, segment{gen: g, enc: enc})
		case p.Secret != "":
			t = append(t, segment{literal: []byte(percentEncode(secrets[p.Secret]))})
		case p.Text != nil:
			t = append(t, segment{literal: []byte(*p.Text)})
		}
	}
	return t, nil
}

func (t template) appendTo(dst []byte, n int64) []byte {
	for _, s := range t {
		if s.gen == nil {
			dst = append(dst, s.literal...)
		} else {
			dst = s.gen.appendValue(dst, n, s.enc)
		}
	}
	return dst
}

// constant says whether the template reads the same for every request.
func (t template) constant() bool {
	for _, s := range t {
		if s.gen != nil && !s.gen.constant() {
			return false
		}
	}
	return true
}

type header struct {
	name  []byte
	value template
}

type perUserHeader struct {
	name   []byte
	prefix []byte
	tokens [][]byte
}

type multipartPart struct {
	head []byte   // the boundary line and the part's headers, up to the blank line
	data []byte   // a file part's generated content
	text template // a field's value
}

// builder writes the HTTP/1.1 requests of one phase.
type builder struct {
	address     string // host:port to dial
	requestLine []byte // "METHOD " + path prefix
	path        template
	query       []header // name=value pairs
	head        []byte   // " HTTP/1.1\r\nHost: ...\r\nUser-Agent: gatebench\r\n"
	headers     []header
	perUser     []perUserHeader
	userBase    int64
	userStride  int64
	bodyKind    string
	contentType []byte
	bodyText    template
	bodyBytes   []byte
	multipart   []multipartPart
	tail        []byte // multipart: the closing boundary
	bodyHint    bool   // send Content-Length: 0 on a bodiless POST, PUT or PATCH (as Go's client did)
	expect      map[int]bool
	expectText  string
	static      []byte       // every request the same: written once
	closing     bool         // a connection per request: "Connection: close"
	isHead      bool         // a HEAD: its response has no body
	answers     *answerCheck // nil: the phase's answers are not checked
}

func newBuilder(spec requestSpec, gens map[string]*generator, secrets map[string]string, tokens map[string][]string, userBase, userStride, seed int64, closing bool) (*builder, error) {
	method := strings.ToUpper(spec.Method)
	if method == "" || strings.ContainsAny(method, " \r\n") {
		return nil, fmt.Errorf("method %q is not an HTTP method", spec.Method)
	}
	base, err := url.Parse(strings.TrimRight(spec.BaseURL, "/"))
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("base_url %q is not an http URL", spec.BaseURL)
	}
	if base.Scheme != "http" {
		return nil, fmt.Errorf("base_url %q: gatebench-loadgen speaks plain HTTP/1.1 (http://) only", spec.BaseURL)
	}
	address := base.Host
	if base.Port() == "" {
		address += ":80"
	}
	b := &builder{
		address:     address,
		requestLine: []byte(method + " " + base.EscapedPath()),
		userBase:    userBase,
		userStride:  userStride,
		closing:     closing,
		isHead:      method == "HEAD",
	}
	if b.userStride == 0 {
		b.userStride = 1
	}
	if b.path, err = newTemplate(spec.Path, gens, secrets); err != nil {
		return nil, fmt.Errorf("path: %v", err)
	}
	for i, pair := range spec.Query {
		var name string
		var parts []part
		if len(pair) != 2 || json.Unmarshal(pair[0], &name) != nil || json.Unmarshal(pair[1], &parts) != nil {
			return nil, fmt.Errorf("query/%d: expected [name, parts]", i)
		}
		t, err := newTemplate(parts, gens, secrets)
		if err != nil {
			return nil, fmt.Errorf("query/%d: %v", i, err)
		}
		b.query = append(b.query, header{[]byte(name), t})
	}
	head := " HTTP/1.1\r\nHost: " + base.Host + "\r\nUser-Agent: gatebench\r\n"
	if closing {
		head += "Connection: close\r\n"
	}
	b.head = []byte(head)
	for i, pair := range spec.Headers {
		var name string
		var parts []part
		if len(pair) != 2 || json.Unmarshal(pair[0], &name) != nil || json.Unmarshal(pair[1], &parts) != nil {
			return nil, fmt.Errorf("headers/%d: expected [name, parts]", i)
		}
		if !validHeaderName(name) {
			return nil, fmt.Errorf("headers/%d: %q is not a header name", i, name)
		}
		t, err := newTemplate(parts, gens, secrets)
		if err != nil {
			return nil, fmt.Errorf("headers/%d: %v", i, err)
		}
		b.headers = append(b.headers, header{[]byte(name), t})
	}
	for i, h := range spec.Auth {
		if !validHeaderName(h.Header) {
			return nil, fmt.Errorf("auth/%d: %q is not a header name", i, h.Header)
		}
		if h.PerUser {
			var env string
			if json.Unmarshal(h.Env, &env) != nil {
				return nil, fmt.Errorf("auth/%d: a per-user header names one variable", i)
			}
			u := perUserHeader{name: []byte(h.Header), prefix: []byte(h.Prefix)}
			for _, token := range tokens[env] {
				u.tokens = append(u.tokens, []byte(token))
			}
			if len(u.tokens) == 0 {
				return nil, fmt.Errorf("auth/%d: no token for %s", i, env)
			}
			b.perUser = append(b.perUser, u)
			continue
		}
		value, err := secretValue(h, secrets)
		if err != nil {
			return nil, fmt.Errorf("auth/%d: %v", i, err)
		}
		if strings.ContainsAny(value, "\r\n") {
			return nil, fmt.Errorf("auth/%d: the credential of %s holds a line break", i, h.Header)
		}
		b.headers = append(b.headers, header{[]byte(h.Header), template{{literal: []byte(value)}}})
	}
	body := spec.Body
	b.bodyKind = body.Kind
	if b.bodyKind == "" {
		b.bodyKind = "none"
	}
	if body.ContentType != "" && b.bodyKind != "none" {
		b.contentType = []byte(body.ContentType)
	}
	switch b.bodyKind {
	case "none":
		b.bodyHint = method == "POST" || method == "PUT" || method == "PATCH"
	case "template":
		var parts []part
		if err := json.Unmarshal(body.RawParts, &parts); err != nil {
			return nil, fmt.Errorf("body/parts: %v", err)
		}
		if b.bodyText, err = newTemplate(parts, gens, secrets); err != nil {
			return nil, fmt.Errorf("body: %v", err)
		}
	case "bytes":
		b.bodyBytes = generated(body.Size)
	case "base64":
		data, err := base64.StdEncoding.DecodeString(body.Data)
		if err != nil {
			return nil, fmt.Errorf("body/data: %v", err)
		}
		b.bodyBytes = data
	case "multipart":
		var parts []bodyPart
		if err := json.Unmarshal(body.RawParts, &parts); err != nil {
			return nil, fmt.Errorf("body/parts: %v", err)
		}
		boundary := fmt.Sprintf("gatebench%x", uint64(seed))
		b.contentType = []byte("multipart/form-data; boundary=" + boundary)
		for i, p := range parts {
			disposition := fmt.Sprintf(`Content-Disposition: form-data; name="%s"`, formName(p.Name))
			if p.Size != nil {
				filename, contentType := p.Filename, p.ContentType
				if filename == "" {
					filename = p.Name + ".bin"
				}
				if contentType == "" {
					contentType = "application/octet-stream"
				}
				b.multipart = append(b.multipart, multipartPart{
					head: []byte(fmt.Sprintf("--%s\r\n%s; filename=\"%s\"\r\nContent-Type: %s\r\n\r\n",
						boundary, disposition, formName(filename), contentType)),
					data: generated(*p.Size),
				})
				continue
			}
			var textParts []part
			if err := json.Unmarshal(p.Parts, &textParts); err != nil {
				return nil, fmt.Errorf("body/parts/%d: %v", i, err)
			}
			t, err := newTemplate(textParts, gens, secrets)
			if err != nil {
				return nil, fmt.Errorf("body/parts/%d: %v", i, err)
			}
			if p.ContentType != "" {
				disposition += "\r\nContent-Type: " + p.ContentType
			}
			b.multipart = append(b.multipart, multipartPart{
				head: []byte(fmt.Sprintf("--%s\r\n%s\r\n\r\n", boundary, disposition)),
				text: t,
			})
		}
		b.tail = []byte("--" + boundary + "--\r\n")
	default:
		return nil, fmt.Errorf("unknown body kind %q", body.Kind)
	}
	if len(spec.Expect) > 0 {
		b.expect = map[int]bool{}
		texts := []string{}
		for _, code := range spec.Expect {
			b.expect[code] = true
			texts = append(texts, strconv.Itoa(code))
		}
		b.expectText = strings.Join(texts, ",")
	}
	if !b.varies() {
		b.static = b.build(nil, nil, 0)
	}
	return b, nil
}

// varies says whether two requests of the phase can differ.
func (b *builder) varies() bool {
	if !b.path.constant() || !b.bodyText.constant() || len(b.perUser) > 0 {
		return true
	}
	for _, q := range b.query {
		if !q.value.constant() {
			return true
		}
	}
	for _, h := range b.headers {
		if !h.value.constant() {
			return true
		}
	}
	for _, p := range b.multipart {
		if !p.text.constant() {
			return true
		}
	}
	return false
}

// request is the request of arrival n (numbered from 0 in the phase), written into dst
// (reset first); body is scratch space for a body that has to be measured before the head.
func (b *builder) request(dst, body []byte, n int64) []byte {
	if b.static != nil {
		return append(dst[:0], b.static...)
	}
	return b.build(dst[:0], body, n)
}

func (b *builder) build(dst, scratch []byte, n int64) []byte {
	dst = append(dst, b.requestLine...)
	dst = b.path.appendTo(dst, n)
	for i, q := range b.query {
		if i == 0 {
			dst = append(dst, '?')
		} else {
			dst = append(dst, '&')
		}
		dst = append(dst, q.name...)
		dst = append(dst, '=')
		dst = q.value.appendTo(dst, n)
	}
	dst = append(dst, b.head...)
	if b.answers != nil {
		dst = b.answers.appendHeaders(dst, n)
	}
	for _, h := range b.headers {
		dst = append(dst, h.name...)
		dst = append(dst, ": "...)
		mark := len(dst)
		dst = h.value.appendTo(dst, n)
		dst = headerSafe(dst, mark)
		dst = append(dst, "\r\n"...)
	}
	for _, h := range b.perUser {
		index := (b.userBase + n*b.userStride) % int64(len(h.tokens))
		if index < 0 {
			index += int64(len(h.tokens))
		}
		dst = append(dst, h.name...)
		dst = append(dst, ": "...)
		dst = append(dst, h.prefix...)
		dst = append(dst, h.tokens[index]...)
		dst = append(dst, "\r\n"...)
	}
	var body []byte
	switch b.bodyKind {
	case "none":
		if b.bodyHint {
			dst = append(dst, "Content-Length: 0\r\n"...)
		}
		return append(dst, "\r\n"...)
	case "template":
		body = b.bodyText.appendTo(scratch[:0], n)
	case "bytes", "base64":
		body = b.bodyBytes
	case "multipart":
		body = scratch[:0]
		for _, p := range b.multipart {
			body = append(body, p.head...)
			if p.data != nil {
				body = append(body, p.data...)
			} else {
				body = p.text.appendTo(body, n)
			}
			body = append(body, "\r\n"...)
		}
		body = append(body, b.tail...)
	}
	if b.contentType != nil {
		dst = append(dst, "Content-Type: "...)
		dst = append(dst, b.contentType...)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}

// headerSafe replaces a line break inside a header value (from a generated value) by a
// space: it would end the header and start another.
func headerSafe(dst []byte, from int) []byte {
	for i := from; i < len(dst); i++ {
		if dst[i] == '\r' || dst[i] == '\n' {
			dst[i] = ' '
		}
	}
	return dst
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// verdict says whether a status is OK for the workload (its expect list, else below 400),
// and the KO message in the simulation's words.
func (b *builder) verdict(status int) (bool, string) {
	if b.expect != nil {
		if b.expect[status] {
			return true, ""
		}
		return false, fmt.Sprintf("status.find.in(%s), found %d", b.expectText, status)
	}
	if status < 400 {
		return true, ""
	}
	return false, fmt.Sprintf("status.find.lt(400), found %d", status)
}

// generatedCache is deterministic filler content (not all zeros, so compression cannot
// cheat), the simulation's xorshift sequence, one shared slice per size.
var generatedCache = map[int][]byte{}

func generated(size int) []byte {
	if b, ok := generatedCache[size]; ok {
		return b
	}
	b := make([]byte, size)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	generatedCache[size] = b
	return b
}

// secretValue is an auth header's value: its prefix and the variable's value (Basic:
// base64 of user:password from two variables).
func secretValue(h authHeader, secrets map[string]string) (string, error) {
	var names []string
	if err := json.Unmarshal(h.Env, &names); err != nil {
		var one string
		if err := json.Unmarshal(h.Env, &one); err != nil {
			return "", fmt.Errorf("auth %s: env must be a name or a list of two", h.Header)
		}
		return h.Prefix + secrets[one], nil
	}
	if len(names) != 2 {
		return "", fmt.Errorf("auth %s: Basic needs two variables", h.Header)
	}
	pair := secrets[names[0]] + ":" + secrets[names[1]]
	return h.Prefix + base64.StdEncoding.EncodeToString([]byte(pair)), nil
}

// userTokens reads a per-user token file: one token a line.
func userTokens(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if line != "" {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no token", path)
	}
	return out, nil
}

func formName(text string) string {
	r := strings.NewReplacer("\r", "%0D", "\n", "%0A", "\"", "%22")
	return r.Replace(text)
}
