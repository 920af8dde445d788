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
// Every mode also serves /__gatebench__/reset (POST: back to the initial state; the request
// count only, in echo mode), /__gatebench__/health, /__gatebench__/stats and
// /__gatebench__/requests (its own timeline of every request: record.go), which the engine
// and the gateways' health checks call directly, never through a gateway's routes.
//
// Every answer to a request that names itself in X-Gatebench-Request is signed: the header
// X-Gatebench-Answer carries its identity, what the backend received and a digest of the body it
// sent, so an engine can check each answer under load (sign.go).
//
// A replica of a pool is started with -replica N: every answer carries the header
// X-Gatebench-Replica: N, and its stats count what it alone served. With -tls-listen (and
// -tls-cert, -tls-key) the same handler is also served over TLS on a second address: the
// baseline of a TLS plan, with the run's certificate, TLS 1.2 minimum, the same TLS 1.2
// cipher suites as the gateways, ALPN h2 only with -tls-h2, no session tickets with
// -tls-tickets=false. With -instance NAME every answer carries X-Gatebench-Instance: NAME,
// so a client behind a gateway sees which of two backends answered (a change of upstream).
//
// It serves until SIGTERM or SIGINT and prints one "listening on ADDR" line when ready (and
// one "listening on ADDR tls" line for the TLS address).
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// tls12Ciphers are gatebench.core.tls.TLS12_CIPHERS: the TLS 1.2 suites every gateway offers.
var tls12Ciphers = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// withReplica marks every answer with the replica's number.
func withReplica(h http.Handler, replica int) http.Handler {
	if replica <= 0 {
		return h
	}
	value := strconv.Itoa(replica)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Gatebench-Replica", value)
		h.ServeHTTP(w, r)
	})
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (host:port)")
	mode := flag.String("mode", "echo", "echo, mock or auction")
	config := flag.String("config", "", "mock mode: the routes file (JSON)")
	instance := flag.String("instance", "", "a name sent in every answer's X-Gatebench-Instance header (which backend answered)")
	replica := flag.Int("replica", 0, "this replica's number in a pool (1..N); 0: not a pool")
	tlsListen := flag.String("tls-listen", "", "also serve over TLS on this address (host:port)")
	tlsCert := flag.String("tls-cert", "", "with -tls-listen: the certificate chain (PEM)")
	tlsKey := flag.String("tls-key", "", "with -tls-listen: the private key (PEM)")
	tlsH2 := flag.Bool("tls-h2", false, "with -tls-listen: offer HTTP/2 by ALPN")
	tlsTickets := flag.Bool("tls-tickets", true, "with -tls-listen: issue session tickets")
	flag.Parse()

	var handler http.Handler
	switch *mode {
	case "echo":
		handler = withControl(echoHandler{}, "echo")
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

	handler = withReplica(handler, *replica)
	if *instance != "" {
		handler = withInstance(handler, *instance)
	}
	handler = withSignature(handler)
	handler = withRecord(handler, *mode == "mock")

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen %s: %v", *listen, err)
	}
	srv := newServer(handler)
	servers := []*http.Server{srv}
	var tlsSrv *http.Server
	var tlsLn net.Listener
	if *tlsListen != "" {
		tlsSrv, tlsLn = listenTLS(handler, *tlsListen, *tlsCert, *tlsKey, *tlsH2, *tlsTickets)
		servers = append(servers, tlsSrv)
	}
	fmt.Printf("listening on %s mode %s\n", ln.Addr(), *mode)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(ctx)
		}
	}()
	if tlsSrv != nil {
		fmt.Printf("listening on %s tls\n", tlsLn.Addr())
		go func() {
			if err := tlsSrv.ServeTLS(tlsLn, "", ""); err != nil && err != http.ErrServerClosed {
				log.Fatal(err)
			}
		}()
	}
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

func newServer(handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       120 * time.Second,
		ConnContext:       withConnState,
	}
}

// listenTLS is the TLS server of -tls-listen, with the gateways' settings.
func listenTLS(handler http.Handler, addr, certFile, keyFile string, h2, tickets bool) (*http.Server, net.Listener) {
	if certFile == "" || keyFile == "" {
		log.Fatal("-tls-listen needs -tls-cert and -tls-key")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		log.Fatalf("tls: %v", err)
	}
	protos := []string{"http/1.1"}
	if h2 {
		protos = []string{"h2", "http/1.1"}
	}
	srv := newServer(handler)
	srv.TLSConfig = &tls.Config{
		Certificates:           []tls.Certificate{cert},
		MinVersion:             tls.VersionTLS12,
		CipherSuites:           tls12Ciphers,
		NextProtos:             protos,
		SessionTicketsDisabled: !tickets,
	}
	if !h2 {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("listen %s: %v", addr, err)
	}
	return srv, ln
}
