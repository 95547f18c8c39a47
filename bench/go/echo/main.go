// SPDX-License-Identifier: MIT
// echo - Go peer of examples/echo.c for bench/load.sh: a TCP echo server,
// one goroutine per connection, writing back whatever each client sends
// (net.Listen, a 16 KiB read buffer, TCP_NODELAY as the net package sets
// it on every TCP connection).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"
)

func serve(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 16384)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7007", "listen address")
	procs := flag.Int("procs", 2, "GOMAXPROCS")
	flag.Parse()
	runtime.GOMAXPROCS(*procs)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	fmt.Printf("echo: listening on %s (GOMAXPROCS %d)\n", ln.Addr(), runtime.GOMAXPROCS(0))
	for {
		c, err := ln.Accept()
		if err != nil {
			// Out of descriptors, say: wait for connections to close,
			// as examples/server.c does, instead of spinning.
			fmt.Fprintln(os.Stderr, "echo: accept:", err)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		go serve(c)
	}
}
