// Command gatebench-backend is the HTTP backend gatebench benchmarks gateways against.
//
// It must out-run the gateways in front of it, so it is a small Go server with no
// dependencies. Modes:
//
//	echo  answers every request with what it received: method, raw path, raw query,
//	      headers and a SHA-256 of the body (route replay compares these).
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
	mode := flag.String("mode", "echo", "echo")
	flag.Parse()

	var handler http.Handler
	switch *mode {
	case "echo":
		handler = echoHandler{}
	default:
		log.Fatalf("unknown mode %q", *mode)
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
