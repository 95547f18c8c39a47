// SPDX-License-Identifier: MIT
// threadring - the Go peer of bench/threadring.c: the Benchmarks Game
// thread-ring, 503 goroutines linked in a ring by unbuffered channels passing
// a token around.
//
// Goroutine k (1..503) receives the token from its channel; when the token is
// 0 it reports its k, otherwise it sends token - 1 to goroutine k+1 (503 to
// 1). Main starts the ring, sends n (default 10,000,000) to goroutine 1 and
// waits for the report, so the token makes n hops. The holder at the end must
// be n%503 + 1. The figure is the wall time from the first send to the
// report, divided by n: ns_per_hop. The row is procs=1, so -procs defaults to
// 1 here. Nothing but the RESULT line is printed.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

const ring = 503

func member(id int64, in <-chan int64, out chan<- int64, done chan<- int64) {
	for {
		token := <-in
		if token == 0 {
			done <- id
			return
		}
		out <- token - 1
	}
}

func main() {
	procs := flag.Int("procs", 1, "GOMAXPROCS for the run")
	n := flag.Int64("n", 10000000, "work size")
	flag.Parse()
	if flag.NArg() != 0 || *procs <= 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "threadring: -procs and -n must be > 0, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*procs)

	// links[k] carries the token into member k+1.
	var links [ring]chan int64
	for k := range links {
		links[k] = make(chan int64)
	}
	done := make(chan int64)
	for k := 0; k < ring; k++ {
		go member(int64(k+1), links[k], links[(k+1)%ring], done)
	}
	start := time.Now()
	links[0] <- *n
	holder := <-done
	elapsed := time.Since(start)
	if want := *n%ring + 1; holder != want {
		fmt.Fprintf(os.Stderr, "threadring: the token ended at %d, not %d\n", holder, want)
		os.Exit(1)
	}

	fmt.Printf("RESULT name=threadring procs=%d metric=ns_per_hop value=%.2f unit=ns\n",
		runtime.GOMAXPROCS(0), float64(elapsed.Nanoseconds())/float64(*n))
}
