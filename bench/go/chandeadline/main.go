// SPDX-License-Identifier: MIT
// chandeadline - the Go peer of bench/chandeadline.c: chanpingpong's round
// trips with a one-second timeout on each receive of the reply, written
// the two ways Go code writes it:
//
//	after  select { case v = <-pong: case <-time.After(time.Second): }
//	timer  t.Reset(time.Second); select { case v = <-pong: case <-t.C: }
//	       with t a time.Timer made once (stopped after each reply)
//
// n round trips each (default 1,000,000); figures ns_per_roundtrip_after
// and ns_per_roundtrip_timer.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

func fail(i, v int64) {
	fmt.Fprintf(os.Stderr, "chandeadline: sent %d, got back %d\n", i, v)
	os.Exit(1)
}

func main() {
	procs := flag.Int("procs", 0, "GOMAXPROCS for the run (default all CPUs)")
	n := flag.Int64("n", 1000000, "work size")
	flag.Parse()
	if flag.NArg() != 0 || *procs < 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "chandeadline: -procs must be >= 1, -n > 0, and no arguments")
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
		var v int64 = -1
		select {
		case v = <-pong:
		case <-time.After(time.Second):
		}
		if v != i {
			fail(i, v)
		}
	}
	after := time.Since(start)

	t := time.NewTimer(time.Second)
	if !t.Stop() {
		<-t.C
	}
	start = time.Now()
	for i := int64(0); i < *n; i++ {
		ping <- i
		var v int64 = -1
		t.Reset(time.Second)
		select {
		case v = <-pong:
			if !t.Stop() {
				<-t.C
			}
		case <-t.C:
		}
		if v != i {
			fail(i, v)
		}
	}
	timer := time.Since(start)
	close(ping)
	wg.Wait()

	p := runtime.GOMAXPROCS(0)
	fmt.Printf("RESULT name=chandeadline procs=%d metric=ns_per_roundtrip_after value=%.2f unit=ns\n",
		p, float64(after.Nanoseconds())/float64(*n))
	fmt.Printf("RESULT name=chandeadline procs=%d metric=ns_per_roundtrip_timer value=%.2f unit=ns\n",
		p, float64(timer.Nanoseconds())/float64(*n))
}
