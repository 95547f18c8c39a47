// SPDX-License-Identifier: MIT
// chanpingpong - the Go peer of bench/chanpingpong.c: round trips over two
// unbuffered channels between two goroutines.
//
// Main makes two unbuffered channels of int64, ping and pong, and starts a
// ponger that receives each value from ping and sends it back on pong until
// ping is closed. Main then does, n times (default 1,000,000):
// ping <- i; v := <-pong, checking that v == i. The figure is the wall time of
// the n round trips divided by n: ns_per_roundtrip. Closing ping and waiting
// for the ponger come after the clock stops.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

func main() {
	procs := flag.Int("procs", 0, "GOMAXPROCS for the run (default all CPUs)")
	n := flag.Int64("n", 1000000, "work size")
	flag.Parse()
	if flag.NArg() != 0 || *procs < 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "chanpingpong: -procs must be >= 1, -n > 0, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}

	ping := make(chan int64)
	pong := make(chan int64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		for v := range ping {
			pong <- v
		}
		wg.Done()
	}()
	start := time.Now()
	for i := int64(0); i < *n; i++ {
		ping <- i
		if v := <-pong; v != i {
			fmt.Fprintf(os.Stderr, "chanpingpong: sent %d, got back %d\n", i, v)
			os.Exit(1)
		}
	}
	elapsed := time.Since(start)
	close(ping)
	wg.Wait()

	fmt.Printf("RESULT name=chanpingpong procs=%d metric=ns_per_roundtrip value=%.2f unit=ns\n",
		runtime.GOMAXPROCS(0), float64(elapsed.Nanoseconds())/float64(*n))
}
