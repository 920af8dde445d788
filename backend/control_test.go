package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// oneWorkerMock is a mock with one worker holding every answer for hold.
func oneWorkerMock(t *testing.T, hold time.Duration) *mockHandler {
	t.Helper()
	path := filepath.Join(t.TempDir(), "routes.json")
	config := `{"latency_ms": ` + strconv.FormatInt(hold.Milliseconds(), 10) + `, "workers": 1,
		"routes": [{"method": "GET", "path": "/x", "segments": [[{"text": "x"}]], "status": 200, "body": "ok"}]}`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	mock, err := loadMock(path)
	if err != nil {
		t.Fatal(err)
	}
	return mock
}

// A request that waits for a worker and whose client leaves is dropped, not held: the worker
// stays free for the next measurement. The reset answers only once the request still being
// held is released, so a measurement started after it never shares the backend with the one
// before.
func TestAResetWaitsForHeldRequestsAndWaitingOnesAreDroppedWhenTheirClientLeaves(t *testing.T) {
	const hold = 300 * time.Millisecond
	mock := oneWorkerMock(t, hold)
	server := httptest.NewServer(withControl(mock, "mock"))
	defer server.Close()

	started := time.Now()
	held := make(chan error, 1)
	go func() { // takes the one worker for 300 ms
		resp, err := http.Get(server.URL + "/x")
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	time.Sleep(50 * time.Millisecond)
	// waits for the worker, gives up after 50 ms
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", server.URL+"/x", nil)
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the waiting request should have timed out, got %v", err)
	}

	resp, err := http.Post(server.URL+ControlPrefix+"reset", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	answered := time.Since(started)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("reset answered %d", resp.StatusCode)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	// the reset waited for the held request (300 ms), not for the one that left (another 300)
	if answered < hold {
		t.Fatalf("the reset answered %v after the hold began, before its %v hold ended", answered, hold)
	}
	if answered >= 2*hold {
		t.Fatalf("the reset answered %v after the hold began: the request whose client left was held too", answered)
	}
	// the worker is free at once after the reset
	begin := time.Now()
	resp, err = http.Get(server.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(begin); took >= 2*hold {
		t.Fatalf("a request after the reset took %v: a dropped request still held the worker", took)
	}
}

func TestDrainGivesUpAfterItsLimitAndSaysHowManyAreLeft(t *testing.T) {
	var inFlight atomic.Int64
	inFlight.Add(2)
	begin := time.Now()
	if left := drain(&inFlight, 20*time.Millisecond); left != 2 {
		t.Fatalf("drain reported %d left, want 2", left)
	}
	if took := time.Since(begin); took < 20*time.Millisecond {
		t.Fatalf("drain gave up after %v, before its limit", took)
	}
	inFlight.Add(-2)
	if left := drain(&inFlight, time.Second); left != 0 {
		t.Fatalf("drain reported %d left with none in flight", left)
	}
}
