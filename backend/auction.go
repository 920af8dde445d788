package main

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// auctionService is the AGE paper's BIWI service (examples/auction/openapi.yaml), kept in
// memory: auctions 1..100 are seeded; a bid is accepted only above the current highest bid
// (409 otherwise), so concurrent bids that arrive out of order produce the paper's bid
// errors. Any non-empty bearer token is accepted.
type auctionService struct {
	mu       sync.Mutex
	auctions map[int64]*auction
	nextID   int64
}

type auction struct {
	ID          int64    `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	HighestBid  float64  `json:"highestBid"`
	Images      []string `json:"images"`
}

const seededAuctions = 100

func newAuctionService() *auctionService {
	s := &auctionService{}
	s.Reset()
	return s
}

// Reset restores the seeded state: auctions 1..100 with no bid (highest bid 0).
func (s *auctionService) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auctions = make(map[int64]*auction, seededAuctions)
	for id := int64(1); id <= seededAuctions; id++ {
		s.auctions[id] = &auction{
			ID:     id,
			Title:  fmt.Sprintf("Auction %d", id),
			Images: []string{fmt.Sprintf("/images/%d/1.jpg", id)},
		}
	}
	s.nextID = seededAuctions + 1
}

func (s *auctionService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "Bearer ") || strings.TrimSpace(auth[len("Bearer "):]) == "" {
		_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxUpload))
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a bearer token is required"})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "auctions" && r.Method == http.MethodPost:
		s.create(w, r)
	case len(parts) == 2 && parts[0] == "auctions" && r.Method == http.MethodGet:
		s.get(w, parts[1])
	case len(parts) == 2 && parts[0] == "bid" && r.Method == http.MethodPost:
		s.bid(w, r, parts[1])
	default:
		_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxUpload))
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such route"})
	}
}

func (s *auctionService) create(w http.ResponseWriter, r *http.Request) {
	media, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || media != "multipart/form-data" {
		_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxUpload))
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "expected multipart/form-data"})
		return
	}
	reader, err := r.MultipartReader()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxUpload)
	var a auction
	imageBytes := int64(-1)
	for {
		part, err := reader.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "reading multipart: " + err.Error()})
			return
		}
		switch part.FormName() {
		case "image":
			imageBytes, err = io.Copy(io.Discard, part)
		case "title", "description", "minimumBid":
			var value []byte
			value, err = io.ReadAll(io.LimitReader(part, 64<<10))
			switch part.FormName() {
			case "title":
				a.Title = string(value)
			case "description":
				a.Description = string(value)
			case "minimumBid":
				a.HighestBid, _ = strconv.ParseFloat(strings.TrimSpace(string(value)), 64)
			}
		default:
			_, err = io.Copy(io.Discard, part)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "reading multipart: " + err.Error()})
			return
		}
	}
	if a.Title == "" || imageBytes < 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title and image are required"})
		return
	}
	s.mu.Lock()
	a.ID = s.nextID
	s.nextID++
	a.Images = []string{fmt.Sprintf("/images/%d/1.jpg", a.ID)}
	stored := a
	s.auctions[a.ID] = &stored
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, a)
}

func (s *auctionService) lookup(id string) (*auction, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, false
	}
	a, ok := s.auctions[n]
	return a, ok
}

func (s *auctionService) get(w http.ResponseWriter, id string) {
	s.mu.Lock()
	a, ok := s.lookup(id)
	var copied auction
	if ok {
		copied = *a
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no auction " + id})
		return
	}
	writeJSON(w, http.StatusOK, copied)
}

func (s *auctionService) bid(w http.ResponseWriter, r *http.Request, id string) {
	var body struct {
		Bid *float64 `json:"bid"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil || body.Bid == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `expected {"bid": <number>}`})
		return
	}
	s.mu.Lock()
	a, ok := s.lookup(id)
	if !ok {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no auction " + id})
		return
	}
	if *body.Bid <= a.HighestBid {
		highest := a.HighestBid
		s.mu.Unlock()
		writeJSON(w, http.StatusConflict, map[string]string{
			"error": fmt.Sprintf("bid %g is not above the highest bid %g", *body.Bid, highest),
		})
		return
	}
	a.HighestBid = *body.Bid
	copied := *a
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, copied)
}

func writeJSON(w http.ResponseWriter, status int, value any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Gatebench-Backend", "auction")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(value)
}
