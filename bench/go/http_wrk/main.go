// SPDX-License-Identifier: MIT
// http_wrk - Go peer of examples/http.c for the http_wrk benchmark
// (bench/http_wrk.sh drives both with the same wrk command): a net/http
// server answering "Hello, World!" on / and /hello.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
)

func hello(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" && r.URL.Path != "/hello" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte("Hello, World!\n"))
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	procs := flag.Int("procs", 2, "GOMAXPROCS")
	flag.Parse()
	runtime.GOMAXPROCS(*procs)
	fmt.Printf("http_wrk: listening on %s (GOMAXPROCS %d)\n", *addr, runtime.GOMAXPROCS(0))
	if err := http.ListenAndServe(*addr, http.HandlerFunc(hello)); err != nil {
		fmt.Fprintln(os.Stderr, "http_wrk:", err)
		os.Exit(1)
	}
}
