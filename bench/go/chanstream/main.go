// SPDX-License-Identifier: MIT
// chanstream - the Go peer of bench/chanstream.c: one producer and one
// consumer on a buffered channel.
//
// Main makes a channel of int64 with 1024 buffered slots and starts a producer
// that sends 0, 1, ..., n-1 (default 10,000,000) and closes the channel. Main
// is the consumer: it receives until the channel is closed and drained,
// summing the values, and checks the count and the sum (n * (n-1) / 2). The
// figure is the wall time from starting the producer to seeing the channel
// closed, divided by n: ns_per_item.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

// triangle returns 0 + 1 + ... + (n-1), modulo 2^64 as the running sum wraps.
func triangle(n int64) uint64 {
	u := uint64(n)
	if u%2 == 0 {
		return u / 2 * (u - 1)
	}
	return (u - 1) / 2 * u
}

func main() {
	procs := flag.Int("procs", 0, "GOMAXPROCS for the run (default all CPUs)")
	n := flag.Int64("n", 10000000, "work size")
	flag.Parse()
	if flag.NArg() != 0 || *procs < 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "chanstream: -procs must be >= 1, -n > 0, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}

	ch := make(chan int64, 1024)
	var wg sync.WaitGroup
	var count int64
	var sum uint64
	start := time.Now()
	wg.Add(1)
	go func() {
		for i := int64(0); i < *n; i++ {
			ch <- i
		}
		close(ch)
		wg.Done()
	}()
	for v := range ch {
		sum += uint64(v)
		count++
	}
	elapsed := time.Since(start)
	wg.Wait()
	if count != *n || sum != triangle(*n) {
		fmt.Fprintf(os.Stderr, "chanstream: received %d values summing to %d\n", count, sum)
		os.Exit(1)
	}

	fmt.Printf("RESULT name=chanstream procs=%d metric=ns_per_item value=%.2f unit=ns\n",
		runtime.GOMAXPROCS(0), float64(elapsed.Nanoseconds())/float64(*n))
}
