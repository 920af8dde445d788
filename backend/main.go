// Command gatebench-backend is the HTTP backend gatebench benchmarks gateways against.
//
// It must out-run the gateways in front of it, so it is a small Go server with no
// dependencies. Modes:
//
//	echo     answers every request with what it received: method, raw path, raw query,
//	         headers and a SHA-256 of the body (route replay compares these).
//	mock     answers every operation of a description with its status and example or
//	         synthesized body, from the JSON routes file -config (rendered by the core);
//	         optional fixed latency (held to within tens of µs: hold.go) and response
//	         size; accepts uploads up to 1 GiB.
//	auction  the AGE paper's stateful auction service (examples/auction).
//
// mock and auction also serve /__gatebench__/reset (POST: back to the initial state) and
// /__gatebench__/health, which the engine calls directly, never through a gateway.
//
// It serves until SIGTERM or SIGINT and prints one "listening on ADDR" line when ready.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (host:port)")
	mode := flag.String("mode", "echo", "echo, mock or auction")
	config := flag.String("config", "", "mock mode: the routes file (JSON)")
	instance := flag.String("instance", "", "a name sent in every answer's X-Gatebench-Instance header (which backend answered)")
	flag.Parse()

	var handler http.Handler
	switch *mode {
	case "echo":
		handler = echoHandler{}
	case "mock":
		if *config == "" {
			log.Fatal("mock mode needs -config FILE")
		}
		mock, err := loadMock(*config)
		if err != nil {
			log.Fatalf("mock config: %v", err)
		}
		handler = withControl(mock, "mock")
	case "auction":
		handler = withControl(newAuctionService(), "auction")
	default:
		log.Fatalf("unknown mode %q", *mode)
	}

	if *instance != "" {
		handler = withInstance(handler, *instance)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen %s: %v", *listen, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       120 * time.Second,
	}
	fmt.Printf("listening on %s mode %s\n", ln.Addr(), *mode)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

// withInstance names the backend in every answer, so that a client behind a gateway sees
// which of two backends the gateway forwarded to (a change of upstream under load).
func withInstance(next http.Handler, name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Gatebench-Instance", name)
		next.ServeHTTP(w, r)
	})
}
