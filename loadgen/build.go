package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// builder makes the HTTP requests of one phase from generator values.
type builder struct {
	method      string
	base        string
	path        template
	queryNames  []string
	queryValues []template
	headers     []headerTemplate
	fixed       [][2]string // auth headers that do not depend on the user
	perUser     []perUserHeader
	userBase    int64
	userStride  int64
	bodyKind    string
	contentType string
	bodyText    template
	bodyBytes   []byte
	multipart   []multipartPart
	boundary    string
	expect      map[int]bool
	expectText  string
}

type headerTemplate struct {
	name  string
	value template
}

type perUserHeader struct {
	name   string
	prefix string
	tokens []string
}

type multipartPart struct {
	name        string
	filename    string
	contentType string
	data        []byte // a file part's generated content
	text        *template
}

func newBuilder(spec requestSpec, names map[string]int, secrets map[string]string, tokens map[string][]string, userBase, userStride, seed int64) (*builder, error) {
	b := &builder{method: strings.ToUpper(spec.Method), base: strings.TrimRight(spec.BaseURL, "/"), userBase: userBase, userStride: userStride}
	if b.userStride == 0 {
		b.userStride = 1
	}
	if _, err := url.Parse(b.base); err != nil || !strings.HasPrefix(b.base, "http://") && !strings.HasPrefix(b.base, "https://") {
		return nil, fmt.Errorf("base_url %q is not an http(s) URL", spec.BaseURL)
	}
	var err error
	if b.path, err = newTemplate(spec.Path, names, secrets); err != nil {
		return nil, fmt.Errorf("path: %v", err)
	}
	for i, pair := range spec.Query {
		if len(pair) != 2 {
			return nil, fmt.Errorf("query/%d: expected [name, parts]", i)
		}
		var name string
		var parts []part
		if json.Unmarshal(pair[0], &name) != nil || json.Unmarshal(pair[1], &parts) != nil {
			return nil, fmt.Errorf("query/%d: expected [name, parts]", i)
		}
		t, err := newTemplate(parts, names, secrets)
		if err != nil {
			return nil, fmt.Errorf("query/%d: %v", i, err)
		}
		b.queryNames = append(b.queryNames, name)
		b.queryValues = append(b.queryValues, t)
	}
	for i, pair := range spec.Headers {
		var name string
		var parts []part
		if len(pair) != 2 || json.Unmarshal(pair[0], &name) != nil || json.Unmarshal(pair[1], &parts) != nil {
			return nil, fmt.Errorf("headers/%d: expected [name, parts]", i)
		}
		t, err := newTemplate(parts, names, secrets)
		if err != nil {
			return nil, fmt.Errorf("headers/%d: %v", i, err)
		}
		b.headers = append(b.headers, headerTemplate{name, t})
	}
	for i, h := range spec.Auth {
		if h.PerUser {
			var env string
			if json.Unmarshal(h.Env, &env) != nil {
				return nil, fmt.Errorf("auth/%d: a per-user header names one variable", i)
			}
			b.perUser = append(b.perUser, perUserHeader{h.Header, h.Prefix, tokens[env]})
			continue
		}
		value, err := secretValue(h, secrets)
		if err != nil {
			return nil, fmt.Errorf("auth/%d: %v", i, err)
		}
		b.fixed = append(b.fixed, [2]string{h.Header, value})
	}
	body := spec.Body
	b.bodyKind = body.Kind
	if b.bodyKind == "" {
		b.bodyKind = "none"
	}
	b.contentType = body.ContentType
	switch b.bodyKind {
	case "none":
	case "template":
		var parts []part
		if err := json.Unmarshal(body.RawParts, &parts); err != nil {
			return nil, fmt.Errorf("body/parts: %v", err)
		}
		if b.bodyText, err = newTemplate(parts, names, secrets); err != nil {
			return nil, fmt.Errorf("body: %v", err)
		}
	case "bytes":
		b.bodyBytes = generated(body.Size)
	case "base64":
		data, err := decodeBase64(body.Data)
		if err != nil {
			return nil, fmt.Errorf("body/data: %v", err)
		}
		b.bodyBytes = data
	case "multipart":
		var parts []bodyPart
		if err := json.Unmarshal(body.RawParts, &parts); err != nil {
			return nil, fmt.Errorf("body/parts: %v", err)
		}
		b.boundary = fmt.Sprintf("gatebench%x", uint64(seed))
		for i, p := range parts {
			mp := multipartPart{name: p.Name}
			if p.Size != nil {
				mp.data = generated(*p.Size)
				mp.filename = p.Filename
				if mp.filename == "" {
					mp.filename = p.Name + ".bin"
				}
				mp.contentType = p.ContentType
				if mp.contentType == "" {
					mp.contentType = "application/octet-stream"
				}
			} else {
				t, err := newTemplate(p.Parts, names, secrets)
				if err != nil {
					return nil, fmt.Errorf("body/parts/%d: %v", i, err)
				}
				mp.text = &t
			}
			b.multipart = append(b.multipart, mp)
		}
	default:
		return nil, fmt.Errorf("unknown body kind %q", body.Kind)
	}
	if len(spec.Expect) > 0 {
		b.expect = map[int]bool{}
		texts := []string{}
		for _, code := range spec.Expect {
			b.expect[code] = true
			texts = append(texts, fmt.Sprint(code))
		}
		b.expectText = strings.Join(texts, ",")
	}
	return b, nil
}

// request builds the request of arrival “user“ (numbered from 0 in the phase) with its
// generator values.
func (b *builder) request(vals []any, user int64) (*http.Request, error) {
	var u strings.Builder
	u.WriteString(b.base)
	b.path.render(&u, vals)
	for i, name := range b.queryNames {
		if i == 0 {
			u.WriteByte('?')
		} else {
			u.WriteByte('&')
		}
		u.WriteString(name)
		u.WriteByte('=')
		b.queryValues[i].render(&u, vals)
	}
	var body io.Reader
	var length int64 = -1
	contentType := b.contentType
	switch b.bodyKind {
	case "template":
		text := b.bodyText.String(vals)
		body, length = strings.NewReader(text), int64(len(text))
	case "bytes", "base64":
		body, length = bytes.NewReader(b.bodyBytes), int64(len(b.bodyBytes))
	case "multipart":
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		_ = w.SetBoundary(b.boundary)
		for _, p := range b.multipart {
			h := textproto.MIMEHeader{}
			if p.text != nil {
				h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"`, formName(p.name)))
				part, _ := w.CreatePart(h)
				_, _ = io.WriteString(part, p.text.String(vals))
				continue
			}
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, formName(p.name), formName(p.filename)))
			h.Set("Content-Type", p.contentType)
			part, _ := w.CreatePart(h)
			_, _ = part.Write(p.data)
		}
		_ = w.Close()
		body, length = bytes.NewReader(buf.Bytes()), int64(buf.Len())
		contentType = w.FormDataContentType()
	}
	req, err := http.NewRequest(b.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if length >= 0 {
		req.ContentLength = length
	}
	req.Header.Set("User-Agent", "gatebench")
	for _, h := range b.headers {
		req.Header.Set(h.name, h.value.String(vals))
	}
	for _, h := range b.fixed {
		req.Header.Set(h[0], h[1])
	}
	for _, h := range b.perUser {
		index := (b.userBase + user*b.userStride) % int64(len(h.tokens))
		req.Header.Set(h.name, h.prefix+h.tokens[index])
	}
	if contentType != "" && b.bodyKind != "none" {
		req.Header.Set("Content-Type", contentType)
	}
	return req, nil
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
