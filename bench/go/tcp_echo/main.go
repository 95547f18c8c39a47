// SPDX-License-Identifier: MIT
// tcp_echo - Go peer of bench/tcp_echo.c: a TCP echo server, one goroutine
// per connection, and 50 client goroutines in the same process over
// loopback; each client sends 64 bytes and reads the 64-byte echo back,
// for -n seconds (default 5).  Figures: requests_per_s, latency_p99 (us).
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"
)

const clients = 50
const msgSize = 64

func main() {
	procs := flag.Int("procs", 2, "GOMAXPROCS for the run")
	n := flag.Int64("n", 5, "seconds to run")
	flag.Parse()
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	p := runtime.GOMAXPROCS(0)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcp_echo:", err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				fmt.Fprintln(os.Stderr, "tcp_echo: accept:", err)
				os.Exit(1)
			}
			go func(c net.Conn) {
				buf := make([]byte, 16384)
				for {
					k, err := c.Read(buf)
					if err != nil || k <= 0 {
						break
					}
					if _, err := c.Write(buf[:k]); err != nil {
						break
					}
				}
				c.Close()
			}(c)
		}
	}()

	addr := ln.Addr().String()
	lat := make([][]int64, clients)
	var wg sync.WaitGroup
	t0 := time.Now()
	deadline := t0.Add(time.Duration(*n) * time.Second)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, "tcp_echo: dial:", err)
				os.Exit(1)
			}
			msg := make([]byte, msgSize)
			for j := range msg {
				msg[j] = 'x'
			}
			back := make([]byte, msgSize)
			l := make([]int64, 0, 4096)
			for {
				s := time.Now()
				if !s.Before(deadline) {
					break
				}
				if _, err := c.Write(msg); err != nil {
					fmt.Fprintln(os.Stderr, "tcp_echo: write:", err)
					os.Exit(1)
				}
				if _, err := io.ReadFull(c, back); err != nil {
					fmt.Fprintln(os.Stderr, "tcp_echo: read:", err)
					os.Exit(1)
				}
				l = append(l, int64(time.Since(s)))
			}
			c.Close()
			lat[i] = l
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(t0)
	var all []int64
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		fmt.Fprintln(os.Stderr, "tcp_echo: no round trip completed")
		os.Exit(1)
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	idx := (len(all)*99+99)/100 - 1
	t := len(all)
	// The shape of the distribution, for the log (not a figure).
	fmt.Fprintf(os.Stderr, "tcp_echo: %d round trips; us: p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f\n",
		t, float64(all[t/2])/1e3, float64(all[t*9/10])/1e3, float64(all[idx])/1e3,
		float64(all[t*999/1000])/1e3, float64(all[t-1])/1e3)
	fmt.Printf("RESULT name=tcp_echo procs=%d metric=requests_per_s value=%.2f unit=req/s\n",
		p, float64(len(all))/elapsed.Seconds())
	fmt.Printf("RESULT name=tcp_echo procs=%d metric=latency_p99 value=%.2f unit=us\n",
		p, float64(all[idx])/1e3)
}
